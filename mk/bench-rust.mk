# Rust engine benchmarks of issue 20 (bench/rust; not tests, not part of `make test`). Each
# prints its table with the load average; docs/BENCHMARKS.md "Rust engine" has the results.
# `make bench` (Makefile) stays the quick floor comparison at c=1/16/64.

.PHONY: bench-rust bench-fanout bench-many-locks bench-handoff-outside deps-valgrind

## deps-valgrind: valgrind for the instruction counts of `make bench-rust`.
deps-valgrind:
	@command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }

## bench-rust: acquire+release vs the raw floor at c=1/16/64 (4 alternating runs each), plus
## instructions per cycle of both under callgrind (noise-free client CPU).
bench-rust: deps deps-valgrind
	$(CARGO) run --release --locked -q -p quorumlock-bench -- --rounds 4 --callgrind

## bench-fanout: acquire+release p50 on 3, 5, 7, 9 nodes behind 1 ms proxies vs the physical
## limit (two round trips to the quorum-th fastest node) and the floor.
bench-fanout: deps
	$(CARGO) run --release --locked -q -p quorumlock-bench --bin fanout

## bench-many-locks: one client on one thread holding 100 000 auto-extended locks for 30 s:
## CPU per lock-second, RSS per lock, locks lost. QL_MANY_LOCKS_ARGS: e.g. "--redis-cluster --locks 20000".
bench-many-locks: deps
	$(CARGO) run --release --locked -q -p quorumlock-bench --bin many_locks -- $(QL_MANY_LOCKS_ARGS)

## bench-handoff-outside: the hand-off benchmark (`make bench-handoff`) with 2 ms of work
## outside the lock after each release, so that a releaser cannot re-take its own lock.
bench-handoff-outside: deps harness
	cd bench/node && $(NPM) ci --no-audit --no-fund
	QL_HANDOFF_ARGS="--outside-ms 2 $(QL_HANDOFF_ARGS)" bench/run handoff
