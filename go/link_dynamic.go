//go:build quorumlock_dynamic

package quorumlock

// Dynamic linking (build tag quorumlock_dynamic): the binary loads libquorumlock.so at run
// time, found through the system's library path (or an rpath you add).

// #cgo pkg-config: quorumlock
import "C"
