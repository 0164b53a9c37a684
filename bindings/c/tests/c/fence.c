/* Fencing tokens and client settings (quarantine, eviction check). Mode in argv[1]:
 * "tokens" on durable nodes, "quarantine" on fresh nodes started without persistence. */
#include "common.h"

#define TWO_POW_50 ((uint64_t)1 << 50)

static quorumlock_lock *fenced_lock(quorumlock_client *c, const char *res) {
  quorumlock_lock_options *o = slow_options(10000);
  EXPECT(QL_OK, quorumlock_lock_options_set_fenced(o, true, 0));
  quorumlock_lock *lock = NULL;
  quorumlock_error *err = NULL;
  quorumlock_result r = quorumlock_client_acquire(c, RES(res), o, NULL, &lock, &err);
  if (r != QL_OK) show_error(err);
  CHECK(r == QL_OK && lock != NULL);
  quorumlock_lock_options_free(o);
  return lock;
}

static void tokens(quorumlock_client *c) {
  quorumlock_lock *first = fenced_lock(c, "c:fence");
  uint64_t t1 = 0, at = 0;
  EXPECT(QL_OK, quorumlock_lock_token(first, &t1));
  CHECK(t1 > TWO_POW_50);
  CHECK(quorumlock_lock_token_count(first) == 1);
  EXPECT(QL_OK, quorumlock_lock_token_at(first, 0, &at));
  CHECK(at == t1);
  EXPECT(QL_INVALID, quorumlock_lock_token_at(first, 1, &at));
  EXPECT(QL_INVALID, quorumlock_lock_token(first, NULL));
  EXPECT(QL_OK, quorumlock_lock_release(first, NULL, NULL));
  quorumlock_lock_free(first);

  quorumlock_lock *second = fenced_lock(c, "c:fence");
  uint64_t t2 = 0;
  EXPECT(QL_OK, quorumlock_lock_token(second, &t2));
  CHECK(t2 > t1);
  EXPECT(QL_OK, quorumlock_lock_release(second, NULL, NULL));
  quorumlock_lock_free(second);

  /* Unfenced: no token. */
  quorumlock_lock_options *o = slow_options(10000);
  quorumlock_lock *plain = NULL;
  EXPECT(QL_OK, quorumlock_client_acquire(c, RES("c:fence"), o, NULL, &plain, NULL));
  uint64_t none = 7;
  EXPECT(QL_INVALID, quorumlock_lock_token(plain, &none));
  CHECK(none == 7);
  CHECK(quorumlock_lock_token_count(plain) == 0);
  EXPECT(QL_OK, quorumlock_lock_release(plain, NULL, NULL));
  quorumlock_lock_free(plain);
  quorumlock_lock_options_free(o);
  EXPECT(QL_INVALID, quorumlock_lock_token(NULL, &none));
  CHECK(quorumlock_lock_token_count(NULL) == 0);

  const char *script = quorumlock_fence_check_script();
  CHECK(script != NULL && strstr(script, "redis.call") != NULL);
  puts("tokens ok");
}

static void quarantine(void) {
  quorumlock_config *cfg = NULL;
  EXPECT(QL_OK, quorumlock_config_new(&cfg));
  EXPECT(QL_INVALID, quorumlock_config_set_quarantine(cfg, 3, 0));
  EXPECT(QL_INVALID, quorumlock_config_set_eviction_check(cfg, 3));
  EXPECT(QL_OK, quorumlock_config_set_eviction_check(cfg, QL_EVICTION_WARN));
  EXPECT(QL_OK, quorumlock_config_set_quarantine(cfg, QL_QUARANTINE_STRICT, 1000));
  EXPECT(QL_INVALID, quorumlock_config_set_quarantine(NULL, QL_QUARANTINE_OFF, 0));
  quorumlock_config_free(cfg);

  /* Default quarantine: fresh non-durable nodes are not counted. */
  quorumlock_client *guarded = connect_nodes_quarantine(false, QL_QUARANTINE_ON);
  quorumlock_lock_options *o = slow_options(10000);
  EXPECT(QL_OK, quorumlock_lock_options_set_retry_count(o, 0));
  quorumlock_lock *lock = NULL;
  quorumlock_error *err = NULL;
  EXPECT(QL_QUORUM, quorumlock_client_acquire(guarded, RES("c:quarantine"), o, NULL, &lock, &err));
  CHECK(lock == NULL && err != NULL);
  size_t quarantined = 0;
  for (size_t i = 0; i < quorumlock_error_node_count(err); i++) {
    uint32_t kind = 99;
    EXPECT(QL_OK, quorumlock_error_node_kind(err, i, &kind));
    if (kind == QL_NODE_QUARANTINED) quarantined++;
  }
  CHECK(quarantined == quorumlock_client_node_count(guarded));
  quorumlock_error_free(err);
  quorumlock_client_free(guarded);

  /* Quarantine off: the same nodes take the lock. */
  quorumlock_client *unguarded = connect_nodes_quarantine(true, QL_QUARANTINE_OFF);
  EXPECT(QL_OK, quorumlock_client_acquire(unguarded, RES("c:quarantine"), o, NULL, &lock, NULL));
  EXPECT(QL_OK, quorumlock_lock_release(lock, NULL, NULL));
  quorumlock_lock_free(lock);
  quorumlock_lock_options_free(o);
  quorumlock_client_free(unguarded);
  puts("quarantine ok");
}

int main(int argc, char **argv) {
  CHECK(argc == 2);
  if (strcmp(argv[1], "tokens") == 0) {
    quorumlock_client *c = connect_nodes(true);
    tokens(c);
    quorumlock_client_free(c);
  } else if (strcmp(argv[1], "quarantine") == 0) {
    quarantine();
  } else {
    CHECK(!"unknown mode");
  }
  return 0;
}
