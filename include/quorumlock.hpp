// quorumlock.hpp: header-only C++17 RAII wrapper over the C API in quorumlock.h.
//
//   quorumlock::Client client({"redis://127.0.0.1:7001", "redis://127.0.0.1:7002",
//                              "redis://127.0.0.1:7003"});
//   quorumlock::Lock lock = client.acquire("invoice:7");
//   ... act while lock.remaining() > 0ms ...
//   lock.release();                      // or let the destructor release it
//   quorumlock::Metrics m = client.metrics();   // counters; client.metrics_prometheus()
//
// Failures throw quorumlock::Error, which carries the result code and the node report.
// Clients and locks are move-only; a lock's destructor releases it and never throws.
#ifndef QUORUMLOCK_HPP
#define QUORUMLOCK_HPP

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quorumlock.h"

namespace quorumlock {

/// One entry of a node report.
struct NodeReport {
  uint32_t kind;                                   ///< QL_NODE_*
  std::string kind_name;                           ///< "HeldByOther", ...
  std::string address;                             ///< host:port/db
  std::optional<std::chrono::microseconds> latency;  ///< empty when no reply came
};

/// A failed call: what() is the full message; code() the QL_* result; nodes() the report.
class Error : public std::runtime_error {
 public:
  Error(quorumlock_result code, std::string message, std::vector<NodeReport> nodes,
        uint32_t lost_reason)
      : std::runtime_error(std::move(message)),
        code_(code),
        nodes_(std::move(nodes)),
        lost_reason_(lost_reason) {}

  quorumlock_result code() const noexcept { return code_; }
  const char *code_name() const noexcept { return quorumlock_result_name(code_); }
  const std::vector<NodeReport> &nodes() const noexcept { return nodes_; }
  uint32_t lost_reason() const noexcept { return lost_reason_; }

 private:
  quorumlock_result code_;
  std::vector<NodeReport> nodes_;
  uint32_t lost_reason_;
};

namespace detail {

inline std::string text(quorumlock_result (*read)(const quorumlock_error *, size_t, char *, size_t,
                                                   size_t *),
                        const quorumlock_error *err, size_t index) {
  size_t n = 0;
  read(err, index, nullptr, 0, &n);
  std::string s(n, '\0');
  read(err, index, s.data(), n + 1, &n);
  return s;
}

inline quorumlock_result message(const quorumlock_error *err, size_t, char *buf, size_t len,
                                 size_t *n) {
  return quorumlock_error_message(err, buf, len, n);
}

/// Throws for a code other than QL_OK, taking ownership of `*err_out` (the pointer is read
/// only after the call that fills it, whatever the argument evaluation order).
inline void check(quorumlock_result code, quorumlock_error **err_out) {
  if (code == QL_OK) return;
  quorumlock_error *err = err_out ? *err_out : nullptr;
  std::unique_ptr<quorumlock_error, void (*)(quorumlock_error *)> owned(err, quorumlock_error_free);
  std::vector<NodeReport> nodes;
  std::string msg = err ? text(message, err, 0) : quorumlock_result_name(code);
  for (size_t i = 0, n = quorumlock_error_node_count(err); i < n; i++) {
    NodeReport r{};
    quorumlock_error_node_kind(err, i, &r.kind);
    r.kind_name = quorumlock_node_kind_name(r.kind);
    r.address = text(quorumlock_error_node_address, err, i);
    uint64_t us = QL_NO_LATENCY;
    quorumlock_error_node_latency_us(err, i, &us);
    if (us != QL_NO_LATENCY) r.latency = std::chrono::microseconds(us);
    nodes.push_back(std::move(r));
  }
  throw Error(code, std::move(msg), std::move(nodes), quorumlock_error_lost_reason(err));
}

inline const uint8_t *bytes(std::string_view s) {
  return reinterpret_cast<const uint8_t *>(s.data());
}

template <typename T, void (*Free)(T *)>
struct Deleter {
  void operator()(T *p) const noexcept { Free(p); }
};

}  // namespace detail

/// Options of one acquisition; setters chain.
class LockOptions {
 public:
  LockOptions() {
    quorumlock_lock_options *o = nullptr;
    detail::check(quorumlock_lock_options_new(&o), nullptr);
    p_.reset(o);
  }
  LockOptions &ttl(std::chrono::milliseconds d) {
    return set(quorumlock_lock_options_set_ttl_ms(p_.get(), count(d)));
  }
  LockOptions &retry_count(uint32_t n) {
    return set(quorumlock_lock_options_set_retry_count(p_.get(), n));
  }
  LockOptions &retry_delay(std::chrono::milliseconds delay, std::chrono::milliseconds jitter) {
    return set(quorumlock_lock_options_set_retry_delay_ms(p_.get(), count(delay), count(jitter)));
  }
  LockOptions &min_validity(std::chrono::milliseconds d) {
    return set(quorumlock_lock_options_set_min_validity_ms(p_.get(), count(d)));
  }
  LockOptions &node_timeout(std::chrono::milliseconds d) {
    return set(quorumlock_lock_options_set_node_timeout_ms(p_.get(), count(d)));
  }
  LockOptions &auto_extend(bool on, std::chrono::milliseconds interval = {}) {
    return set(quorumlock_lock_options_set_auto_extend(p_.get(), on, count(interval)));
  }
  /// Fenced acquisition: the lock carries tokens (Lock::token). `counter_ttl` zero keeps
  /// the counters forever.
  LockOptions &fenced(bool on = true, std::chrono::milliseconds counter_ttl = {}) {
    return set(quorumlock_lock_options_set_fenced(p_.get(), on, count(counter_ttl)));
  }
  const quorumlock_lock_options *get() const noexcept { return p_.get(); }

