package quorumlock

// C trampolines for the callbacks. They live apart from the //export functions (callbacks.go)
// because a file with //export may only declare C functions. Userdata is a cgo.Handle number
// carried as uintptr_t: no Go pointer is ever stored in C.

/*
#include <stdint.h>
#include <quorumlock.h>

extern void qlGoLost(uintptr_t handle, uint32_t reason, quorumlock_error *detail);
extern void qlGoWarning(uintptr_t handle, char *code, int64_t node, char *message);

static void ql_go_lost_tramp(void *userdata, uint32_t reason, const quorumlock_error *detail) {
	qlGoLost((uintptr_t)userdata, reason, (quorumlock_error *)detail);
}

static void ql_go_warning_tramp(void *userdata, const char *code, int64_t node, const char *message) {
	qlGoWarning((uintptr_t)userdata, (char *)code, node, (char *)message);
}

quorumlock_result ql_go_set_on_lost(quorumlock_lock_options *opts, uintptr_t handle) {
	return quorumlock_lock_options_set_on_lost(opts, ql_go_lost_tramp, (void *)handle);
}

quorumlock_result ql_go_set_warning(quorumlock_config *cfg, uintptr_t handle) {
	return quorumlock_config_set_warning_callback(cfg, ql_go_warning_tramp, (void *)handle);
}
*/
import "C"
