// Package quorumlock is a Go binding of quorumlock, one audited Redlock engine written in Rust,
// through its C ABI (libquorumlock). Its API is shaped like redsync v4's:
//
//	client, err := quorumlock.Connect(ctx, []string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"})
//	m := client.NewMutex("invoice:7", quorumlock.WithExpiry(10*time.Second))
//	if err := m.Lock(); err != nil {
//		return err // errors.Is(err, quorumlock.ErrBusy), errors.As(err, &qe) for qe.Nodes()
//	}
//	defer m.Unlock()
//
// Mutex.Hold keeps a lock alive in the background and returns a context cancelled when it is
// lost. The engine makes every decision (quorum, validity, retries, clean-up); this package
// converts types and errors.
//
// By default the package links libquorumlock.a statically (found with pkg-config --static),
// so binaries need no shared library at run time; build with -tags quorumlock_dynamic to link
// libquorumlock.so instead.
package quorumlock
