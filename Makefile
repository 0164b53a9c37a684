# quorumlock: `make demo` and `make test` are the two commands a newcomer needs.
SHELL := /bin/bash
CARGO ?= cargo
HARNESS := $(or $(CARGO_TARGET_DIR),target)/debug/ql-harness

.PHONY: demo test lint fmt build bench deps deps-redis clean test-rust harness check-builds

# Test nodes fsync every write (appendfsync always). On tmpfs that costs nothing, so a disk kept
# busy by builds cannot stall a node past a node timeout (all nodes timing out at once was the
# flakiness seen under load). Used when /dev/shm has 2 GiB free; QL_RUN_ROOT set by the caller
# wins. A failed test's kept run folder then lives in /dev/shm/quorumlock-runs until removed.
ifeq ($(origin QL_RUN_ROOT),undefined)
ifeq ($(shell [ "$$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $$4}')" -ge 2097152 ] 2>/dev/null && echo yes),yes)
export QL_RUN_ROOT := /dev/shm/quorumlock-runs
endif
endif

# Each binding adds its own targets in mk/<name>.mk: it appends its test target to
# TEST_TARGETS, its system-package installer to DEPS_TARGETS, its demo step to DEMO_TARGETS.
TEST_TARGETS :=
DEPS_TARGETS :=
DEMO_TARGETS :=
-include mk/*.mk

## deps: install what a fresh Debian machine lacks for `make test`: redis-server and each
## binding's toolchain (apt-get, rustup targets, cargo install); needs root or sudo.
deps: deps-redis $(DEPS_TARGETS)

deps-redis:
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  echo "installing redis-server (apt-get)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; \
	fi
	@redis-server --version

## harness: the ql-harness binary that the C, Python, Node and CLI tests use.
harness:
	$(CARGO) build --locked -p quorumlock-harness

build: harness
	$(CARGO) build --locked -p quorumlock --examples

## demo: start 5 local Redis nodes, let several workers contend for one lock, stop the nodes.
demo: deps-redis build $(DEMO_TARGETS)
	$(HARNESS) exec --nodes 5 -- target/debug/examples/contention

## test: format and lint checks, then every test against real redis-server processes.
## The language suites run TEST_JOBS at a time (default 2): most of their time is spent waiting
## on nodes, subprocesses and timers, not on a core. Their lines interleave, each whole
## (--output-sync=line: a suite that hangs still shows how far it got). `make test TEST_JOBS=1`
## runs them one after another.
TEST_JOBS ?= 2
test: deps lint test-rust
	$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=line $(TEST_TARGETS)

# The simulator (quorumlock-sim) turns on quorumlock-proto's `mutants` feature. In a workspace
# build that feature would reach every crate above proto, so each later `cargo build -p ...` of
# a binding would compile proto, core and the binding a second time, without it. The simulator
# runs in its own cargo invocation instead (test-sim in mk/sim.mk), and the shipped crates are
# tested exactly as they are built.
test-rust:
	$(CARGO) test --workspace --exclude quorumlock-sim --locked

lint: check-builds
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	@# The engine's entry points for fuzz/ (feature `fuzzing`), which no workspace build enables;
	@# with the workspace-hack selected too, the dependencies are the ones checked just above.
	$(CARGO) clippy -p quorumlock -p quorumlock-workspace-hack --features quorumlock/fuzzing --locked -- -D warnings
	RUSTDOCFLAGS=-Dwarnings $(CARGO) doc --workspace --no-deps --locked -q

## check-builds: every binding's cargo build reuses the third-party crates of the workspace's
## test build (workspace-hack/, tests/shared_builds.py); a split costs minutes of make test.
check-builds:
	python3 tests/shared_builds.py

fmt:
	$(CARGO) fmt --all

## bench: acquire+release latency and throughput vs. the raw Redis floor (release build).
bench: deps
	$(CARGO) run --release --locked -p quorumlock-bench

clean:
	$(CARGO) clean
