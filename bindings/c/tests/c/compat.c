/* What migrating users meet: warnings through a callback, caller-given lock values, one
 * report per attempt, release and extend by value with bare keys, polled losses, and a Redis
 * Cluster as one member. Mode in argv[1]: "warnings" on fresh nodes without persistence,
 * "value" and "byvalue" on durable nodes, "cluster" with QL_REDIS_CLUSTER set to a
 * redis+cluster:// URL. */
#include <stdatomic.h>

#include "common.h"

static atomic_int not_durable, duplicate, other_warnings;
static uint32_t key_format = QL_KEY_BRACED;

static void on_warning(void *userdata, const char *code, int64_t node, const char *message) {
  CHECK(userdata == (void *)&not_durable);
  CHECK(message != NULL && strlen(message) > 10);
  if (strcmp(code, "QL_W_NOT_DURABLE") == 0) {
    CHECK(node >= 0);
    CHECK(strstr(message, "appendfsync always") != NULL);
    atomic_fetch_add(&not_durable, 1);
  } else if (strcmp(code, "QL_W_DUPLICATE_NODE") == 0) {
    atomic_fetch_add(&duplicate, 1);
  } else {
    atomic_fetch_add(&other_warnings, 1);
  }
}

/* A client over QL_NODES (and `extra`, if not NULL) with the given quarantine mode and the
 * warning callback. */
static quorumlock_client *client_with(uint32_t quarantine, const char *extra) {
  const char *env = getenv("QL_NODES");
  CHECK(env != NULL);
  quorumlock_config *cfg = NULL;
  EXPECT(QL_OK, quorumlock_config_new(&cfg));
  for (const char *p = env; *p;) {
    size_t len = strcspn(p, ",");
    EXPECT(QL_OK, quorumlock_config_add_node(cfg, (const uint8_t *)p, len, NULL));
    p += len + (p[len] == ',');
  }
  if (extra) EXPECT(QL_OK, quorumlock_config_add_node(cfg, RES(extra), NULL));
  EXPECT(QL_OK, quorumlock_config_set_connect_timeout_ms(cfg, 10000));
  EXPECT(QL_OK, quorumlock_config_set_require_quorum(cfg, true));
  EXPECT(QL_OK, quorumlock_config_set_quarantine(cfg, quarantine, 0));
  EXPECT(QL_INVALID, quorumlock_config_set_key_format(cfg, 7));
  EXPECT(QL_INVALID, quorumlock_config_set_key_format(NULL, QL_KEY_BARE));
  if (key_format == QL_KEY_BARE) EXPECT(QL_OK, quorumlock_config_set_key_prefix(cfg, NULL, 0));
  EXPECT(QL_OK, quorumlock_config_set_key_format(cfg, key_format));
  /* Calls without options (by value) use the client's defaults: slow enough for valgrind. */
  quorumlock_lock_options *defaults = slow_options(5000);
  EXPECT(QL_OK, quorumlock_config_set_lock_options(cfg, defaults));
  quorumlock_lock_options_free(defaults);
  EXPECT(QL_OK, quorumlock_config_set_warning_callback(cfg, on_warning, &not_durable));
  quorumlock_client *client = NULL;
  quorumlock_error *err = NULL;
  quorumlock_result r = quorumlock_client_new(cfg, &client, &err);
  if (r != QL_OK) show_error(err);
  CHECK(r == QL_OK);
  quorumlock_config_free(cfg);
  return client;
}

static void lock_and_release(quorumlock_client *c, const char *res, quorumlock_lock_options *o) {
  quorumlock_lock *lock = NULL;
  quorumlock_error *err = NULL;
  quorumlock_result r = quorumlock_client_acquire(c, RES(res), o, NULL, &lock, &err);
  if (r != QL_OK) show_error(err);
  CHECK(r == QL_OK);
  EXPECT(QL_OK, quorumlock_lock_release(lock, NULL, NULL));
  quorumlock_lock_free(lock);
}

