/* The bad-input matrix: every NULL pointer, bad bytes, zero lengths, odd TTLs, tiny
 * buffers, double release, free(NULL). Each must return a code, never crash. */
#include "common.h"

static void config_and_client(void) {
  quorumlock_config *cfg = NULL;
  quorumlock_client *client = NULL;
  quorumlock_error *err = NULL;
  EXPECT(QL_INVALID, quorumlock_config_new(NULL));
  EXPECT(QL_INVALID, quorumlock_config_add_node(NULL, RES("redis://127.0.0.1:1"), NULL));
  EXPECT(QL_INVALID, quorumlock_config_set_drift(NULL, 0.01, 2));
  EXPECT(QL_INVALID, quorumlock_config_set_max_ttl_ms(NULL, 1000));
  EXPECT(QL_INVALID, quorumlock_config_set_connect_timeout_ms(NULL, 1000));
  EXPECT(QL_INVALID, quorumlock_config_set_key_prefix(NULL, RES("p:")));
  EXPECT(QL_INVALID, quorumlock_config_set_require_quorum(NULL, true));
  EXPECT(QL_INVALID, quorumlock_config_set_notify(NULL, false));
  EXPECT(QL_INVALID, quorumlock_config_set_lock_options(NULL, NULL));
  EXPECT(QL_INVALID, quorumlock_client_new(NULL, &client, NULL));
  CHECK(client == NULL);

  EXPECT(QL_OK, quorumlock_config_new(&cfg));
  EXPECT(QL_INVALID, quorumlock_config_set_lock_options(cfg, NULL));
  EXPECT(QL_INVALID, quorumlock_config_set_key_prefix(cfg, NULL, 3));
  /* No nodes yet. */
  EXPECT(QL_INVALID, quorumlock_client_new(cfg, &client, &err));
  CHECK(show_error(err) == QL_INVALID);
  /* Invalid UTF-8, NULL with a length, an unknown scheme. */
  const uint8_t bad[] = {'r', 'e', 0xff, 0xfe};
  err = NULL;
  EXPECT(QL_INVALID, quorumlock_config_add_node(cfg, bad, sizeof bad, &err));
  CHECK(show_error(err) == QL_INVALID);
  EXPECT(QL_INVALID, quorumlock_config_add_node(cfg, NULL, 10, NULL));
  EXPECT(QL_OK, quorumlock_config_add_node(cfg, RES("http://127.0.0.1:1"), NULL));
  err = NULL;
  EXPECT(QL_INVALID, quorumlock_client_new(cfg, &client, &err));
  CHECK(show_error(err) == QL_INVALID);
  quorumlock_config_free(cfg);

  /* Bad drift and max TTL are refused when connecting; NULL out is refused first. */
  EXPECT(QL_OK, quorumlock_config_new(&cfg));
  EXPECT(QL_OK, quorumlock_config_add_node(cfg, RES("redis://127.0.0.1:1"), NULL));
  EXPECT(QL_INVALID, quorumlock_client_new(cfg, NULL, NULL));
  EXPECT(QL_OK, quorumlock_config_set_drift(cfg, 0.9, 2));
  EXPECT(QL_INVALID, quorumlock_client_new(cfg, &client, NULL));
  EXPECT(QL_OK, quorumlock_config_set_drift(cfg, 0.01, 2));
  EXPECT(QL_OK, quorumlock_config_set_max_ttl_ms(cfg, 0));
  EXPECT(QL_INVALID, quorumlock_client_new(cfg, &client, NULL));
  /* The same server twice (another db) counts once. */
  EXPECT(QL_OK, quorumlock_config_set_max_ttl_ms(cfg, 60000));
  EXPECT(QL_OK, quorumlock_config_add_node(cfg, RES("redis://127.0.0.1:1/1"), NULL));
  EXPECT(QL_OK, quorumlock_client_new(cfg, &client, NULL));
  CHECK(quorumlock_client_node_count(client) == 1);
  quorumlock_client_free(client);
  quorumlock_config_free(cfg);
  quorumlock_config_free(NULL);
  quorumlock_client_free(NULL);
  CHECK(quorumlock_client_node_count(NULL) == 0);
}

