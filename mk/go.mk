# Go module (go/): cgo over libquorumlock, linked statically from a target-local install.
# test-go uses the debug library installed once into target/ql-prefix (`ql-prefix` in
# mk/c.mk; pkg-config finds it there), runs go vet, the race-enabled tests against ql-harness
# nodes (the fuzz seed corpus included) and checks that a built binary needs no
# libquorumlock.so.
GO ?= go
GO_PREFIX = $(QL_PREFIX)
GO_BUILD := $(abspath $(or $(CARGO_TARGET_DIR),target))/go
# CGO_CPPFLAGS names the prefix so that Go's build cache, whose keys leave out what pkg-config
# prints, never reuses a package built against another prefix.
GO_ENV = PKG_CONFIG_PATH=$(GO_PREFIX)/lib/pkgconfig CGO_CPPFLAGS=-I$(GO_PREFIX)/include QL_HARNESS=$(abspath $(HARNESS))
FUZZTIME ?= 10s

.PHONY: test-go go-lib fuzz-go bench-go deps-go
TEST_TARGETS += test-go
DEPS_TARGETS += deps-go

deps-go:
	@command -v $(GO) >/dev/null 2>&1 || { echo "Go 1.24 or later is needed for go/ (https://go.dev/dl)"; exit 1; }
	@$(GO) version

## go-lib: libquorumlock (debug) with headers and pkg-config file under target/ql-prefix.
go-lib: ql-prefix

## test-go: go vet, go test -race against real nodes, and the static-link check.
test-go: harness go-lib
	cd go && gofmt -l . | (! grep .) || { echo "gofmt: files above need formatting"; exit 1; }
	cd go && $(GO_ENV) $(GO) vet ./...
	cd go && $(GO_ENV) $(GO) test -race -count=1 ./...
	@mkdir -p $(GO_BUILD) && cd go && $(GO_ENV) $(GO) build -o $(GO_BUILD)/go-example ./internal/example && \
	  if ldd $(GO_BUILD)/go-example | grep -q libquorumlock; then \
	    echo "go: the binary links libquorumlock.so dynamically"; exit 1; \
	  else echo "go: static link ok (no libquorumlock.so in ldd)"; fi

## fuzz-go: fuzz the option conversion for FUZZTIME (default 10s).
fuzz-go: go-lib
	cd go && $(GO_ENV) $(GO) test -run '^$$' -fuzz FuzzOptions -fuzztime $(FUZZTIME) .

## bench-go: quorumlock (release build) vs redsync v4 and a go-redis floor on 5 local nodes,
## with the Rust engine's c=1 p50 (bench/rust) on the same nodes before each round.
bench-go: harness
	@$(MAKE) --no-print-directory install PREFIX="$(GO_PREFIX)-release" QL_PROFILE=release >/dev/null
	$(CARGO) build --release --locked -q -p quorumlock-bench --bin quorumlock-bench
	mkdir -p $(GO_BUILD)
	cd go/bench && PKG_CONFIG_PATH=$(GO_PREFIX)-release/lib/pkgconfig $(GO) build -o $(GO_BUILD)/go-bench . && \
	  QL_BENCH_RUST_BIN=$(abspath $(or $(CARGO_TARGET_DIR),target))/release/quorumlock-bench \
	  $(abspath $(HARNESS)) exec --nodes 5 -- $(GO_BUILD)/go-bench