 private:
  static uint64_t count(std::chrono::milliseconds d) {
    return d.count() < 0 ? 0 : static_cast<uint64_t>(d.count());
  }
  LockOptions &set(quorumlock_result r) {
    detail::check(r, nullptr);
    return *this;
  }
  std::unique_ptr<quorumlock_lock_options,
                  detail::Deleter<quorumlock_lock_options, quorumlock_lock_options_free>>
      p_;
};

/// A held lock. Move-only; the destructor releases a lock still held and never throws.
class Lock {
 public:
  explicit Lock(quorumlock_lock *p) noexcept : p_(p) {}
  Lock(Lock &&other) noexcept
      : p_(std::move(other.p_)), released_(std::exchange(other.released_, false)) {}
  Lock &operator=(Lock &&other) noexcept {
    if (this != &other) {
      close();
      p_ = std::move(other.p_);
      released_ = std::exchange(other.released_, false);
    }
    return *this;
  }
  Lock(const Lock &) = delete;
  Lock &operator=(const Lock &) = delete;
  ~Lock() { close(); }

  /// Validity left; zero once expired, lost or released.
  std::chrono::milliseconds remaining() const noexcept {
    return std::chrono::milliseconds(quorumlock_lock_remaining_ms(p_.get()));
  }
  /// The lock's random value (40 hex characters).
  std::string value() const {
    size_t n = 0;
    detail::check(quorumlock_lock_value(p_.get(), nullptr, 0, &n), nullptr);
    std::string s(n, '\0');
    detail::check(quorumlock_lock_value(p_.get(), s.data(), n + 1, &n), nullptr);
    return s;
  }
  /// The fencing token of the first resource; empty unless acquired fenced.
  std::optional<uint64_t> token() const noexcept {
    uint64_t t = 0;
    if (quorumlock_lock_token(p_.get(), &t) != QL_OK) return std::nullopt;
    return t;
  }
  /// The fencing tokens, one per resource in sorted order; empty unless acquired fenced.
  std::vector<uint64_t> tokens() const {
    std::vector<uint64_t> all(quorumlock_lock_token_count(p_.get()));
    for (size_t i = 0; i < all.size(); i++) {
      detail::check(quorumlock_lock_token_at(p_.get(), i, &all[i]), nullptr);
    }
    return all;
  }
  /// Extends to `ttl` from now; throws on failure (QL_LOST, QL_QUORUM, ...).
  void extend(std::chrono::milliseconds ttl) {
    quorumlock_error *err = nullptr;
    detail::check(quorumlock_lock_extend(p_.get(), static_cast<uint64_t>(ttl.count()), &err), &err);
  }
  /// Releases on every node; returns whether a quorum still held it. Idempotent.
  bool release() {
    bool held = false;
    quorumlock_error *err = nullptr;
    detail::check(quorumlock_lock_release(p_.get(), &held, &err), &err);
    released_ = true;
    return held;
  }
  quorumlock_lock *get() const noexcept { return p_.get(); }