static void warnings(void) {
  quorumlock_client *c = client_with(QL_QUARANTINE_OFF, NULL);
  quorumlock_lock_options *o = slow_options(5000);
  lock_and_release(c, "w", o);
  lock_and_release(c, "w", o);
  CHECK(atomic_load(&not_durable) == (int)quorumlock_client_node_count(c));
  quorumlock_client_free(c);
  /* The first node again, as another database: counted once, with a warning. */
  const char *env = getenv("QL_NODES");
  char again[256];
  size_t len = strcspn(env, ",");
  CHECK(len + 3 < sizeof again);
  snprintf(again, sizeof again, "%.*s/1", (int)len, env);
  c = client_with(QL_QUARANTINE_OFF, again);
  CHECK(quorumlock_client_node_count(c) == 3);
  CHECK(atomic_load(&duplicate) == 1);
  lock_and_release(c, "w", o);
  quorumlock_lock_options_free(o);
  quorumlock_client_free(c);
  CHECK(atomic_load(&other_warnings) == 0);
  printf("warnings ok\n");
}

static void value(void) {
  quorumlock_client *c = client_with(QL_QUARANTINE_ON, NULL);
  quorumlock_lock_options *o = slow_options(5000);
  const char *id = "0f3b2c6e-7d41-4a8e-b9c2-5e6f7a8b9c0d";
  EXPECT(QL_OK, quorumlock_lock_options_set_value(o, RES(id), NULL));
  quorumlock_lock *lock = NULL;
  EXPECT(QL_OK, quorumlock_client_acquire(c, RES("given"), o, NULL, &lock, NULL));
  char buf[64];
  size_t n = 0;
  EXPECT(QL_OK, quorumlock_lock_value(lock, buf, sizeof buf, &n));
  CHECK(n == strlen(id) && strcmp(buf, id) == 0);
  /* A second acquisition fails on every attempt; each attempt keeps its own report. */
  EXPECT(QL_OK, quorumlock_lock_options_set_value(o, NULL, 0, NULL));
  EXPECT(QL_OK, quorumlock_lock_options_set_retry_count(o, 2));
  quorumlock_error *err = NULL;
  quorumlock_lock *second = NULL;
  EXPECT(QL_BUSY, quorumlock_client_acquire(c, RES("given"), o, NULL, &second, &err));
  CHECK(quorumlock_error_attempt_count(err) == 3);
  uint32_t kind = 99;
  for (size_t a = 0; a < 3; a++) {
    EXPECT(QL_OK, quorumlock_error_attempt_node_kind(err, a, 0, &kind));
    CHECK(kind == QL_NODE_HELD_BY_OTHER || kind == QL_NODE_PENDING);
  }
  EXPECT(QL_INVALID, quorumlock_error_attempt_node_kind(err, 3, 0, &kind));
  EXPECT(QL_INVALID, quorumlock_error_attempt_node_kind(err, 0, 3, &kind));
  EXPECT(QL_INVALID, quorumlock_error_attempt_node_kind(NULL, 0, 0, &kind));
  CHECK(quorumlock_error_attempt_count(NULL) == 0);
  quorumlock_error_free(err);
  EXPECT(QL_OK, quorumlock_lock_release(lock, NULL, NULL));
  quorumlock_lock_free(lock);
  /* Bad values: too short (checked when acquiring), invalid UTF-8 (checked at once). */
  EXPECT(QL_OK, quorumlock_lock_options_set_value(o, RES("short"), NULL));
  err = NULL;
  EXPECT(QL_INVALID, quorumlock_client_acquire(c, RES("given"), o, NULL, &second, &err));
  quorumlock_error_free(err);
  EXPECT(QL_INVALID, quorumlock_lock_options_set_value(o, (const uint8_t *)"\xff\xfe", 2, NULL));
  EXPECT(QL_INVALID, quorumlock_lock_options_set_value(NULL, RES(id), NULL));
  quorumlock_lock_options_free(o);
  quorumlock_client_free(c);
  printf("value ok\n");
}

/* Bare keys shared with another library, and a lock released and extended by its value (as
 * another process would); the lock object learns the loss by polling. Leaves "bv:left" held
 * with the value below for the test to read with redis-cli. */
