#define _POSIX_C_SOURCE 200809L
/* Threads contend for one resource through one client; at most one may be inside. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "common.h"

#define THREADS 4
#define ROUNDS 5

static quorumlock_client *client;
static quorumlock_lock_options *opts;
static atomic_int inside;
static atomic_int max_inside;
static atomic_int done;

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; i++) {
    quorumlock_lock *lock = NULL;
    quorumlock_error *err = NULL;
    quorumlock_result r =
        quorumlock_client_acquire_timeout(client, RES("c:threads"), opts, 60000, NULL, &lock, &err);
    if (r != QL_OK) show_error(err);
    CHECK(r == QL_OK);
    int now = atomic_fetch_add(&inside, 1) + 1;
    int prev = atomic_load(&max_inside);
    while (now > prev && !atomic_compare_exchange_weak(&max_inside, &prev, now)) {
    }
    nanosleep(&(struct timespec){0, 2000000}, NULL);
    atomic_fetch_sub(&inside, 1);
    CHECK(quorumlock_lock_remaining_ms(lock) > 0);
    EXPECT(QL_OK, quorumlock_lock_release(lock, NULL, NULL));
    quorumlock_lock_free(lock);
    atomic_fetch_add(&done, 1);
  }
  return NULL;
}

int main(void) {
  client = connect_nodes(true);
  opts = slow_options(10000);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
  for (int i = 0; i < THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
  CHECK(atomic_load(&done) == THREADS * ROUNDS);
  CHECK(atomic_load(&max_inside) == 1);
  quorumlock_lock_options_free(opts);
  quorumlock_client_free(client);
  puts("threads ok");
  return 0;
}