 private:
  // Releases unless release() already did (a repeated release would count again in the
  // client's metrics).
  void close() noexcept {
    if (p_ && !released_) quorumlock_lock_release(p_.get(), nullptr, nullptr);
    p_.reset();
    released_ = false;
  }
  std::unique_ptr<quorumlock_lock, detail::Deleter<quorumlock_lock, quorumlock_lock_free>> p_;
  bool released_ = false;
};

/// Latency of one operation or one node, from a histogram with bucket bounds of 100 us to
/// 10 s (the Prometheus text has every bucket).
struct Latency {
  uint64_t count = 0;                               ///< timed calls, or replies
  std::chrono::microseconds sum{0};                 ///< their total
  std::optional<std::chrono::microseconds> p50;     ///< upper estimate; empty when unknown
  std::optional<std::chrono::microseconds> p99;     ///< upper estimate; empty when unknown
};

/// Calls of one operation (acquire, extend or release).
struct OpMetrics {
  uint64_t ok = 0;                                          ///< successful calls
  uint64_t failed = 0;                                      ///< failed calls, any code
  std::vector<std::pair<quorumlock_result, uint64_t>> failed_by;  ///< codes seen, ascending
  Latency latency;                                          ///< every call, failed ones too
};

/// What one node answered over the client's life.
struct NodeMetrics {
  std::string address;   ///< host:port/db
  uint64_t requests = 0;  ///< requests whose outcome is known
  uint64_t errors = 0;    ///< requests that ended in a node error (timeouts included)
  std::vector<std::pair<uint32_t, uint64_t>> replies;  ///< (QL_NODE_*, count), kinds seen
  Latency latency;        ///< time to each reply

