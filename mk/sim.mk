# Deterministic simulation (tests/sim, crate quorumlock-sim). `make test` runs test-sim: the
# safe and flagged tests (10,000 schedules, every broken scenario and mutant flagged) and the
# differential check against a real redis-server, in one cargo invocation of its own (see
# test-rust in the Makefile for why). `make sim` is the long run: `make sim SEEDS=1000000`
# (default 100,000 schedules), `SEED=0x...` replays one.
.PHONY: sim test-sim
TEST_TARGETS += test-sim

## test-sim: the simulator's schedules, its flagged table, and simulated node vs redis-server.
test-sim: deps-redis
	$(CARGO) test --locked -p quorumlock-sim -- --include-ignored

## sim: SEEDS safe schedules (release build) and the flagged table.
sim:
	SEEDS=$(if $(filter command line environment,$(origin SEEDS)),$(SEEDS),100000) \
	  $(CARGO) test --locked --release -p quorumlock-sim -- --nocapture
