using System;

namespace Quorumlock
{
    /// <summary>Restart quarantine modes (QL_QUARANTINE_*).</summary>
    public enum QuarantineMode : uint
    {
        /// <summary>A node without durable writes counts only after max TTL + margin of uptime (the native default).</summary>
        On = 0,
        /// <summary>As On, and a node that refuses INFO never counts.</summary>
        Strict = 1,
        /// <summary>No checks (the RedLockFactory default, as RedLock.net has none).</summary>
        Off = 2,
    }

    /// <summary>What to do with nodes whose eviction policy can drop lock keys (QL_EVICTION_*).</summary>
    public enum EvictionCheck : uint
    {
        /// <summary>Exclude the node (default).</summary>
        Refuse = 0,
        /// <summary>Count it and warn.</summary>
        Warn = 1,
        /// <summary>Skip the check.</summary>
        Off = 2,
    }

    /// <summary>How resource names become keys (QL_KEY_*).</summary>
    public enum KeyFormat : uint
    {
        /// <summary>&lt;prefix&gt;{&lt;resource&gt;}: a lock key and its fencing counter share a Redis Cluster slot (the native default).</summary>
        Braced = 0,
        /// <summary>&lt;prefix&gt;&lt;resource&gt;: RedLock.net's keys (string.Format("redlock:{0}", resource)); the RedLockFactory default.</summary>
        Bare = 1,
    }

    /// <summary>Client settings; null properties keep the engine's defaults.</summary>
    public sealed class QuorumlockSettings
    {
        /// <summary>Restart quarantine mode.</summary>
        public QuarantineMode? Quarantine { get; set; }

        /// <summary>How long past the max TTL a fresh non-durable node stays out (default 5 s).</summary>
        public TimeSpan? QuarantineMargin { get; set; }

        /// <summary>The largest accepted TTL (default 60 s natively); the same on every client of the nodes.</summary>
        public TimeSpan? MaxTtl { get; set; }

        /// <summary>Eviction-policy check.</summary>
        public EvictionCheck? EvictionCheck { get; set; }

        /// <summary>Release notification (default on): a waiting acquire wakes when the holder releases.</summary>
        public bool? Notify { get; set; }

        /// <summary>Key prefix (default "quorumlock:"; RedLockFactory: from RedisKeyFormat, "redlock:").</summary>
        public string KeyPrefix { get; set; }

        /// <summary>Key format: Braced (native default, &lt;prefix&gt;{&lt;resource&gt;}) or Bare (RedLockFactory default, &lt;prefix&gt;&lt;resource&gt;).</summary>
        public KeyFormat? KeyFormat { get; set; }

        /// <summary>Fail at connect unless a quorum of nodes connected (default off: nodes join as they come up).</summary>
        public bool? RequireQuorum { get; set; }

        /// <summary>How long connecting waits for the first connections (default 1 s).</summary>
        public TimeSpan? ConnectTimeout { get; set; }

        /// <summary>Clock drift factor (default 0.01).</summary>
        public double? DriftFactor { get; set; }

        /// <summary>Constant part of the drift (default 2 ms).</summary>
        public TimeSpan? DriftConstant { get; set; }

        /// <summary>Deadline of each request to a node (default TTL / 200, clamped to 5..50 ms), for every lock and the calls by value.</summary>
        public TimeSpan? NodeTimeout { get; set; }

        internal QuorumlockSettings Clone() => (QuorumlockSettings)MemberwiseClone();
    }

    /// <summary>Options of one acquisition; null properties keep the engine's defaults.</summary>
    public sealed class LockOptions
    {
        /// <summary>How long the lock lives without extension (default 10 s).</summary>
        public TimeSpan? Ttl { get; set; }

        /// <summary>Retries after the first attempt (default 3).</summary>
        public int? RetryCount { get; set; }

        /// <summary>Delay between attempts (default 100 ms + jitter).</summary>
        public TimeSpan? RetryDelay { get; set; }

        /// <summary>Upper bound of the random part added to the delay (default 200 ms; 0 with RetryDelay alone).</summary>
        public TimeSpan? RetryJitter { get; set; }

        /// <summary>Retry until acquired or this much time is spent (then RetryCount does not apply).</summary>
        public TimeSpan? Wait { get; set; }

        /// <summary>Validity an attempt must leave (default TTL / 10).</summary>
        public TimeSpan? MinValidity { get; set; }

        /// <summary>Deadline of each request to a node.</summary>
        public TimeSpan? NodeTimeout { get; set; }

        /// <summary>Let the engine extend the lock in the background (every TTL / 3 unless ExtendInterval).</summary>
        public bool AutoExtend { get; set; }

        /// <summary>Interval of the automatic extension.</summary>
        public TimeSpan? ExtendInterval { get; set; }

        /// <summary>Cap on automatic extensions (0: none).</summary>
        public int MaxExtensions { get; set; }

        /// <summary>No deadline past this long after acquisition (zero: none).</summary>
        public TimeSpan MaxHold { get; set; }

        /// <summary>Carry a fencing token (QuorumlockLock.Token).</summary>
        public bool Fenced { get; set; }

        /// <summary>A caller-given lock value (16+ printable ASCII characters) instead of a random one.</summary>
        public string Value { get; set; }

        internal LockOptions Clone() => (LockOptions)MemberwiseClone();
    }
}