  /// Requests that ended as `kind` (QL_NODE_*).
  uint64_t replies_of(uint32_t kind) const noexcept {
    for (const auto &r : replies) {
      if (r.first == kind) return r.second;
    }
    return 0;
  }
};

/// A snapshot of a client's counters (Client::metrics). Counters only grow.
struct Metrics {
  uint64_t acquire_attempts = 0;  ///< acquisition rounds sent
  OpMetrics acquire;
  OpMetrics extend;               ///< automatic extensions included
  OpMetrics release;              ///< explicit releases
  uint64_t lost = 0;              ///< locks lost while held
  uint64_t wakeups = 0;           ///< waits cut short by a release notification
  std::vector<NodeMetrics> nodes;  ///< one per configured node, in configuration order
};

namespace detail {

using MetricsPtr =
    std::unique_ptr<quorumlock_metrics, Deleter<quorumlock_metrics, quorumlock_metrics_free>>;

inline MetricsPtr snapshot(const quorumlock_client *client) {
  quorumlock_metrics *m = nullptr;
  check(quorumlock_client_metrics(client, &m), nullptr);
  return MetricsPtr(m);
}

inline std::optional<std::chrono::microseconds> micros(uint64_t us) {
  if (us == QL_NO_LATENCY) return std::nullopt;
  return std::chrono::microseconds(static_cast<std::chrono::microseconds::rep>(us));
}

template <typename Sel>
inline Latency latency(const quorumlock_metrics *m, Sel sel,
                       quorumlock_result (*summary)(const quorumlock_metrics *, Sel, uint64_t *,
                                                    uint64_t *),
                       quorumlock_result (*quantile)(const quorumlock_metrics *, Sel, double,
                                                     uint64_t *)) {
  Latency l;
  uint64_t sum = 0, p50 = QL_NO_LATENCY, p99 = QL_NO_LATENCY;
  check(summary(m, sel, &l.count, &sum), nullptr);
  check(quantile(m, sel, 0.5, &p50), nullptr);
  check(quantile(m, sel, 0.99, &p99), nullptr);
  l.sum = std::chrono::microseconds(static_cast<std::chrono::microseconds::rep>(sum));
  l.p50 = micros(p50);
  l.p99 = micros(p99);
  return l;
}

inline OpMetrics op_metrics(const quorumlock_metrics *m, uint32_t op) {
  OpMetrics o;
  check(quorumlock_metrics_op_calls(m, op, QL_OK, &o.ok), nullptr);
  check(quorumlock_metrics_op_failed(m, op, &o.failed), nullptr);
  // Codes no call can end in return QL_INVALID and are skipped.
  for (uint32_t code = 1; code < QL_INTERNAL; code++) {
    uint64_t n = 0;
    if (quorumlock_metrics_op_calls(m, op, code, &n) == QL_OK && n > 0) {
      o.failed_by.emplace_back(static_cast<quorumlock_result>(code), n);
    }
  }
  o.latency = latency<uint32_t>(m, op, quorumlock_metrics_op_latency,
                                quorumlock_metrics_op_quantile_us);
  return o;
}

inline NodeMetrics node_metrics(const quorumlock_metrics *m, size_t index) {
  if (index >= quorumlock_metrics_node_count(m)) {
    std::string msg = "QL_INVALID: node index " + std::to_string(index) +
                      " is out of range (node count " +
                      std::to_string(quorumlock_metrics_node_count(m)) + ")";
    throw Error(QL_INVALID, std::move(msg), {}, QL_LOST_NONE);
  }
  NodeMetrics n;
  size_t len = 0;
  check(quorumlock_metrics_node_address(m, index, nullptr, 0, &len), nullptr);
  n.address.assign(len, '\0');
  check(quorumlock_metrics_node_address(m, index, n.address.data(), len + 1, &len), nullptr);
  check(quorumlock_metrics_node_requests(m, index, &n.requests), nullptr);
  check(quorumlock_metrics_node_errors(m, index, &n.errors), nullptr);
  // Node kinds are numbered from 0 without gaps; quorumlock_node_kind_name ends the list.
  for (uint32_t kind = 0; std::string_view(quorumlock_node_kind_name(kind)) != "Unknown"; kind++) {
    uint64_t count = 0;
    check(quorumlock_metrics_node_replies(m, index, kind, &count), nullptr);
    if (count > 0) n.replies.emplace_back(kind, count);
  }
  n.latency = latency<size_t>(m, index, quorumlock_metrics_node_latency,
                              quorumlock_metrics_node_quantile_us);
  return n;
}

inline std::string prometheus(const quorumlock_metrics *m) {
  size_t n = 0;
  check(quorumlock_metrics_prometheus(m, nullptr, 0, &n), nullptr);
  std::string s(n, '\0');
  check(quorumlock_metrics_prometheus(m, s.data(), n + 1, &n), nullptr);
  return s;
}

}  // namespace detail

/// A client over N independent Redis masters. Move-only.
class Client {
 public:
  /// Connects to `urls`; blocks up to twice `connect_timeout`. `quarantine` is a
  /// QL_QUARANTINE_* mode.
  explicit Client(const std::vector<std::string> &urls,
                  std::chrono::milliseconds connect_timeout = std::chrono::seconds(1),
                  uint32_t quarantine = QL_QUARANTINE_ON) {
    quorumlock_config *raw = nullptr;
    detail::check(quorumlock_config_new(&raw), nullptr);
    std::unique_ptr<quorumlock_config, detail::Deleter<quorumlock_config, quorumlock_config_free>>
        cfg(raw);
    for (const auto &url : urls) {
      quorumlock_error *err = nullptr;
      detail::check(quorumlock_config_add_node(cfg.get(), detail::bytes(url), url.size(), &err), &err);
    }
    detail::check(quorumlock_config_set_connect_timeout_ms(
                      cfg.get(), static_cast<uint64_t>(connect_timeout.count())),
                  nullptr);
    detail::check(quorumlock_config_set_quarantine(cfg.get(), quarantine, 0), nullptr);
    quorumlock_client *c = nullptr;
    quorumlock_error *err = nullptr;
    detail::check(quorumlock_client_new(cfg.get(), &c, &err), &err);
    p_.reset(c);
  }

