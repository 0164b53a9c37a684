/* Helpers shared by the C test programs: node URLs from QL_NODES, checks that exit 1. */
#ifndef QL_TEST_COMMON_H
#define QL_TEST_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quorumlock.h"

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* Checks that `call` returns `want`; prints the error message otherwise. */
#define EXPECT(want, call)                                                        \
  do {                                                                            \
    quorumlock_result r_ = (call);                                                \
    if (r_ != (quorumlock_result)(want)) {                                        \
      fprintf(stderr, "%s:%d: %s returned %s, want %s\n", __FILE__, __LINE__,     \
              #call, quorumlock_result_name(r_), quorumlock_result_name(want));   \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

/* Prints and frees an error, returning its code. */
static inline uint32_t show_error(quorumlock_error *err) {
  char msg[512];
  size_t n = 0;
  uint32_t code = quorumlock_error_code(err);
  CHECK(quorumlock_error_message(err, msg, sizeof msg, &n) == QL_OK);
  CHECK(n > 0 && strlen(msg) == (n < sizeof msg ? n : sizeof msg - 1));
  fprintf(stderr, "  error: %s\n", msg);
  quorumlock_error_free(err);
  return code;
}

/* A client over the nodes in QL_NODES (comma-separated URLs); with `require`, connecting
 * fails unless a quorum connected within 10 s (valgrind makes connecting slow).
 * `quarantine` is a QL_QUARANTINE_* mode. */
static inline quorumlock_client *connect_nodes_quarantine(bool require, uint32_t quarantine) {
  const char *env = getenv("QL_NODES");
  CHECK(env != NULL && *env != '\0');
  quorumlock_config *cfg = NULL;
  CHECK(quorumlock_config_new(&cfg) == QL_OK && cfg != NULL);
  const char *p = env;
  while (*p) {
    size_t len = strcspn(p, ",");
    CHECK(quorumlock_config_add_node(cfg, (const uint8_t *)p, len, NULL) == QL_OK);
    p += len;
    if (*p == ',') p++;
  }
  CHECK(quorumlock_config_set_connect_timeout_ms(cfg, 10000) == QL_OK);
  CHECK(quorumlock_config_set_require_quorum(cfg, require) == QL_OK);
  CHECK(quorumlock_config_set_quarantine(cfg, quarantine, 0) == QL_OK);
  quorumlock_client *client = NULL;
  quorumlock_error *err = NULL;
  quorumlock_result r = quorumlock_client_new(cfg, &client, &err);
  if (r != QL_OK) show_error(err);
  CHECK(r == QL_OK && client != NULL);
  quorumlock_config_free(cfg);
  return client;
}

static inline quorumlock_client *connect_nodes(bool require) {
  return connect_nodes_quarantine(require, QL_QUARANTINE_ON);
}

/* Options with generous node timeouts: the programs may run under valgrind. */
static inline quorumlock_lock_options *slow_options(uint64_t ttl_ms) {
  quorumlock_lock_options *o = NULL;
  CHECK(quorumlock_lock_options_new(&o) == QL_OK);
  CHECK(quorumlock_lock_options_set_ttl_ms(o, ttl_ms) == QL_OK);
  CHECK(quorumlock_lock_options_set_node_timeout_ms(o, 1000) == QL_OK);
  CHECK(quorumlock_lock_options_set_min_validity_ms(o, 0) == QL_OK);
  CHECK(quorumlock_lock_options_set_retry_delay_ms(o, 20, 20) == QL_OK);
  return o;
}

#define RES(s) (const uint8_t *)(s), strlen(s)

#endif
