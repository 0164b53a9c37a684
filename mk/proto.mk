# The protocol crate (proto/, quorumlock-proto): its unit tests run in `cargo test --workspace`;
# this target checks that it stays free of I/O: it builds for wasm32-unknown-unknown and its
# dependency tree has no runtime, client or socket crate.
.PHONY: test-proto-wasm
TEST_TARGETS += test-proto-wasm

test-proto-wasm:
	@rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown || \
	  rustup target add wasm32-unknown-unknown
	$(CARGO) build --locked -p quorumlock-proto --target wasm32-unknown-unknown
	@deps=$$($(CARGO) tree --locked -p quorumlock-proto -e normal --prefix none); \
	if echo "$$deps" | grep -Ew '^(tokio|mio|redis|socket2)' ; then \
	  echo "quorumlock-proto must not depend on the crates above"; exit 1; fi; \
	echo "quorumlock-proto: no tokio, mio, redis or socket2 in its dependency tree"
