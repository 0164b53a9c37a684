/* Metrics snapshots: exact client totals after acquire, extend, a busy try, release; node
 * figures (polled: late replies land in the background); the Prometheus text; NULL
 * pointers, out-of-range indexes, unknown selectors. */
#define _POSIX_C_SOURCE 200809L

#include <time.h>

#include "common.h"

static quorumlock_metrics *snap(quorumlock_client *c) {
  quorumlock_metrics *m = NULL;
  EXPECT(QL_OK, quorumlock_client_metrics(c, &m));
  CHECK(m != NULL);
  return m;
}

static uint64_t op_calls(const quorumlock_metrics *m, uint32_t op, uint32_t code) {
  uint64_t n = 12345;
  EXPECT(QL_OK, quorumlock_metrics_op_calls(m, op, code, &n));
  return n;
}

static uint64_t op_failed(const quorumlock_metrics *m, uint32_t op) {
  uint64_t n = 12345;
  EXPECT(QL_OK, quorumlock_metrics_op_failed(m, op, &n));
  return n;
}

static uint64_t replies(const quorumlock_metrics *m, size_t node, uint32_t kind) {
  uint64_t n = 12345;
  EXPECT(QL_OK, quorumlock_metrics_node_replies(m, node, kind, &n));
  return n;
}

static uint64_t requests(const quorumlock_metrics *m, size_t node) {
  uint64_t n = 12345;
  EXPECT(QL_OK, quorumlock_metrics_node_requests(m, node, &n));
  return n;
}

