# The long hostile-node check (docs/TESTING.md §3.6): after the engine's 30 s bounds the memory
# of unanswered requests is given back and a silent node's connection is replaced (~70 s).
# The fast hostile tests run in `make test-rust` (core/tests/hostile.rs).
.PHONY: test-hostile-long

test-hostile-long:
	$(CARGO) test --locked -p quorumlock --test hostile -- --ignored --nocapture
