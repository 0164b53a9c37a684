/* Acquire, extend, release; busy; cancel; quorum lost. Mode in argv[1]. */
#include "common.h"

static void lock_release_extend(quorumlock_client *c) {
  quorumlock_lock_options *o = slow_options(10000);
  quorumlock_lock *lock = NULL;
  EXPECT(QL_OK, quorumlock_client_acquire(c, RES("c:basic"), o, NULL, &lock, NULL));
  CHECK(lock != NULL);
  uint64_t left = quorumlock_lock_remaining_ms(lock);
  CHECK(left > 0 && left <= 10000);

  char value[64];
  size_t n = 0;
  EXPECT(QL_OK, quorumlock_lock_value(lock, value, sizeof value, &n));
  CHECK(n == 40 && strlen(value) == 40);

  EXPECT(QL_OK, quorumlock_lock_extend(lock, 20000, NULL));
  CHECK(quorumlock_lock_remaining_ms(lock) > 10000);

  bool held = false;
  EXPECT(QL_OK, quorumlock_lock_release(lock, &held, NULL));
  CHECK(held);
  CHECK(quorumlock_lock_remaining_ms(lock) == 0);
  quorumlock_lock_free(lock);

  /* Binary resource names with NUL bytes, and several resources at once. */
  const uint8_t bin[] = {0, 0xff, 'x', 0};
  const uint8_t *names[] = {bin, (const uint8_t *)"c:other"};
  size_t lens[] = {sizeof bin, 7};
  EXPECT(QL_OK, quorumlock_client_acquire_multi(c, names, lens, 2, o, NULL, &lock, NULL));
  EXPECT(QL_OK, quorumlock_lock_release(lock, NULL, NULL));
  quorumlock_lock_free(lock);
  quorumlock_lock_options_free(o);
  puts("lock ok");
}

static void busy(quorumlock_client *c) {
  quorumlock_lock_options *o = slow_options(10000);
  quorumlock_lock *first = NULL, *second = NULL;
  EXPECT(QL_OK, quorumlock_client_acquire(c, RES("c:busy"), o, NULL, &first, NULL));

  quorumlock_error *err = NULL;
  EXPECT(QL_BUSY, quorumlock_client_try_acquire(c, RES("c:busy"), o, &second, &err));
  CHECK(second == NULL && err != NULL);
  CHECK(quorumlock_error_code(err) == QL_BUSY);
  CHECK(quorumlock_error_attempts(err) == 1);
  size_t nodes = quorumlock_error_node_count(err), held = 0;
  CHECK(nodes == quorumlock_client_node_count(c));
  for (size_t i = 0; i < nodes; i++) {
    uint32_t kind = 99;
    uint64_t us = 0;
    char addr[64];
    size_t n = 0;
    EXPECT(QL_OK, quorumlock_error_node_kind(err, i, &kind));
    EXPECT(QL_OK, quorumlock_error_node_latency_us(err, i, &us));
    if (kind == QL_NODE_HELD_BY_OTHER) {
      held++;
      CHECK(strcmp(quorumlock_node_kind_name(kind), "HeldByOther") == 0);
      CHECK(us != QL_NO_LATENCY);
    }
    EXPECT(QL_OK, quorumlock_error_node_address(err, i, addr, sizeof addr, &n));
    CHECK(strncmp(addr, "127.0.0.1:", 10) == 0 && n == strlen(addr));
  }
  CHECK(held >= 2);
  uint32_t kind = 0;
  EXPECT(QL_INVALID, quorumlock_error_node_kind(err, nodes, &kind));
  CHECK(show_error(err) == QL_BUSY);

  err = NULL;
  EXPECT(QL_BUSY, quorumlock_client_acquire_timeout(c, RES("c:busy"), o, 300, NULL, &second, &err));
  CHECK(quorumlock_error_attempts(err) >= 2);
  quorumlock_error_free(err);

  quorumlock_cancel *cancel = NULL;
  EXPECT(QL_OK, quorumlock_cancel_new(&cancel));
  EXPECT(QL_OK, quorumlock_cancel_trigger(cancel));
  EXPECT(QL_CANCELLED, quorumlock_client_acquire(c, RES("c:busy"), o, cancel, &second, NULL));
  quorumlock_cancel_free(cancel);

  EXPECT(QL_OK, quorumlock_lock_release(first, NULL, NULL));
  EXPECT(QL_OK, quorumlock_client_try_acquire(c, RES("c:busy"), o, &second, NULL));
  EXPECT(QL_OK, quorumlock_lock_release(second, NULL, NULL));
  quorumlock_lock_free(first);
  quorumlock_lock_free(second);
  quorumlock_lock_options_free(o);
  puts("busy ok");
}

/* Run after the test killed a majority of the nodes. */
static void quorum(quorumlock_client *c) {
  quorumlock_lock_options *o = slow_options(10000);
  quorumlock_lock *lock = NULL;
  quorumlock_error *err = NULL;
  EXPECT(QL_QUORUM, quorumlock_client_try_acquire(c, RES("c:quorum"), o, &lock, &err));
  CHECK(lock == NULL);
  size_t nodes = quorumlock_error_node_count(err), failed = 0;
  CHECK(nodes == 3);
  for (size_t i = 0; i < nodes; i++) {
    uint32_t kind = 0;
    EXPECT(QL_OK, quorumlock_error_node_kind(err, i, &kind));
    if (kind != QL_NODE_OK) failed++;
  }
  CHECK(failed >= 2);
  CHECK(show_error(err) == QL_QUORUM);
  quorumlock_lock_options_free(o);
  puts("quorum ok");
}

int main(int argc, char **argv) {
  CHECK(argc == 2);
  CHECK(strcmp(quorumlock_version(), "0.2.0") == 0);
  CHECK(QUORUMLOCK_VERSION_NUMBER == ((QUORUMLOCK_VERSION_MAJOR << 16) | (QUORUMLOCK_VERSION_MINOR << 8) | QUORUMLOCK_VERSION_PATCH));
  quorumlock_client *c = connect_nodes(strcmp(argv[1], "quorum") != 0);
  if (strcmp(argv[1], "lock") == 0) lock_release_extend(c);
  else if (strcmp(argv[1], "busy") == 0) busy(c);
  else if (strcmp(argv[1], "quorum") == 0) quorum(c);
  else CHECK(!"unknown mode");
  quorumlock_client_free(c);
  return 0;
}
