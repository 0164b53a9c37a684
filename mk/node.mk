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
test-node: harness node/node_modules
	cd $(NODE_DIR) && $(NPM) run build:debug
	cd $(NODE_DIR) && QL_HARNESS=$(abspath $(HARNESS)) $(NPM) test
	cd $(NODE_DIR) && $(NPM) run typecheck

demo-node: harness node/node_modules
	cd $(NODE_DIR) && $(NPM) run build:debug
	$(HARNESS) exec --nodes 5 -- node examples/node/contention.mjs
