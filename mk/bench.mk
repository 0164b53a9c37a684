# Benchmarks (bench/run; not tests, not part of `make test`): the Python and Node packages against
# their peer libraries and the Rust raw floor, and the lock hand-off benchmark. Release builds;
# peers from PyPI and npm go into bench/.venv and bench/node/node_modules only.
BENCH_VENV := bench/.venv

.PHONY: bench-python bench-node bench-python-env bench-node-env bench-handoff bench-stages

$(BENCH_VENV)/bin/python:
	python3 -m venv $(BENCH_VENV)

## bench-python-env: the peers and a release wheel of quorumlock in bench/.venv. A wheel, not
## `maturin develop`: an editable install would load whatever .so the last build left in python/.
bench-python-env: $(BENCH_VENV)/bin/python
	$(BENCH_VENV)/bin/pip install -q -r bench/python/requirements.txt
	rm -rf bench/.wheels
	cd python && ../$(BENCH_VENV)/bin/maturin build --release -q -o ../bench/.wheels
	$(BENCH_VENV)/bin/pip install -q --force-reinstall --no-deps bench/.wheels/quorumlock-*.whl

## bench-python: quorumlock (threads, asyncio) vs redlock-py, pottery, aioredlock, a redis-py
## floor, and the Rust engine and floor (bench/rust) on the same nodes; c=1, 16 and 64.
bench-python: deps harness bench-python-env
	bench/run python

## bench-node-env: the peers (bench/node/package-lock.json) and a release copy of the addon.
bench-node-env: node/node_modules
	cd bench/node && $(NPM) ci --no-audit --no-fund
	cd node && $(NPM) run build
	rm -rf bench/node/.pkg && mkdir -p bench/node/.pkg/quorumlock
	cp -r node/package.json node/index.js node/native.js node/compat node/quorumlock.*.node \
	  bench/node/.pkg/quorumlock/

## bench-node: quorumlock vs redlock 4.2.0, 5.0.0-beta.2, @sesamecare-oss/redlock, an ioredis
## floor, and the Rust engine and floor (bench/rust) on the same nodes; c=1, 16 and 64.
bench-node: deps harness bench-node-env
	bench/run node

## bench-handoff: 8 workers pass one lock around (hold 1 ms) for 10 s: quorumlock with release
## notification on (own clients, one shared client) and off (polling) vs node-redlock 5 and 4.
bench-handoff: deps harness
	cd bench/node && $(NPM) ci --no-audit --no-fund
	bench/run handoff

## bench-stages: where one c=1 acquire and release spend their time (Python blocking and
## asyncio, Node), from marks recorded by a wheel and an addon built with the cargo feature
## `stages`. Leaves that wheel in bench/.venv: `make bench-python` puts the plain one back.
bench-stages: deps harness bench-python-env bench-node-env
	rm -rf bench/.wheels-stages
	cd python && ../$(BENCH_VENV)/bin/maturin build --release -q --features stages \
	  -o ../bench/.wheels-stages
	$(BENCH_VENV)/bin/pip install -q --force-reinstall --no-deps bench/.wheels-stages/quorumlock-*.whl
	rm -rf bench/node/.pkg-stages && mkdir -p bench/node/.pkg-stages/quorumlock
	cd node && $(NPM) exec -- napi build --platform --release --features stages --no-js \
	  --output-dir ../bench/node/.pkg-stages/quorumlock
	cp -r node/package.json node/index.js node/native.js node/compat bench/node/.pkg-stages/quorumlock/
	bench/run stages
