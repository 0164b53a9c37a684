# Node package (node/): npm ci, a debug build of the addon, node:test suites against ql-harness
# nodes, and the TypeScript type check.
NPM ?= npm
NODE_DIR := node

.PHONY: test-node demo-node

TEST_TARGETS += test-node
DEMO_TARGETS += demo-node

node/node_modules:
	cd $(NODE_DIR) && $(NPM) ci --ignore-scripts --no-audit --no-fund

## test-node: build the addon (debug), run the Node tests and the TypeScript type check.
# `npm run build:debug` (napi build) always passes --target, which moves every crate to a
# target/<triple>/ folder of its own: a second build of tokio, redis, rustls and ring. The tests
# load the same debug addon built by plain cargo, next to the other crates. The generated
# native.js and native.d.ts are checked for staleness by `make dist` (napi build --release), so
# the node test that runs napi build for that is skipped here (QL_SKIP_NAPI_BUILD=1).
NODE_ADDON := $(or $(CARGO_TARGET_DIR),target)/debug/libquorumlock_node.so

test-node: harness node/node_modules
	$(CARGO) build --locked -p quorumlock-node
	cp $(NODE_ADDON) $(NODE_DIR)/quorumlock.linux-x64-gnu.node
	cd $(NODE_DIR) && QL_SKIP_NAPI_BUILD=1 QL_HARNESS=$(abspath $(HARNESS)) $(NPM) test
	cd $(NODE_DIR) && $(NPM) run typecheck

demo-node: harness node/node_modules
	cd $(NODE_DIR) && $(NPM) run build:debug
	$(HARNESS) exec --nodes 5 -- node examples/node/contention.mjs
