# Fault suite (tests/faults, docs/SAFETY.md). The fixed-seed subset (proxy tests, the scenario
# matrix with one run per row, one 8 s nemesis seed) already runs in `make test` through
# `cargo test --workspace`; these targets run the long variants and print the safety table.
.PHONY: test-faults soak deps-nft
DEPS_TARGETS += deps-nft

FAULTS_TABLE := target/faults-table.txt
FAULTS_HEADER := | scenario | expect | runs | acquisitions | violations | max overlap ms | lost updates | fenced rejections |
SEEDS ?= 20
SECS ?= 30
SEED ?=

define print-faults-table
	@echo; echo "$(FAULTS_HEADER)"; echo "|---|---|---|---|---|---|---|---|"; sort $(FAULTS_TABLE)
endef

## deps-nft: nftables for the kernel partitions (faults_netns), when this user is root; the
## tests skip with a line that says why when it is missing.
deps-nft:
	@if ! command -v nft >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "installing nftables (apt-get)"; \
	  { apt-get install -y -qq nftables || { apt-get update -qq && apt-get install -y -qq nftables; }; } >/dev/null \
	    || echo "nftables not installed: faults_netns will skip"; \
	fi

## test-faults: proxy tests, every matrix row 3 times, the kernel partitions (root, ip netns and
## nft; a SKIP line otherwise), 5 nemesis seeds x 20 s, fencing tokens over 32 clients x 10k
## acquisitions; prints the table.
test-faults: deps-redis
	@mkdir -p target; rm -f $(FAULTS_TABLE)
	QL_FAULTS_FULL=1 QL_SEEDS=5 QL_FAULTS_TABLE=$(abspath $(FAULTS_TABLE)) \
	  $(CARGO) test --locked -p quorumlock-harness --test proxy --test faults_matrix --test faults_netns --test faults_nemesis -- --test-threads=2
	QL_FAULTS_FULL=1 $(CARGO) test --locked -p quorumlock --test fencing -- tokens_strictly_increase
	$(print-faults-table)

## soak: SEEDS random nemesis schedules of SECS seconds each (SEED=0x... replays one).
soak: deps-redis
	@mkdir -p target; rm -f $(FAULTS_TABLE)
	QL_SEEDS=$(SEEDS) QL_SECS=$(SECS) QL_SEED=$(SEED) QL_FAULTS_TABLE=$(abspath $(FAULTS_TABLE)) \
	  $(CARGO) test --locked -p quorumlock-harness --test faults_nemesis -- --nocapture nemesis_safe
	$(print-faults-table)
