// Command bench compares acquire+release of quorumlock's Go module with redsync v4 (go-redis v9
// pools) and a raw go-redis floor (SET NX PX + an EVAL release on every node, in parallel) on
// the same nodes, in one run. Nodes come from QL_NODES (comma-separated redis:// URLs), e.g.
// `ql-harness exec --nodes 5 -- bench`; `make bench-go` does that.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	quorumlock "example.invalid/quorumlock/go"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

const expiry = 10 * time.Second

// impl is one library under test: a factory of workers, each of which acquires and releases
// its own resource name once per call.
type impl struct {
	name   string
	worker func(id int) func() error
}

func main() {
	nodes := strings.Split(os.Getenv("QL_NODES"), ",")
	if len(nodes) == 0 || nodes[0] == "" {
		fmt.Fprintln(os.Stderr, "QL_NODES is empty: run under `ql-harness exec --nodes 5 --`")
		os.Exit(2)
	}
	seqN, concN, conc := envInt("QL_BENCH_SEQ", 2000), envInt("QL_BENCH_CONC", 8000), envInt("QL_BENCH_WORKERS", 16)
	ctx := context.Background()

	client, err := quorumlock.Connect(ctx, nodes, quorumlock.WithQuarantine(quorumlock.QuarantineOff, 0),
		quorumlock.WithRequireQuorum(true))
	check(err)
	defer client.Close()

	var rdbs []*goredislib.Client
	var pools []redsyncredis.Pool
	for _, u := range nodes {
		opt, err := goredislib.ParseURL(u)
		check(err)
		opt.PoolSize = 4 * conc
		rdb := goredislib.NewClient(opt)
		check(rdb.Ping(ctx).Err())
		rdbs = append(rdbs, rdb)
		pools = append(pools, goredis.NewPool(rdb))
	}
	rs := redsync.New(pools...)
	release := goredislib.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)

	impls := []impl{
		{"quorumlock (Go, cgo)", func(id int) func() error {
			m := client.NewMutex(fmt.Sprintf("bench:ql:%d", id), quorumlock.WithExpiry(expiry))
			return func() error {
				if err := m.Lock(); err != nil {
					return err
				}
				_, err := m.Unlock()
				return err
			}
		}},
		{"redsync v4.18.1", func(id int) func() error {
			m := rs.NewMutex(fmt.Sprintf("bench:rs:%d", id), redsync.WithExpiry(expiry))
			return func() error {
				if err := m.Lock(); err != nil {
					return err
				}
				_, err := m.Unlock()
				return err
			}
		}},
		{"raw floor (go-redis)", func(id int) func() error {
			key := fmt.Sprintf("bench:raw:%d", id)
			value := fmt.Sprintf("v%d-%d", id, time.Now().UnixNano())
			return func() error {
				if err := fanOut(rdbs, func(r *goredislib.Client) error {
					return r.SetNX(ctx, key, value, expiry).Err()
				}); err != nil {
					return err
				}
				return fanOut(rdbs, func(r *goredislib.Client) error {
					return release.Run(ctx, r, []string{key}, value).Err()
				})
			}
		}},
	}

	const rounds = 4
	fmt.Printf("Go %s, GOMAXPROCS %d, %d nodes, %d rounds in rotating order; load average %s before\n",
		runtime.Version(), runtime.GOMAXPROCS(0), len(nodes), rounds, loadavg())
	seq, par := make([]samples, len(impls)), make([]samples, len(impls))
	var rust []int64
	for r := 0; r < rounds; r++ {
		rust = append(rust, rustC1(nodes))
		for k := range impls {
			i := (k + r) % len(impls)
			seq[i].add(run(impls[i], 1, seqN/rounds))
			par[i].add(run(impls[i], conc, concN/rounds))
		}
	}
	fmt.Printf("load average %s after\n\n", loadavg())

	fmt.Printf("| impl | seq p50 µs | seq p99 µs | seq ops/s | %d workers p50 µs | p99 µs | ops/s | failed | seq ops/s vs redsync | %d workers ops/s vs redsync | seq p50 vs floor | seq p50 vs Rust engine c=1 |\n", conc, conc)
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	rsSeq, rsPar, floorSeq := seq[1].result(1), par[1].result(conc), seq[2].result(1)
	rustP50 := median(rust)
	for i, im := range impls {
		s, p := seq[i].result(1), par[i].result(conc)
		vsRust := "-"
		if rustP50 > 0 {
			vsRust = fmt.Sprintf("x%.2f", float64(s.p50)/float64(rustP50))
		}
		fmt.Printf("| %s | %d | %d | %.0f | %d | %d | %.0f | %d | x%.2f | x%.2f | x%.2f | %s |\n", im.name,
			s.p50, s.p99, s.rate, p.p50, p.p99, p.rate, seq[i].failed+par[i].failed,
			s.rate/rsSeq.rate, p.rate/rsPar.rate, float64(s.p50)/float64(floorSeq.p50), vsRust)
	}
	if rustP50 > 0 {
		fmt.Printf("\nRust engine (quorumlock-bench --conc 1, 1 s before each round): p50 %d µs, median of %v\n", rustP50, rust)
	}
}

// samples collects the latencies of successful cycles and the busy time of each run.
type samples struct {
	lat    []time.Duration
	busy   time.Duration // sum over runs of the mean busy time per worker
	failed int
}

func (s *samples) add(o samples) {
	s.lat = append(s.lat, o.lat...)
	s.busy += o.busy
	s.failed += o.failed
}

// result gives percentiles and the throughput: cycles over the time the workers were busy.
func (s *samples) result(workers int) result {
	sort.Slice(s.lat, func(i, j int) bool { return s.lat[i] < s.lat[j] })
	if len(s.lat) == 0 {
		return result{}
	}
	return result{
		p50:  s.lat[len(s.lat)/2].Microseconds(),
		p99:  s.lat[len(s.lat)*99/100].Microseconds(),
		rate: float64(len(s.lat)) / s.busy.Seconds(),
	}
}

type result struct {
	p50, p99 int64 // microseconds
	rate     float64
}

// run makes n acquire+release cycles over `workers` goroutines (after 20 warm-up cycles per
// worker). A failed cycle (e.g. a node timeout) is counted, not timed.
func run(im impl, workers, n int) samples {
	per := n / workers
	lat := make([][]time.Duration, workers)
	failed := make([]int, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cycle := im.worker(w)
			for i := 0; i < 20; i++ {
				_ = cycle()
			}
			lat[w] = make([]time.Duration, 0, per)
			for i := 0; i < per; i++ {
				t := time.Now()
				if err := cycle(); err != nil {
					failed[w]++
					continue
				}
				lat[w] = append(lat[w], time.Since(t))
			}
		}(w)
	}
	wg.Wait()
	var out samples
	var busy time.Duration
	for w, l := range lat {
		out.lat = append(out.lat, l...)
		out.failed += failed[w]
		for _, d := range l {
			busy += d
		}
	}
	out.busy = busy / time.Duration(workers)
	return out
}

// fanOut runs f on every node in parallel and waits for all; the first error wins.
func fanOut(rdbs []*goredislib.Client, f func(*goredislib.Client) error) error {
	errs := make(chan error, len(rdbs))
	for _, r := range rdbs {
		go func(r *goredislib.Client) { errs <- f(r) }(r)
	}
	var first error
	for range rdbs {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

func envInt(name string, def int) int {
	var v int
	if _, err := fmt.Sscan(os.Getenv(name), &v); err != nil || v <= 0 {
		return def
	}
	return v
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