static void options_and_cancel(void) {
  EXPECT(QL_INVALID, quorumlock_lock_options_new(NULL));
  EXPECT(QL_INVALID, quorumlock_lock_options_set_ttl_ms(NULL, 1000));
  EXPECT(QL_INVALID, quorumlock_lock_options_set_retry_count(NULL, 1));
  EXPECT(QL_INVALID, quorumlock_lock_options_set_retry_delay_ms(NULL, 1, 1));
  EXPECT(QL_INVALID, quorumlock_lock_options_set_min_validity_ms(NULL, 1));
  EXPECT(QL_INVALID, quorumlock_lock_options_set_node_timeout_ms(NULL, 1));
  EXPECT(QL_INVALID, quorumlock_lock_options_set_auto_extend(NULL, true, 0));
  EXPECT(QL_INVALID, quorumlock_lock_options_set_limits(NULL, 1, 1));
  EXPECT(QL_INVALID, quorumlock_lock_options_set_on_lost(NULL, NULL, NULL));
  quorumlock_lock_options_free(NULL);
  EXPECT(QL_INVALID, quorumlock_cancel_new(NULL));
  EXPECT(QL_INVALID, quorumlock_cancel_trigger(NULL));
  quorumlock_cancel_free(NULL);
}

static void errors_and_names(void) {
  char buf[8];
  size_t n = 0;
  uint32_t kind = 0;
  uint64_t us = 0;
  CHECK(quorumlock_error_code(NULL) == QL_INVALID);
  EXPECT(QL_INVALID, quorumlock_error_message(NULL, buf, sizeof buf, &n));
  CHECK(quorumlock_error_attempts(NULL) == 0);
  CHECK(quorumlock_error_lost_reason(NULL) == QL_LOST_NONE);
  CHECK(quorumlock_error_node_count(NULL) == 0);
  EXPECT(QL_INVALID, quorumlock_error_node_kind(NULL, 0, &kind));
  EXPECT(QL_INVALID, quorumlock_error_node_latency_us(NULL, 0, &us));
  EXPECT(QL_INVALID, quorumlock_error_node_address(NULL, 0, buf, sizeof buf, &n));
  quorumlock_error_free(NULL);
  CHECK(strcmp(quorumlock_result_name(QL_BUSY), "QL_BUSY") == 0);
  CHECK(strcmp(quorumlock_result_name(QL_INTERNAL), "QL_INTERNAL") == 0);
  CHECK(strcmp(quorumlock_result_name(12345), "QL_UNKNOWN") == 0);
  CHECK(strcmp(quorumlock_node_kind_name(QL_NODE_PENDING), "Pending") == 0);
  CHECK(strcmp(quorumlock_node_kind_name(777), "Unknown") == 0);

  /* Tiny buffers on a real error object. */
  quorumlock_config *cfg = NULL;
  quorumlock_client *client = NULL;
  quorumlock_error *err = NULL;
  EXPECT(QL_OK, quorumlock_config_new(&cfg));
  EXPECT(QL_INVALID, quorumlock_client_new(cfg, &client, &err));
  EXPECT(QL_OK, quorumlock_error_message(err, NULL, 0, &n));
  CHECK(n > 10);
  memset(buf, 'x', sizeof buf);
  EXPECT(QL_OK, quorumlock_error_message(err, buf, 1, NULL));
  CHECK(buf[0] == '\0' && buf[1] == 'x');
  EXPECT(QL_OK, quorumlock_error_message(err, buf, sizeof buf, &n));
  CHECK(strlen(buf) == sizeof buf - 1 && n > sizeof buf);
  EXPECT(QL_INVALID, quorumlock_error_message(err, NULL, 5, &n));
  EXPECT(QL_INVALID, quorumlock_error_node_kind(err, 0, &kind));
  EXPECT(QL_INVALID, quorumlock_error_node_kind(err, 0, NULL));
  quorumlock_error_free(err);
  quorumlock_config_free(cfg);
}

