# C ABI (bindings/c): header regeneration, install, and the install check.
# The C/C++ programs under valgrind run inside `cargo test --workspace` (bindings/c/tests/c.rs).
.PHONY: deps-c test-c header install ql-prefix

PREFIX ?= /usr/local
DESTDIR ?=
# install builds release; test-c installs the debug build that `make test-rust` already made.
QL_PROFILE ?= release
QL_PROFILE_DIR = $(if $(filter dev,$(QL_PROFILE)),debug,$(QL_PROFILE))
QL_VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
QL_MAJOR = $(firstword $(subst ., ,$(QL_VERSION)))

DEPS_TARGETS += deps-c
TEST_TARGETS += test-c

# valgrind for the C tests (QL_REQUIRE_VALGRIND=1 below), pkg-config and cmake for the install check.
deps-c:
	@missing=""; for t in valgrind pkg-config cmake; do \
	  command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing (apt-get)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# The C tests in `cargo test --workspace` must not skip valgrind under `make test`.
export QL_REQUIRE_VALGRIND = 1

## header: regenerate include/quorumlock.h with the pinned cbindgen.
header:
	QL_BLESS=1 $(CARGO) test --locked -p quorumlock-ffi --test header

## install: the CLI, shared + static library, headers, pkg-config and CMake files under
## $(DESTDIR)$(PREFIX).
install:
	$(CARGO) build --locked --profile $(QL_PROFILE) -p quorumlock-ffi -p quorumlock-cli
	@set -e; libs=$$($(CARGO) rustc --locked --profile $(QL_PROFILE) -p quorumlock-ffi --lib \
	    --crate-type staticlib -- --print native-static-libs 2>&1 \
	    | sed -n 's/.*native-static-libs: //p' | tail -n1); \
	root="$(DESTDIR)$(PREFIX)"; src="$${CARGO_TARGET_DIR:-target}/$(QL_PROFILE_DIR)"; \
	install -d "$$root/lib/pkgconfig" "$$root/lib/cmake/quorumlock" "$$root/include" "$$root/bin"; \
	install -m 755 "$$src/quorumlock" "$$root/bin/quorumlock"; \
	install -m 755 "$$src/libquorumlock.so" "$$root/lib/libquorumlock.so.$(QL_VERSION)"; \
	ln -sf "libquorumlock.so.$(QL_VERSION)" "$$root/lib/libquorumlock.so.$(QL_MAJOR)"; \
	ln -sf "libquorumlock.so.$(QL_MAJOR)" "$$root/lib/libquorumlock.so"; \
	install -m 644 "$$src/libquorumlock.a" "$$root/lib/libquorumlock.a"; \
	install -m 644 include/quorumlock.h include/quorumlock.hpp "$$root/include/"; \
	sed -e "s|@PREFIX@|$(PREFIX)|" -e "s|@VERSION@|$(QL_VERSION)|" -e "s|@LIBS_PRIVATE@|$$libs|" \
	    bindings/c/quorumlock.pc.in > "$$root/lib/pkgconfig/quorumlock.pc"; \
	sed -e "s|@VERSION@|$(QL_VERSION)|" -e "s|@MAJOR@|$(QL_MAJOR)|" -e "s|@LIBS_PRIVATE@|$$libs|" \
	    bindings/c/quorumlockConfig.cmake.in > "$$root/lib/cmake/quorumlock/quorumlockConfig.cmake"; \
	echo "installed quorumlock $(QL_VERSION) under $$root"

## ql-prefix: the debug build of libquorumlock (shared and static library, headers, pkg-config
## file, CLI) under target/ql-prefix, shared by the language packages' tests (go, ruby, perl,
## php, csharp). A phony prerequisite: installed once per make run, however many targets use it.
QL_PREFIX := $(abspath $(or $(CARGO_TARGET_DIR),target))/ql-prefix
ql-prefix:
	@$(MAKE) --no-print-directory install PREFIX="$(QL_PREFIX)" QL_PROFILE=dev >/dev/null

## test-c: install into a temporary prefix, build the examples with pkg-config and CMake, run them.
test-c: harness
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(MAKE) --no-print-directory install PREFIX="$$tmp" QL_PROFILE=dev >/dev/null; \
	export PKG_CONFIG_PATH="$$tmp/lib/pkgconfig"; \
	cc -Wall -Wextra -Werror examples/c/hello.c $$(pkg-config --cflags --libs quorumlock) \
	    -Wl,-rpath,"$$tmp/lib" -o "$$tmp/hello-c"; \
	cmake -S examples/cpp -B "$$tmp/build" -DCMAKE_PREFIX_PATH="$$tmp" \
	    -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" -DCMAKE_BUILD_RPATH="$$tmp/lib" >/dev/null; \
	cmake --build "$$tmp/build" >/dev/null; \
	$(HARNESS) exec --nodes 3 -- "$$tmp/hello-c"; \
	$(HARNESS) exec --nodes 3 -- "$$tmp/build/hello"
