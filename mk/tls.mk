# TLS test set-up: the harness makes test certificates with the openssl command line tool
# (docs/TESTING.md §2.7). The TLS tests themselves run in test-rust (core/tests/tls.rs,
# core/tests/acl.rs, bindings/c/tests/c.rs) and in each language's own suite.
.PHONY: deps-tls test-tls
DEPS_TARGETS += deps-tls

deps-tls:
	@if ! command -v openssl >/dev/null 2>&1; then \
	  echo "installing openssl (apt-get)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openssl ca-certificates >/dev/null; \
	fi
	@openssl version

## test-tls: only the Rust TLS and ACL tests (they also run in test-rust), with their wall time.
test-tls: harness
	@start=$$(date +%s.%N); \
	$(CARGO) test --locked -p quorumlock --test tls --test acl; rc=$$?; \
	awk -v s=$$start -v e=$$(date +%s.%N) 'BEGIN { printf "test-tls: %.1f s\n", e - s }'; exit $$rc