  /// Acquires with retries as the options say (client defaults when `opts` is null).
  Lock acquire(std::string_view resource, const LockOptions *opts = nullptr) const {
    quorumlock_lock *l = nullptr;
    quorumlock_error *err = nullptr;
    detail::check(quorumlock_client_acquire(p_.get(), detail::bytes(resource), resource.size(),
                                            raw(opts), nullptr, &l, &err), &err);
    return Lock(l);
  }
  /// One attempt; empty when another owner holds it (QL_BUSY), throws on other failures.
  std::optional<Lock> try_acquire(std::string_view resource,
                                  const LockOptions *opts = nullptr) const {
    quorumlock_lock *l = nullptr;
    quorumlock_error *err = nullptr;
    quorumlock_result r = quorumlock_client_try_acquire(p_.get(), detail::bytes(resource),
                                                        resource.size(), raw(opts), &l, &err);
    if (r == QL_BUSY) {
      quorumlock_error_free(err);
      return std::nullopt;
    }
    detail::check(r, &err);
    return Lock(l);
  }
  /// Retries until acquired or `timeout` is spent; throws the last failure (often QL_BUSY).
  Lock acquire_for(std::string_view resource, std::chrono::milliseconds timeout,
                   const LockOptions *opts = nullptr) const {
    quorumlock_lock *l = nullptr;
    quorumlock_error *err = nullptr;
    detail::check(quorumlock_client_acquire_timeout(
                      p_.get(), detail::bytes(resource), resource.size(), raw(opts),
                      static_cast<uint64_t>(timeout.count()), nullptr, &l, &err), &err);
    return Lock(l);
  }
  size_t node_count() const noexcept { return quorumlock_client_node_count(p_.get()); }
  /// A snapshot of the client's counters, all read at one moment; never blocks. Client
  /// totals are exact once the calls they count returned; a node reply that arrived after
  /// its round was decided is counted in `nodes` when it lands.
  Metrics metrics() const {
    detail::MetricsPtr m = detail::snapshot(p_.get());
    Metrics out;
    out.acquire_attempts = quorumlock_metrics_acquire_attempts(m.get());
    out.acquire = detail::op_metrics(m.get(), QL_OP_ACQUIRE);
    out.extend = detail::op_metrics(m.get(), QL_OP_EXTEND);
    out.release = detail::op_metrics(m.get(), QL_OP_RELEASE);
    out.lost = quorumlock_metrics_lost(m.get());
    out.wakeups = quorumlock_metrics_wakeups(m.get());
    for (size_t i = 0, n = quorumlock_metrics_node_count(m.get()); i < n; i++) {
      out.nodes.push_back(detail::node_metrics(m.get(), i));
    }
    return out;
  }
  /// The figures of node `index` (configuration order) from a fresh snapshot; throws Error
  /// (QL_INVALID) when `index` is out of range.
  NodeMetrics node_metrics(size_t index) const {
    return detail::node_metrics(detail::snapshot(p_.get()).get(), index);
  }
  /// A fresh snapshot in the Prometheus text exposition format (metric names quorumlock_*).
  std::string metrics_prometheus() const {
    return detail::prometheus(detail::snapshot(p_.get()).get());
  }
  quorumlock_client *get() const noexcept { return p_.get(); }

 private:
  static const quorumlock_lock_options *raw(const LockOptions *o) {
    return o ? o->get() : nullptr;
  }
  std::unique_ptr<quorumlock_client, detail::Deleter<quorumlock_client, quorumlock_client_free>>
      p_;
};

/// The Lua source of the fence check for a resource kept in Redis (static; never freed):
/// `EVAL <script> 1 <fence key> <token>` returns 1 when the token is current, 0 when stale.
inline const char *fence_check_script() noexcept { return quorumlock_fence_check_script(); }

}  // namespace quorumlock

#endif  // QUORUMLOCK_HPP
