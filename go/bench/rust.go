package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// rustC1 runs the Rust engine's benchmark (bench/rust's release `quorumlock-bench`, path in
// QL_BENCH_RUST_BIN) for one second at concurrency 1 on the same nodes and returns its
// acquire+release p50 in µs, so that the Go figures have the engine's own beside them, taken
// in the same run. It returns 0 (and says why on stderr) when the binary is not given or fails.
func rustC1(nodes []string) int64 {
	bin := os.Getenv("QL_BENCH_RUST_BIN")
	if bin == "" {
		return 0
	}
	out, err := exec.Command(bin, "--nodes", strings.Join(nodes, ","), "--conc", "1",
		"--rounds", "1", "--secs", "1", "--persist", "always", "--json").Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Rust engine benchmark %s: %v\n", bin, err)
		return 0
	}
	var report struct {
		Cases []struct {
			Concurrency int `json:"concurrency"`
			Quorumlock  struct {
				P50 int64 `json:"p50_us"`
			} `json:"quorumlock"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(out, &report); err != nil || len(report.Cases) == 0 {
		fmt.Fprintf(os.Stderr, "Rust engine benchmark: unreadable output (%v)\n", err)
		return 0
	}
	return report.Cases[0].Quorumlock.P50
}

// median of the non-zero values, 0 when there are none.
func median(v []int64) int64 {
	var got []int64
	for _, x := range v {
		if x > 0 {
			got = append(got, x)
		}
	}
	if len(got) == 0 {
		return 0
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	return got[len(got)/2]
}
