// Command example takes a lock on the nodes in QL_NODES (comma-separated URLs), prints what
// happened, and releases it. `make test-go` builds it to check that it links statically.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	quorumlock "example.invalid/quorumlock/go"
)

func main() {
	nodes := strings.Split(os.Getenv("QL_NODES"), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := quorumlock.Connect(ctx, nodes, quorumlock.WithQuarantine(quorumlock.QuarantineOff, 0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer client.Close()

	m := client.NewMutex("example", quorumlock.WithExpiry(5*time.Second))
	held, unlock, err := m.Hold(ctx)
	var qe *quorumlock.Error
	if errors.As(err, &qe) {
		fmt.Fprintln(os.Stderr, err)
		for _, n := range qe.Nodes() {
			fmt.Fprintln(os.Stderr, " ", n)
		}
		os.Exit(1)
	}
	fmt.Printf("quorumlock %s: locked %q with value %s until %s\n", quorumlock.Version(), m.Name(),
		m.Value(), time.Until(m.Until()).Round(time.Millisecond))
	select {
	case <-held.Done():
	case <-time.After(100 * time.Millisecond):
	}
	if err := unlock(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("released")
}
