# Deterministic simulation (tests/sim, crate quorumlock-sim). Its safe and flagged tests run in
# `cargo test --workspace` (10,002 schedules, every broken scenario and mutant flagged); the
# differential check against a real redis-server runs here in `make test`; `make sim` is the
# long run: `make sim SEEDS=1000000` (default 100,000 schedules), `SEED=0x...` replays one.
.PHONY: sim test-sim-diff
TEST_TARGETS += test-sim-diff

## test-sim-diff: the simulated node and a real redis-server give the same replies.
test-sim-diff: deps-redis
	$(CARGO) test --locked -p quorumlock-sim --test differential -- --ignored

## sim: SEEDS safe schedules (release build) and the flagged table.
sim:
	SEEDS=$(if $(filter command line environment,$(origin SEEDS)),$(SEEDS),100000) \
	  $(CARGO) test --locked --release -p quorumlock-sim -- --nocapture
