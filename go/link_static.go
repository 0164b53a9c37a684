//go:build !quorumlock_dynamic

package quorumlock

// Static linking (the default): libquorumlock.a goes into the binary, so it needs no shared
// library at run time. pkg-config finds the headers and the library directory and, with
// --static, the system libraries the archive needs (Libs.private). The archive is named with
// -l: so the linker cannot pick libquorumlock.so from the same directory; --as-needed drops
// the -lquorumlock that pkg-config adds after it, since the archive already resolved it.

// #cgo pkg-config: --static quorumlock
// #cgo LDFLAGS: -l:libquorumlock.a -Wl,--as-needed
import "C"
