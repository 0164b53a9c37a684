#define _POSIX_C_SOURCE 200809L
/* Auto-extension and the lost callback: prints HELD, the test deletes the keys on every
 * node, the watchdog finds them gone and the callback fires on an engine thread. */
#include <pthread.h>
#include <time.h>

#include "common.h"

struct seen {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int calls;
  uint32_t reason;
  uint32_t code;
  size_t nodes;
  quorumlock_result blocking_call;
  quorumlock_lock *lock;
};

static void on_lost(void *userdata, uint32_t reason, const quorumlock_error *detail) {
  struct seen *s = userdata;
  /* Blocking calls are refused on engine threads. */
  quorumlock_result r = quorumlock_lock_extend(s->lock, 5000, NULL);
  pthread_mutex_lock(&s->mu);
  s->calls++;
  s->reason = reason;
  s->code = quorumlock_error_code(detail);
  s->nodes = quorumlock_error_node_count(detail);
  s->blocking_call = r;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

int main(void) {
  quorumlock_client *c = connect_nodes(true);
  struct seen s = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, QL_OK, NULL};
  quorumlock_lock_options *o = slow_options(3000);
  EXPECT(QL_OK, quorumlock_lock_options_set_auto_extend(o, true, 500));
  EXPECT(QL_OK, quorumlock_lock_options_set_on_lost(o, on_lost, &s));

  pthread_mutex_lock(&s.mu);
  EXPECT(QL_OK, quorumlock_client_acquire(c, RES("c:lost"), o, NULL, &s.lock, NULL));
  printf("HELD\n");
  fflush(stdout);

  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 30;
  while (s.calls == 0) {
    if (pthread_cond_timedwait(&s.cv, &s.mu, &deadline) != 0) break;
  }
  int calls = s.calls;
  pthread_mutex_unlock(&s.mu);
  CHECK(calls == 1);
  CHECK(s.reason == QL_LOST_EXPIRED || s.reason == QL_LOST_TAKEN);
  CHECK(s.code == QL_LOST);
  CHECK(s.nodes == 3);
  CHECK(s.blocking_call == QL_INVALID);

  CHECK(quorumlock_lock_remaining_ms(s.lock) == 0);
  quorumlock_error *err = NULL;
  quorumlock_result r = quorumlock_lock_extend(s.lock, 3000, &err);
  CHECK(r != QL_OK);
  show_error(err);
  EXPECT(QL_INVALID, quorumlock_lock_set_auto_extend(s.lock, true, NULL));
  EXPECT(QL_OK, quorumlock_lock_release(s.lock, NULL, NULL));
  quorumlock_lock_free(s.lock);

  /* A released lock never calls back. */
  quorumlock_lock *lock = NULL;
  EXPECT(QL_OK, quorumlock_client_acquire(c, RES("c:lost2"), o, NULL, &lock, NULL));
  EXPECT(QL_OK, quorumlock_lock_release(lock, NULL, NULL));
  quorumlock_lock_free(lock);
  CHECK(s.calls == 1);

  quorumlock_lock_options_free(o);
  quorumlock_client_free(c);
  puts("lost ok");
  return 0;
}