static void locks(quorumlock_client *c) {
  quorumlock_lock_options *o = slow_options(10000);
  quorumlock_lock *lock = NULL;
  quorumlock_error *err = NULL;
  EXPECT(QL_INVALID, quorumlock_client_acquire(NULL, RES("r"), o, NULL, &lock, NULL));
  EXPECT(QL_INVALID, quorumlock_client_acquire(c, RES("r"), o, NULL, NULL, NULL));
  EXPECT(QL_INVALID, quorumlock_client_acquire(c, NULL, 1, o, NULL, &lock, NULL));
  EXPECT(QL_INVALID, quorumlock_client_acquire(c, (const uint8_t *)"", 0, o, NULL, &lock, &err));
  CHECK(show_error(err) == QL_INVALID);
  EXPECT(QL_INVALID, quorumlock_client_acquire(c, NULL, 0, o, NULL, &lock, NULL));
  uint8_t big[1025];
  memset(big, 'a', sizeof big);
  EXPECT(QL_INVALID, quorumlock_client_try_acquire(c, big, sizeof big, o, &lock, NULL));
  EXPECT(QL_INVALID, quorumlock_client_try_acquire(NULL, RES("r"), o, &lock, NULL));
  EXPECT(QL_INVALID, quorumlock_client_acquire_timeout(c, RES("r"), o, 10, NULL, NULL, NULL));
  EXPECT(QL_INVALID, quorumlock_client_acquire_multi(c, NULL, NULL, 1, o, NULL, &lock, NULL));
  EXPECT(QL_INVALID, quorumlock_client_acquire_multi(c, NULL, NULL, 0, o, NULL, &lock, NULL));
  const uint8_t *names[] = {(const uint8_t *)"a", NULL};
  size_t lens[] = {1, 4};
  EXPECT(QL_INVALID, quorumlock_client_acquire_multi(c, names, NULL, 2, o, NULL, &lock, NULL));
  EXPECT(QL_INVALID, quorumlock_client_acquire_multi(c, names, lens, 2, o, NULL, &lock, NULL));
  /* Zero and huge TTLs. */
  EXPECT(QL_OK, quorumlock_lock_options_set_ttl_ms(o, 0));
  EXPECT(QL_INVALID, quorumlock_client_acquire(c, RES("r"), o, NULL, &lock, NULL));
  EXPECT(QL_OK, quorumlock_lock_options_set_ttl_ms(o, UINT64_MAX));
  EXPECT(QL_INVALID, quorumlock_client_acquire(c, RES("r"), o, NULL, &lock, NULL));
  CHECK(lock == NULL);
  EXPECT(QL_OK, quorumlock_lock_options_set_ttl_ms(o, 10000));

  /* NULL lock handles. */
  char value[41];
  size_t n = 0;
  EXPECT(QL_INVALID, quorumlock_lock_extend(NULL, 1000, NULL));
  EXPECT(QL_INVALID, quorumlock_lock_release(NULL, NULL, NULL));
  EXPECT(QL_INVALID, quorumlock_lock_set_auto_extend(NULL, true, NULL));
  EXPECT(QL_INVALID, quorumlock_lock_value(NULL, value, sizeof value, &n));
  CHECK(quorumlock_lock_remaining_ms(NULL) == 0);
  quorumlock_lock_free(NULL);

  /* A real lock: tiny buffers, bad TTLs, double release, use after release. */
  EXPECT(QL_OK, quorumlock_client_acquire(c, RES("c:bad"), o, NULL, &lock, NULL));
  EXPECT(QL_OK, quorumlock_lock_value(lock, value, 5, &n));
  CHECK(n == 40 && strlen(value) == 4);
  EXPECT(QL_OK, quorumlock_lock_value(lock, NULL, 0, &n));
  EXPECT(QL_INVALID, quorumlock_lock_extend(lock, 0, NULL));
  EXPECT(QL_INVALID, quorumlock_lock_extend(lock, UINT64_MAX, NULL));
  EXPECT(QL_OK, quorumlock_lock_release(lock, NULL, NULL));
  bool held = true;
  EXPECT(QL_OK, quorumlock_lock_release(lock, &held, NULL));
  CHECK(held);
  err = NULL;
  EXPECT(QL_INVALID, quorumlock_lock_extend(lock, 1000, &err));
  CHECK(show_error(err) == QL_INVALID);
  EXPECT(QL_INVALID, quorumlock_lock_set_auto_extend(lock, true, NULL));
  EXPECT(QL_OK, quorumlock_lock_set_auto_extend(lock, false, NULL));
  quorumlock_lock_free(lock);
  quorumlock_lock_options_free(o);
}

int main(void) {
  config_and_client();
  options_and_cancel();
  errors_and_names();
  quorumlock_client *c = connect_nodes(true);
  locks(c);
  quorumlock_client_free(c);
  puts("bad input ok");
  return 0;
}
