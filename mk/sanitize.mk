# The C and C++ test programs (bindings/c/tests/c) built with clang under AddressSanitizer,
# UndefinedBehaviorSanitizer and LeakSanitizer, against the debug libquorumlock that
# `make test-rust` built, on real nodes (docs/TESTING.md §7). Any report fails the run.
.PHONY: deps-sanitize test-c-sanitize

DEPS_TARGETS += deps-sanitize
TEST_TARGETS += test-c-sanitize

SAN_CC ?= clang
SAN_CXX ?= clang++
SAN_FLAGS := -g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
	-pthread -Wall -Wextra -Werror -Iinclude
# The programs and their modes, per kind of node (see bindings/c/tests/c.rs for what each checks).
SAN_DURABLE := basic.c:lock basic.c:busy threads.c bad_input.c fence.c:tokens metrics.c:counts \
	metrics.c:bad compat.c:value compat.c:byvalue raii.cpp metrics.cpp
SAN_VOLATILE := fence.c:quarantine compat.c:warnings
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/bindings/c/tests/lsan.supp:print_suppressions=0

# clang and its sanitizer runtimes (Debian: clang, libclang-rt-<version>-dev).
deps-sanitize:
	@if ! command -v $(SAN_CC) >/dev/null 2>&1 || \
	    ! echo 'int main(void){return 0;}' | $(SAN_CC) -x c -fsanitize=address,undefined -o /dev/null - >/dev/null 2>&1; then \
	  echo "installing clang and its sanitizer runtimes (apt-get)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq clang >/dev/null; \
	  v=$$($(SAN_CC) --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n1); \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq "libclang-rt-$$v-dev" >/dev/null 2>&1 || true; \
	fi

## test-c-sanitize: the C/C++ test programs under ASan + UBSan + LeakSanitizer.
test-c-sanitize: harness
	@set -e; start=$$(date +%s); \
	$(CARGO) build --locked -q -p quorumlock-ffi; \
	lib="$$(pwd)/$${CARGO_TARGET_DIR:-target}/debug"; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	ln -s "$$lib/libquorumlock.so" "$$tmp/libquorumlock.so"; \
	ln -s "$$lib/libquorumlock.so" "$$tmp/libquorumlock.so.$(QL_MAJOR)"; \
	for src in $(sort $(foreach p,$(SAN_DURABLE) $(SAN_VOLATILE),$(firstword $(subst :, ,$(p))))); do \
	  exe="$$tmp/$${src/./_}"; \
	  case "$$src" in \
	    *.cpp) $(SAN_CXX) -std=c++17 $(SAN_FLAGS) "bindings/c/tests/c/$$src" "$$lib/libquorumlock.a" -ldl -lm -o "$$exe" ;; \
	    *) $(SAN_CC) -std=c11 $(SAN_FLAGS) "bindings/c/tests/c/$$src" -L"$$tmp" -lquorumlock -Wl,-rpath,"$$tmp" -o "$$exe" ;; \
	  esac; \
	done; \
	script() { for p in "$$@"; do src=$${p%%:*}; mode=$${p#*:}; [ "$$mode" = "$$p" ] && mode=; \
	  printf 'echo "== %s %s"; %s "%s" %s || exit 1\n' "$$src" "$$mode" "$(SAN_ENV)" "$$tmp/$${src/./_}" "$$mode"; done; }; \
	script $(SAN_DURABLE) > "$$tmp/durable.sh"; script $(SAN_VOLATILE) > "$$tmp/volatile.sh"; \
	$(HARNESS) exec --nodes 3 -- bash "$$tmp/durable.sh"; \
	$(HARNESS) exec --nodes 3 --persist none -- bash "$$tmp/volatile.sh"; \
	echo "test-c-sanitize: $(words $(SAN_DURABLE) $(SAN_VOLATILE)) runs clean under ASan+UBSan+LSan in $$(( $$(date +%s) - start )) s"
