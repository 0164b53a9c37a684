# Fuzzing (fuzz/, its own cargo workspace; docs/TESTING.md §8.3): cargo-fuzz targets for every
# parser of untrusted input. `make fuzz-smoke` runs each target 20 s (CI, after `make test`);
# `make fuzz FUZZ_SECONDS=600` is the long run. New corpus entries go to $(FUZZ_WORK), the
# committed seeds in fuzz/corpus/<target> are read only; a crash leaves its input in
# fuzz/artifacts/<target>/ and fails the run, printing the report's first lines (the panic or
# sanitizer message) and the log's last ones (the input as bytes). Needs a nightly compiler:
# `cargo +nightly` when rustup has one, else the stable one with RUSTC_BOOTSTRAP=1.
.PHONY: fuzz fuzz-smoke fuzz-tools

FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= node_url probe_replies options replies c_abi
FUZZ_WORK ?= $(abspath $(or $(CARGO_TARGET_DIR),target))/fuzz-corpus
FUZZ_CARGO := $(shell rustup toolchain list 2>/dev/null | grep -q '^nightly' && echo 'cargo +nightly' || echo 'RUSTC_BOOTSTRAP=1 cargo')

## fuzz-tools: cargo-fuzz from crates.io, when missing.
fuzz-tools:
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install --locked cargo-fuzz

## fuzz: every target for FUZZ_SECONDS (default 600) each; prints executions per target.
fuzz: fuzz-tools
	@set -e; cd fuzz; $(FUZZ_CARGO) fuzz build >/dev/null 2>&1 || $(FUZZ_CARGO) fuzz build; \
	summary=""; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p "$(FUZZ_WORK)/$$t"; log="$(FUZZ_WORK)/$$t.log"; \
	  if ! $(FUZZ_CARGO) fuzz run "$$t" "$(FUZZ_WORK)/$$t" "corpus/$$t" -- \
	      -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$$log" 2>&1; then \
	    grep -m1 -A40 -E 'panicked at|ERROR: AddressSanitizer|ERROR: LeakSanitizer|ERROR: libFuzzer|deadly signal' "$$log" || true; \
	    echo '[...]'; tail -n 25 "$$log"; \
	    echo "fuzz: $$t FAILED (input in fuzz/artifacts/$$t/, log $$log)"; exit 1; \
	  fi; \
	  runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' "$$log" | tail -n1); \
	  cov=$$(grep -o 'cov: [0-9]*' "$$log" | tail -n1); \
	  summary="$$summary$$(printf '\n  %-14s %10s runs in %s s, %s, corpus %s files' "$$t" "$$runs" "$(FUZZ_SECONDS)" "$$cov" "$$(ls "$(FUZZ_WORK)/$$t" | wc -l)")"; \
	done; \
	echo "fuzz: no crash$$summary"

## fuzz-smoke: every target for 20 s (CI runs it after make test).
fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=20
