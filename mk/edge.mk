# npm package quorumlock-edge (edge/) over the WebAssembly crate bindings/wasm.
# edge-wasm builds the crate for wasm32-unknown-unknown (size-optimized through CARGO_PROFILE_*
# variables, so the workspace profile stays as it is), runs wasm-bindgen (--target web) and
# wasm-opt, checks the generated glue and its .d.ts against the checked-in copies in
# edge/wasm/ (EDGE_BLESS=1 updates them) and puts the .wasm next to them.
# test-edge runs clippy for wasm32, the node:test suites against 5 ql-harness nodes (ioredis,
# node-redis, the Upstash REST fixture, the CLI contention test), the type check and the
# npm pack install check.
WASM_BINDGEN_VERSION := 0.2.130
EDGE_DIR := edge
EDGE_TARGET := $(abspath $(or $(CARGO_TARGET_DIR),target))
EDGE_GEN := $(EDGE_TARGET)/edge-gen
EDGE_WASM_ENV := CARGO_PROFILE_RELEASE_OPT_LEVEL=s CARGO_PROFILE_RELEASE_LTO=true \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_PROFILE_RELEASE_DEBUG=0 \
  CARGO_PROFILE_RELEASE_PANIC=abort CARGO_PROFILE_RELEASE_STRIP=debuginfo

.PHONY: deps-edge edge-wasm test-edge bench-edge bench-edge-handoff edge-pack
TEST_TARGETS += test-edge
DEPS_TARGETS += deps-edge

## deps-edge: the wasm32 target, wasm-bindgen-cli $(WASM_BINDGEN_VERSION), wasm-opt (binaryen), node/npm.
deps-edge:
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || \
	  { echo "deps-edge: node and npm (Node 20 or later) are needed for edge/"; exit 1; }
	@rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown || \
	  rustup target add wasm32-unknown-unknown || \
	  { echo "deps-edge: rustup could not add the wasm32-unknown-unknown target"; exit 1; }
	@if ! command -v wasm-opt >/dev/null 2>&1; then \
	  echo "installing binaryen (wasm-opt) with apt-get"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  { $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq binaryen >/dev/null; } || \
	    { echo "deps-edge: apt-get could not install binaryen (wasm-opt)"; exit 1; }; \
	fi
	@if [ "$$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $(WASM_BINDGEN_VERSION)" ]; then \
	  echo "installing wasm-bindgen-cli $(WASM_BINDGEN_VERSION) with cargo install (a few minutes)"; \
	  $(CARGO) install --locked wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) || \
	  $(CARGO) install wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION) || \
	    { echo "deps-edge: cargo could not install wasm-bindgen-cli $(WASM_BINDGEN_VERSION) (it must match the crate's wasm-bindgen exactly)"; exit 1; }; \
	fi
	@wasm-bindgen --version && wasm-opt --version

## edge-wasm: build the .wasm, generate the glue, check it against edge/wasm/, optimize.
edge-wasm:
	$(EDGE_WASM_ENV) $(CARGO) build --locked --release -p quorumlock-wasm --target wasm32-unknown-unknown
	@rm -rf $(EDGE_GEN) && mkdir -p $(EDGE_GEN)/opt
	@# wasm-opt runs before wasm-bindgen: Debian's binaryen 108 run after it points the
	@# __wbindgen_externrefs export at the function table (the module then fails to start).
	wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
	  --enable-mutable-globals --enable-reference-types --enable-multivalue \
	  $(EDGE_TARGET)/wasm32-unknown-unknown/release/quorumlock_edge.wasm -o $(EDGE_GEN)/opt/quorumlock_edge.wasm
	wasm-bindgen --target web --out-dir $(EDGE_GEN) $(EDGE_GEN)/opt/quorumlock_edge.wasm
	cp $(EDGE_GEN)/quorumlock_edge_bg.wasm $(EDGE_DIR)/wasm/quorumlock_edge_bg.wasm
	@for f in quorumlock_edge.js quorumlock_edge.d.ts quorumlock_edge_bg.wasm.d.ts; do \
	  if [ "$(EDGE_BLESS)" = 1 ]; then cp $(EDGE_GEN)/$$f $(EDGE_DIR)/wasm/$$f; \
	  elif ! cmp -s $(EDGE_GEN)/$$f $(EDGE_DIR)/wasm/$$f; then \
	    diff -u $(EDGE_DIR)/wasm/$$f $(EDGE_GEN)/$$f | head -40; \
	    echo "edge/wasm/$$f is stale: run 'make edge-wasm EDGE_BLESS=1' and commit it"; exit 1; fi; \
	done
	@raw=$$(stat -c %s $(EDGE_DIR)/wasm/quorumlock_edge_bg.wasm); \
	  gz=$$(gzip -9 -c $(EDGE_DIR)/wasm/quorumlock_edge_bg.wasm | wc -c); \
	  echo "edge: quorumlock_edge_bg.wasm $$raw bytes, $$gz bytes gzipped"

edge/node_modules: edge/package-lock.json
	cd $(EDGE_DIR) && $(NPM) ci --ignore-scripts --no-audit --no-fund
	@touch $@

## test-edge: clippy (wasm32), node:test suites on 5 nodes, type check, npm pack install check.
test-edge: harness edge-wasm edge/node_modules
	$(CARGO) build --locked -p quorumlock-cli
	$(CARGO) clippy --locked -p quorumlock-wasm --target wasm32-unknown-unknown -- -D warnings
	cd $(EDGE_DIR) && QL_CLI=$(abspath $(or $(CARGO_TARGET_DIR),target))/debug/quorumlock \
	  $(abspath $(HARNESS)) exec --nodes 5 -- $(NPM) test
	cd $(EDGE_DIR) && $(NPM) run typecheck

## edge-pack: npm pack of edge/ into target/edge-pack (after edge-wasm).
edge-pack: edge-wasm
	@mkdir -p $(EDGE_TARGET)/edge-pack
	cd $(EDGE_DIR) && $(NPM) pack --pack-destination $(EDGE_TARGET)/edge-pack

## bench-edge-handoff: one lock passed between 8 edge clients in separate Node processes
## (hold 1 ms, 2 ms outside); QL_EDGE_APIS=label=path/to/api.js,... compares builds.
bench-edge-handoff: deps harness edge-wasm edge/node_modules
	cd bench/node && $(NPM) ci --no-audit --no-fund
	$(abspath $(HARNESS)) exec --nodes 5 -- node $(EDGE_DIR)/bench/handoff.mjs

## bench-edge: .wasm size, and acquire+release through ioredis vs node-redlock 5 on 5 nodes.
bench-edge: deps harness edge-wasm edge/node_modules
	cd bench/node && $(NPM) ci --no-audit --no-fund
	$(CARGO) build --release --locked -q -p quorumlock-bench --bin quorumlock-bench
	QL_BENCH_RUST_BIN=$(abspath $(or $(CARGO_TARGET_DIR),target))/release/quorumlock-bench \
	  $(abspath $(HARNESS)) exec --nodes 5 -- node $(EDGE_DIR)/bench/bench.mjs
