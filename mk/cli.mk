# The `quorumlock` CLI (cli/). Its tests are Rust integration tests run by `test-rust`
# (cargo test --workspace), so there is no separate test target.
.PHONY: demo-cli
DEMO_TARGETS += demo-cli

## demo-cli: two `quorumlock run` jobs contending for one lock, with `status` and `ping`.
demo-cli: harness
	$(CARGO) build --locked -p quorumlock-cli
	$(HARNESS) exec --nodes 5 -- bash examples/shell/demo.sh