static void byvalue(void) {
  key_format = QL_KEY_BARE;
  quorumlock_client *c = client_with(QL_QUARANTINE_ON, NULL);
  quorumlock_lock_options *o = slow_options(5000);
  const char *id = "0f3b2c6e-7d41-4a8e-b9c2-5e6f7a8b9c0d";
  EXPECT(QL_OK, quorumlock_lock_options_set_value(o, RES(id), NULL));
  quorumlock_lock *lock = NULL;
  EXPECT(QL_OK, quorumlock_client_acquire(c, RES("bv"), o, NULL, &lock, NULL));
  CHECK(quorumlock_lock_ttl_ms(lock) == 5000 && quorumlock_lock_ttl_ms(NULL) == 0);
  CHECK(quorumlock_lock_lost_reason(lock) == QL_LOST_NONE);
  const uint8_t *res[] = {(const uint8_t *)"bv"};
  size_t lens[] = {2};
  uint64_t validity = 0;
  EXPECT(QL_OK, quorumlock_client_extend_value(c, res, lens, 1, RES(id), 8000, &validity, NULL));
  CHECK(validity > 7000 && validity <= 8000);
  quorumlock_error *err = NULL;
  const char *other = "ffffffffffffffffffffffffffffffff";
  EXPECT(QL_LOST, quorumlock_client_extend_value(c, res, lens, 1, RES(other), 8000, NULL, &err));
  quorumlock_error_free(err);
  bool held = false;
  EXPECT(QL_OK, quorumlock_client_release_value(c, res, lens, 1, RES(id), &held, NULL));
  CHECK(held);
  EXPECT(QL_OK, quorumlock_client_release_value(c, res, lens, 1, RES(id), &held, NULL));
  CHECK(!held);
  /* The lock object finds its keys gone at its next extend, and reports the loss. */
  EXPECT(QL_LOST, quorumlock_lock_extend(lock, 5000, NULL));
  CHECK(quorumlock_lock_lost_reason(lock) == QL_LOST_EXPIRED);
  CHECK(quorumlock_lock_lost_reason(NULL) == QL_LOST_NONE);
  quorumlock_lock_free(lock);
  /* Bad input. */
  EXPECT(QL_INVALID, quorumlock_client_release_value(NULL, res, lens, 1, RES(id), NULL, NULL));
  EXPECT(QL_INVALID, quorumlock_client_release_value(c, res, lens, 0, RES(id), NULL, NULL));
  EXPECT(QL_INVALID, quorumlock_client_release_value(c, res, lens, 1, RES("short"), NULL, NULL));
  EXPECT(QL_INVALID, quorumlock_client_release_value(c, res, lens, 1, (const uint8_t *)"\xff\xfe", 2,
                                                     NULL, NULL));
  EXPECT(QL_INVALID, quorumlock_client_extend_value(c, res, lens, 1, RES(id), 0, NULL, NULL));
  EXPECT(QL_INVALID, quorumlock_client_extend_value(c, res, lens, 1, NULL, 36, 1000, NULL, NULL));
  /* Left held for the test: its key is the bare name. */
  EXPECT(QL_OK, quorumlock_client_acquire(c, RES("bv:left"), o, NULL, &lock, NULL));
  quorumlock_lock_options_free(o);
  printf("byvalue ok\n");
  fflush(stdout);
  _exit(0);
}

static void cluster(void) {
  const char *url = getenv("QL_REDIS_CLUSTER");
  CHECK(url != NULL && strncmp(url, "redis+cluster://", 16) == 0);
  quorumlock_client *c = client_with(QL_QUARANTINE_ON, url);
  CHECK(quorumlock_client_node_count(c) == 4);
  const uint8_t *res[] = {(const uint8_t *)"alpha", (const uint8_t *)"bravo",
                          (const uint8_t *)"charlie"};
  size_t lens[] = {5, 5, 7};
  quorumlock_lock_options *o = slow_options(5000);
  quorumlock_lock *lock = NULL;
  quorumlock_error *err = NULL;
  quorumlock_result r = quorumlock_client_acquire_multi(c, res, lens, 3, o, NULL, &lock, &err);
  if (r != QL_OK) show_error(err);
  CHECK(r == QL_OK);
  EXPECT(QL_OK, quorumlock_lock_release(lock, NULL, NULL));
  quorumlock_lock_free(lock);
  quorumlock_lock_options_free(o);
  quorumlock_client_free(c);
  printf("cluster ok\n");
}

int main(int argc, char **argv) {
  CHECK(argc == 2);
  if (strcmp(argv[1], "warnings") == 0) warnings();
  else if (strcmp(argv[1], "value") == 0) value();
  else if (strcmp(argv[1], "byvalue") == 0) byvalue();
  else if (strcmp(argv[1], "cluster") == 0) cluster();
  else CHECK(!"unknown mode");
  return 0;
}
