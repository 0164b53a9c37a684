// The C++ wrapper: the destructor releases, exceptions carry the code and the node report,
// types are move-only.
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <type_traits>

#include "quorumlock.hpp"

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

static_assert(!std::is_copy_constructible_v<quorumlock::Lock>);
static_assert(std::is_nothrow_move_constructible_v<quorumlock::Lock>);
static_assert(!std::is_copy_constructible_v<quorumlock::Client>);
static_assert(std::is_move_constructible_v<quorumlock::Client>);

int main() {
  using namespace std::chrono_literals;
  std::vector<std::string> urls;
  std::stringstream env(std::getenv("QL_NODES"));
  for (std::string url; std::getline(env, url, ',');) urls.push_back(url);
  quorumlock::Client client(urls, 10s);
  CHECK(client.node_count() == 3);

  quorumlock::LockOptions opts;
  opts.ttl(10s).node_timeout(1000ms).min_validity(0ms).retry_delay(20ms, 20ms);
  {
    quorumlock::Lock lock = client.acquire("cpp:raii", &opts);
    CHECK(lock.remaining() > 0ms);
    CHECK(lock.value().size() == 40);
    lock.extend(20s);
    CHECK(lock.remaining() > 10s);
    CHECK(!client.try_acquire("cpp:raii", &opts).has_value());
    try {
      client.acquire_for("cpp:raii", 200ms, &opts);
      CHECK(!"acquire_for should have thrown");
    } catch (const quorumlock::Error &e) {
      CHECK(e.code() == QL_BUSY);
      CHECK(std::string(e.code_name()) == "QL_BUSY");
      CHECK(e.nodes().size() == 3);
      size_t held = 0;
      for (const auto &n : e.nodes()) {
        CHECK(n.address.rfind("127.0.0.1:", 0) == 0);
        if (n.kind == QL_NODE_HELD_BY_OTHER) held++;
      }
      CHECK(held >= 2);
      CHECK(std::string(e.what()).find("QL_BUSY") != std::string::npos);
    }
    quorumlock::Lock moved = std::move(lock);
    CHECK(moved.remaining() > 0ms);
  }  // the destructor of `moved` releases; `lock` is empty
  std::optional<quorumlock::Lock> again = client.try_acquire("cpp:raii", &opts);
  CHECK(again.has_value());
  CHECK(again->release());
  CHECK(again->release());  // idempotent: the first report again
  try {
    again->extend(1s);
    CHECK(!"extend after release should have thrown");
  } catch (const quorumlock::Error &e) {
    CHECK(e.code() == QL_INVALID);
  }
  {
    quorumlock::LockOptions fenced;
    fenced.node_timeout(1s).fenced();
    quorumlock::Lock first = client.acquire("cpp:fence", &fenced);
    std::optional<uint64_t> t1 = first.token();
    CHECK(t1.has_value() && *t1 > (uint64_t{1} << 50));
    CHECK(first.tokens() == std::vector<uint64_t>{*t1});
    first.release();
    quorumlock::Lock second = client.acquire("cpp:fence", &fenced);
    CHECK(second.token().value_or(0) > *t1);
    second.release();
    quorumlock::Lock plain = client.acquire("cpp:fence", &opts);
    CHECK(!plain.token().has_value() && plain.tokens().empty());
    CHECK(std::string_view(quorumlock::fence_check_script()).find("redis.call") != std::string_view::npos);
  }
  try {
    quorumlock::Client bad({"http://nope"});
    CHECK(!"a bad URL should have thrown");
  } catch (const quorumlock::Error &e) {
    CHECK(e.code() == QL_INVALID && e.nodes().empty());
  }
  std::puts("raii ok");
  return 0;
}
