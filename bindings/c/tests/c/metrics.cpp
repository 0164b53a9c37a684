// The C++ metrics wrapper: Client::metrics, node_metrics and metrics_prometheus after one
// acquire and release on a fresh client.
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "quorumlock.hpp"

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

int main() {
  using namespace std::chrono_literals;
  std::vector<std::string> urls;
  std::stringstream env(std::getenv("QL_NODES"));
  for (std::string url; std::getline(env, url, ',');) urls.push_back(url);
  quorumlock::Client client(urls, 10s);

  quorumlock::Metrics before = client.metrics();
  CHECK(before.acquire_attempts == 0 && before.acquire.ok == 0 && before.nodes.size() == 3);
  CHECK(!before.acquire.latency.p50.has_value() && before.acquire.latency.count == 0);
  // Node figures count the connect round too: compare with this baseline.
  const quorumlock::NodeMetrics &base = before.nodes[2];
  CHECK(base.errors == 0);

  quorumlock::LockOptions opts;
  opts.ttl(10s).node_timeout(1000ms).min_validity(0ms).retry_delay(20ms, 20ms);
  {
    quorumlock::Lock lock = client.acquire("cpp:metrics", &opts);
    CHECK(!client.try_acquire("cpp:metrics", &opts).has_value());
    CHECK(lock.release());
  }

  quorumlock::Metrics m = client.metrics();
  CHECK(m.acquire_attempts == 2);
  CHECK(m.acquire.ok == 1 && m.acquire.failed == 1);
  CHECK(m.acquire.failed_by.size() == 1);
  CHECK(m.acquire.failed_by[0].first == QL_BUSY && m.acquire.failed_by[0].second == 1);
  CHECK(m.acquire.latency.count == 2 && m.acquire.latency.sum > 0us);
  CHECK(m.acquire.latency.p50.has_value() && m.acquire.latency.p99.has_value());
  CHECK(*m.acquire.latency.p50 <= *m.acquire.latency.p99);
  CHECK(m.extend.ok == 0 && m.extend.failed == 0 && m.extend.failed_by.empty());
  CHECK(m.release.ok == 1 && m.release.failed == 0);
  CHECK(m.lost == 0 && m.wakeups == 0);
  CHECK(m.nodes.size() == 3);

  // Node figures: the acquire, the busy try (HeldByOther), the release, and the busy try's
  // cleanup only where its round was decided before the node answered (a node that refused
  // is not cleaned). Replies decided at the quorum may land later.
  quorumlock::NodeMetrics node;
  for (int i = 0;; i++) {
    node = client.node_metrics(2);
    if (node.replies_of(QL_NODE_OK) - base.replies_of(QL_NODE_OK) == 1 &&
        node.replies_of(QL_NODE_RELEASED) - base.replies_of(QL_NODE_RELEASED) == 1) {
      break;
    }
    CHECK(i < 400);
    std::this_thread::sleep_for(50ms);
  }
  std::this_thread::sleep_for(200ms);  // a late cleanup lands within this
  node = client.node_metrics(2);
  const uint64_t held = node.replies_of(QL_NODE_HELD_BY_OTHER) - base.replies_of(QL_NODE_HELD_BY_OTHER);
  CHECK(held == 1 || held == 2);
  CHECK(node.requests - base.requests == 2 + held);
  CHECK(node.address.rfind("127.0.0.1:", 0) == 0 && node.address == m.nodes[2].address);
  CHECK(node.errors == 0);
  CHECK(node.replies_of(QL_NODE_OK) - base.replies_of(QL_NODE_OK) == 1);
  CHECK(node.replies_of(QL_NODE_RELEASED) - base.replies_of(QL_NODE_RELEASED) == 1);
  CHECK(node.replies_of(QL_NODE_TIMEOUT) == 0 && node.replies.size() == 3);
  CHECK(node.latency.count - base.latency.count == 2 + held && node.latency.p99.has_value());

  try {
    client.node_metrics(3);
    CHECK(!"node_metrics(3) should have thrown");
  } catch (const quorumlock::Error &e) {
    CHECK(e.code() == QL_INVALID && e.nodes().empty());
    CHECK(std::string(e.what()).find("out of range") != std::string::npos);
  }

  std::string text = client.metrics_prometheus();
  CHECK(text.find("quorumlock_acquire_total{outcome=\"ok\"} 1\n") != std::string::npos);
  CHECK(text.find("quorumlock_acquire_total{outcome=\"QL_BUSY\"} 1\n") != std::string::npos);
  CHECK(text.find("quorumlock_release_total{outcome=\"ok\"} 1\n") != std::string::npos);
  CHECK(text.find("quorumlock_node_requests_total{node=\"" + node.address +
                  "\",kind=\"Released\"} 1\n") != std::string::npos);
  CHECK(text.back() == '\n' && text.find('\0') == std::string::npos);
  std::puts("metrics cpp ok");
  return 0;
}