/* The whole Prometheus text, with the two-call pattern; the caller frees it. */
static char *prometheus(const quorumlock_metrics *m) {
  size_t n = 0;
  EXPECT(QL_OK, quorumlock_metrics_prometheus(m, NULL, 0, &n));
  CHECK(n > 0);
  char *text = malloc(n + 1);
  CHECK(text != NULL);
  size_t again = 0;
  EXPECT(QL_OK, quorumlock_metrics_prometheus(m, text, n + 1, &again));
  CHECK(again == n && strlen(text) == n);
  return text;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A fresh client: zero totals. The node figures already count the connect round, so the
 * snapshot is returned as the baseline for the node checks. */
static quorumlock_metrics *fresh(quorumlock_client *c) {
  quorumlock_metrics *m = snap(c);
  CHECK(quorumlock_metrics_acquire_attempts(m) == 0);
  CHECK(quorumlock_metrics_lost(m) == 0 && quorumlock_metrics_wakeups(m) == 0);
  CHECK(quorumlock_metrics_node_count(m) == 3);
  for (uint32_t op = QL_OP_ACQUIRE; op <= QL_OP_RELEASE; op++) {
    CHECK(op_calls(m, op, QL_OK) == 0 && op_failed(m, op) == 0);
    uint64_t count = 1, sum = 1, p50 = 0;
    EXPECT(QL_OK, quorumlock_metrics_op_latency(m, op, &count, &sum));
    CHECK(count == 0 && sum == 0);
    EXPECT(QL_OK, quorumlock_metrics_op_quantile_us(m, op, 0.5, &p50));
    CHECK(p50 == QL_NO_LATENCY);
  }
  char *text = prometheus(m);
  CHECK(strstr(text, "quorumlock_acquire_total{outcome=\"ok\"} 0\n") != NULL);
  free(text);
  for (size_t n = 0; n < 3; n++) {
    uint64_t errors = 1;
    EXPECT(QL_OK, quorumlock_metrics_node_errors(m, n, &errors));
    CHECK(errors == 0);
  }
  return m;
}

static void counts(quorumlock_client *c, quorumlock_metrics *base) {
  quorumlock_lock_options *o = slow_options(10000);
  quorumlock_lock *lock = NULL, *other = NULL;
  EXPECT(QL_OK, quorumlock_client_acquire(c, RES("c:metrics"), o, NULL, &lock, NULL));
  EXPECT(QL_OK, quorumlock_lock_extend(lock, 20000, NULL));
  EXPECT(QL_BUSY, quorumlock_client_try_acquire(c, RES("c:metrics"), o, &other, NULL));
  EXPECT(QL_OK, quorumlock_lock_release(lock, NULL, NULL));
  quorumlock_lock_free(lock);
  quorumlock_lock_options_free(o);

  /* Client totals are exact as soon as the calls returned. */
  quorumlock_metrics *m = snap(c);
  CHECK(quorumlock_metrics_acquire_attempts(m) == 2);
  CHECK(op_calls(m, QL_OP_ACQUIRE, QL_OK) == 1);
  CHECK(op_calls(m, QL_OP_ACQUIRE, QL_BUSY) == 1);
  CHECK(op_calls(m, QL_OP_ACQUIRE, QL_QUORUM) == 0);
  CHECK(op_failed(m, QL_OP_ACQUIRE) == 1);
  CHECK(op_calls(m, QL_OP_EXTEND, QL_OK) == 1 && op_failed(m, QL_OP_EXTEND) == 0);
  CHECK(op_calls(m, QL_OP_RELEASE, QL_OK) == 1 && op_failed(m, QL_OP_RELEASE) == 0);
  CHECK(quorumlock_metrics_lost(m) == 0 && quorumlock_metrics_wakeups(m) == 0);
  uint64_t count = 0, sum = 0, p50 = 0, p99 = 0;
  EXPECT(QL_OK, quorumlock_metrics_op_latency(m, QL_OP_ACQUIRE, &count, &sum));
  CHECK(count == 2 && sum > 0);
  EXPECT(QL_OK, quorumlock_metrics_op_quantile_us(m, QL_OP_ACQUIRE, 0.5, &p50));
  EXPECT(QL_OK, quorumlock_metrics_op_quantile_us(m, QL_OP_ACQUIRE, 0.99, &p99));
  CHECK(p50 >= 100 && p50 != QL_NO_LATENCY && p99 >= p50 && p99 != QL_NO_LATENCY);
  CHECK(p99 >= sum / count);
  char *text = prometheus(m);
  CHECK(strstr(text, "quorumlock_acquire_total{outcome=\"ok\"} 1\n") != NULL);
  CHECK(strstr(text, "quorumlock_acquire_total{outcome=\"QL_BUSY\"} 1\n") != NULL);
  CHECK(strstr(text, "quorumlock_acquire_attempts_total 2\n") != NULL);
  CHECK(strstr(text, "quorumlock_release_total{outcome=\"ok\"} 1\n") != NULL);
  CHECK(strstr(text, "quorumlock_acquire_duration_seconds_count 2\n") != NULL);
  free(text);
  quorumlock_metrics_free(m);

  /* Per node, since the baseline: the acquire and extend votes, the busy try (HeldByOther),
   * the release, and the busy try's cleanup only where its round was decided before the node
   * answered (a node that refused is not cleaned). Replies decided at the quorum may still
   * be in flight, so poll for up to 20 s, then give a late cleanup 200 ms more. */
  size_t nodes = 0;
  for (int i = 0;; i++) {
    m = snap(c);
    nodes = quorumlock_metrics_node_count(m);
    CHECK(nodes == 3);
    size_t done = 0;
    for (size_t n = 0; n < nodes; n++) {
      done += replies(m, n, QL_NODE_OK) - replies(base, n, QL_NODE_OK) == 2 &&
              replies(m, n, QL_NODE_RELEASED) - replies(base, n, QL_NODE_RELEASED) == 1;
    }
    if (done == nodes) {
      quorumlock_metrics_free(m);
      sleep_ms(200);
      m = snap(c);
      break;
    }
    if (i == 400) {
      for (size_t n = 0; n < nodes; n++) {
        fprintf(stderr, "node %zu: %llu requests (%llu before):", n,
                (unsigned long long)requests(m, n), (unsigned long long)requests(base, n));
        for (uint32_t k = 0; k <= QL_NODE_PENDING; k++) {
          uint64_t r = replies(m, n, k);
          if (r > 0) fprintf(stderr, " %s=%llu", quorumlock_node_kind_name(k), (unsigned long long)r);
        }
        fputc('\n', stderr);
      }
    }
    quorumlock_metrics_free(m);
    CHECK(i < 400);
    sleep_ms(50);
  }
  for (size_t n = 0; n < nodes; n++) {
    CHECK(replies(m, n, QL_NODE_OK) - replies(base, n, QL_NODE_OK) == 2);
    uint64_t held = replies(m, n, QL_NODE_HELD_BY_OTHER) - replies(base, n, QL_NODE_HELD_BY_OTHER);
    CHECK(held == 1 || held == 2);
    CHECK(requests(m, n) - requests(base, n) == 3 + held);
    CHECK(replies(m, n, QL_NODE_RELEASED) - replies(base, n, QL_NODE_RELEASED) == 1);
    CHECK(replies(m, n, QL_NODE_NOT_HELD) == 0 && replies(m, n, QL_NODE_TIMEOUT) == 0);
    uint64_t errors = 1;
    EXPECT(QL_OK, quorumlock_metrics_node_errors(m, n, &errors));
    CHECK(errors == 0);
    uint64_t base_count = 0, base_sum = 0;
    EXPECT(QL_OK, quorumlock_metrics_node_latency(base, n, &base_count, &base_sum));
    EXPECT(QL_OK, quorumlock_metrics_node_latency(m, n, &count, &sum));
    CHECK(count - base_count == 3 + held && sum > base_sum);
    EXPECT(QL_OK, quorumlock_metrics_node_quantile_us(m, n, 1.0, &p99));
    CHECK(p99 >= 100 && p99 != QL_NO_LATENCY);
    char addr[64];
    size_t len = 0;
    EXPECT(QL_OK, quorumlock_metrics_node_address(m, n, addr, sizeof addr, &len));
    CHECK(strncmp(addr, "127.0.0.1:", 10) == 0 && len == strlen(addr));
  }
  quorumlock_metrics_free(m);
  quorumlock_metrics_free(base);
  puts("metrics ok");
}

static void bad_input(quorumlock_client *c) {
  quorumlock_metrics *m = NULL;
  uint64_t n = 7, sum = 7;
  size_t len = 0;
  char buf[16];
  /* NULL client, NULL out. */
  EXPECT(QL_INVALID, quorumlock_client_metrics(NULL, &m));
  CHECK(m == NULL);
  EXPECT(QL_INVALID, quorumlock_client_metrics(c, NULL));
  /* NULL snapshot. */
  CHECK(quorumlock_metrics_acquire_attempts(NULL) == 0);
  CHECK(quorumlock_metrics_lost(NULL) == 0 && quorumlock_metrics_wakeups(NULL) == 0);
  CHECK(quorumlock_metrics_node_count(NULL) == 0);
  EXPECT(QL_INVALID, quorumlock_metrics_op_calls(NULL, QL_OP_ACQUIRE, QL_OK, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_op_failed(NULL, QL_OP_ACQUIRE, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_op_latency(NULL, QL_OP_ACQUIRE, &n, &sum));
  EXPECT(QL_INVALID, quorumlock_metrics_op_quantile_us(NULL, QL_OP_ACQUIRE, 0.5, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_node_address(NULL, 0, buf, sizeof buf, &len));
  EXPECT(QL_INVALID, quorumlock_metrics_node_requests(NULL, 0, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_node_errors(NULL, 0, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_node_replies(NULL, 0, QL_NODE_OK, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_node_latency(NULL, 0, &n, &sum));
  EXPECT(QL_INVALID, quorumlock_metrics_node_quantile_us(NULL, 0, 0.5, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_prometheus(NULL, buf, sizeof buf, &len));
  quorumlock_metrics_free(NULL);

  m = snap(c);
  /* NULL outputs. */
  EXPECT(QL_INVALID, quorumlock_metrics_op_calls(m, QL_OP_ACQUIRE, QL_OK, NULL));
  EXPECT(QL_INVALID, quorumlock_metrics_op_failed(m, QL_OP_ACQUIRE, NULL));
  EXPECT(QL_INVALID, quorumlock_metrics_op_latency(m, QL_OP_ACQUIRE, NULL, &sum));
  EXPECT(QL_INVALID, quorumlock_metrics_op_latency(m, QL_OP_ACQUIRE, &n, NULL));
  EXPECT(QL_INVALID, quorumlock_metrics_op_quantile_us(m, QL_OP_ACQUIRE, 0.5, NULL));
  EXPECT(QL_INVALID, quorumlock_metrics_node_requests(m, 0, NULL));
  EXPECT(QL_INVALID, quorumlock_metrics_node_errors(m, 0, NULL));
  EXPECT(QL_INVALID, quorumlock_metrics_node_replies(m, 0, QL_NODE_OK, NULL));
  EXPECT(QL_INVALID, quorumlock_metrics_node_latency(m, 0, NULL, NULL));
  EXPECT(QL_INVALID, quorumlock_metrics_node_quantile_us(m, 0, 0.5, NULL));
  EXPECT(QL_INVALID, quorumlock_metrics_node_address(m, 0, NULL, 5, &len));
  EXPECT(QL_INVALID, quorumlock_metrics_prometheus(m, NULL, 5, &len));
  /* Out of range and unknown selectors; outputs stay untouched. */
  size_t count = quorumlock_metrics_node_count(m);
  n = 7;
  EXPECT(QL_INVALID, quorumlock_metrics_node_requests(m, count, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_node_errors(m, count, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_node_replies(m, count, QL_NODE_OK, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_node_latency(m, count, &n, &sum));
  EXPECT(QL_INVALID, quorumlock_metrics_node_quantile_us(m, count, 0.5, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_node_address(m, count, buf, sizeof buf, &len));
  EXPECT(QL_INVALID, quorumlock_metrics_node_replies(m, 0, 777, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_op_calls(m, 3, QL_OK, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_op_calls(m, QL_OP_ACQUIRE, QL_INTERNAL, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_op_calls(m, QL_OP_ACQUIRE, 1234, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_op_failed(m, 3, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_op_latency(m, 3, &n, &sum));
  EXPECT(QL_INVALID, quorumlock_metrics_op_quantile_us(m, 3, 0.5, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_op_quantile_us(m, QL_OP_ACQUIRE, 1.5, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_op_quantile_us(m, QL_OP_ACQUIRE, -0.5, &n));
  EXPECT(QL_INVALID, quorumlock_metrics_node_quantile_us(m, 0, 2.0, &n));
  CHECK(n == 7 && sum == 7);
  /* A tiny buffer truncates like snprintf. */
  memset(buf, 'x', sizeof buf);
  EXPECT(QL_OK, quorumlock_metrics_prometheus(m, buf, sizeof buf, &len));
  CHECK(strlen(buf) == sizeof buf - 1 && len > sizeof buf);
  CHECK(strncmp(buf, "# HELP", 6) == 0);
  quorumlock_metrics_free(m);
  puts("metrics bad input ok");
}

int main(int argc, char **argv) {
  CHECK(argc == 2);
  quorumlock_client *c = connect_nodes(true);
  if (strcmp(argv[1], "counts") == 0) {
    counts(c, fresh(c));
  } else if (strcmp(argv[1], "bad") == 0) {
    bad_input(c);
  } else {
    CHECK(!"unknown mode");
  }
  quorumlock_client_free(c);
  return 0;
}
