using System;
using System.Collections.Generic;
using System.Net;
using System.Threading;
using System.Threading.Tasks;

namespace Quorumlock
{
    /// <summary>The status of a lock (RedLock.net's RedLockStatus, same names and order).</summary>
    public enum RedLockStatus
    {
        /// <summary>Not acquired yet, or released.</summary>
        Unlocked,
        /// <summary>Acquired and held.</summary>
        Acquired,
        /// <summary>Not acquired: node failures blocked the quorum (QL_QUORUM).</summary>
        NoQuorum,
        /// <summary>Not acquired: other owners hold it (QL_BUSY); or lost because another owner took it.</summary>
        Conflicted,
        /// <summary>Not acquired: the quorum left too little validity (QL_VALIDITY); or lost when its validity ran out.</summary>
        Expired,
        /// <summary>Kept for RedLock.net compatibility; never set.</summary>
        ExtensionCanceled,
    }

    /// <summary>Node counts of the last attempt (RedLock.net's RedLockInstanceSummary).</summary>
    public struct RedLockInstanceSummary
    {
        /// <summary>Creates a summary.</summary>
        public RedLockInstanceSummary(int acquired, int conflicted, int error)
        {
            Acquired = acquired;
            Conflicted = conflicted;
            Error = error;
        }

        /// <summary>Nodes that voted for (after a success: the quorum, a lower bound).</summary>
        public readonly int Acquired;

        /// <summary>Nodes held by another owner.</summary>
        public readonly int Conflicted;

        /// <summary>Nodes that failed, timed out or had not answered when the attempt was decided.</summary>
        public readonly int Error;

        /// <inheritdoc/>
        public override string ToString() => "Acquired: " + Acquired + ", Conflicted: " + Conflicted + ", Error: " + Error;
    }

    /// <summary>A lock from <see cref="RedLockFactory"/> (RedLock.net's IRedLock).</summary>
    public interface IRedLock : IDisposable, IAsyncDisposable
    {
        /// <summary>The resource name.</summary>
        string Resource { get; }

        /// <summary>The lock's value (40 hex characters); empty when not acquired.</summary>
        string LockId { get; }

        /// <summary>Whether the lock is held (Status is Acquired).</summary>
        bool IsAcquired { get; }

        /// <summary>The status.</summary>
        RedLockStatus Status { get; }

        /// <summary>Node counts of the deciding attempt.</summary>
        RedLockInstanceSummary InstanceSummary { get; }

        /// <summary>Always 0: the engine extends in the background and the C ABI does not count per lock.</summary>
        int ExtendCount { get; }
    }

    /// <summary>RedLock.net's IDistributedLockFactory.</summary>
    public interface IDistributedLockFactory
    {
        /// <summary>One acquisition (3 attempts up to 400 ms apart, as RedLock.net).</summary>
        IRedLock CreateLock(string resource, TimeSpan expiryTime);

        /// <summary>As CreateLock, on a worker thread.</summary>
        Task<IRedLock> CreateLockAsync(string resource, TimeSpan expiryTime);

        /// <summary>Retries every <paramref name="retryTime"/> until acquired or <paramref name="waitTime"/> is spent.</summary>
        IRedLock CreateLock(string resource, TimeSpan expiryTime, TimeSpan waitTime, TimeSpan retryTime, CancellationToken? cancellationToken = null);

        /// <summary>As CreateLock, on a worker thread of its own.</summary>
        Task<IRedLock> CreateLockAsync(string resource, TimeSpan expiryTime, TimeSpan waitTime, TimeSpan retryTime, CancellationToken? cancellationToken = null);
    }

    /// <summary>
    /// One quorum member (RedLock.net's RedLockEndPoint): an <see cref="System.Net.EndPoint"/>
    /// with password, SSL and database, or a node URL (also redis+cluster://).
    /// </summary>
    public class RedLockEndPoint
    {
        private IList<EndPoint> endPoints = new List<EndPoint>();

        /// <summary>An empty endpoint; set EndPoint or Url.</summary>
        public RedLockEndPoint()
        {
        }

        /// <summary>One server.</summary>
        public RedLockEndPoint(EndPoint endPoint)
        {
            EndPoint = endPoint;
        }

        /// <summary>Several endpoints of one member: refused at Create (list each master as its own member, or a Redis Cluster by Url).</summary>
        public RedLockEndPoint(IList<EndPoint> endPoints)
        {
            this.endPoints = endPoints ?? new List<EndPoint>();
        }

        /// <summary>An endpoint from an <see cref="System.Net.EndPoint"/>.</summary>
        public static implicit operator RedLockEndPoint(EndPoint endPoint) => new RedLockEndPoint(endPoint);

        /// <summary>An endpoint from a node URL (redis://, rediss://, redis+cluster://).</summary>
        public static implicit operator RedLockEndPoint(string url) => new RedLockEndPoint { Url = url };

        /// <summary>The server.</summary>
        public EndPoint EndPoint
        {
            get => endPoints.Count > 0 ? endPoints[0] : null;
            set => endPoints = new List<EndPoint> { value };
        }

        /// <summary>The endpoints; more than one is refused.</summary>
        public IList<EndPoint> EndPoints => endPoints;

        /// <summary>A node URL instead of EndPoint (then Password, Ssl and RedisDatabase do not apply).</summary>
        public string Url { get; set; }

        /// <summary>Use TLS (rediss://).</summary>
        public bool Ssl { get; set; }

        /// <summary>The password (AUTH).</summary>
        public string Password { get; set; }

        /// <summary>Connect timeout in ms (the largest of all endpoints is the client's).</summary>
        public int? ConnectionTimeout { get; set; }

        /// <summary>Not used: the engine has a per-request node timeout (QuorumlockSettings.NodeTimeout).</summary>
        public int? SyncTimeout { get; set; }

        /// <summary>The database (default 0).</summary>
        public int? RedisDatabase { get; set; }

        /// <summary>"&lt;prefix&gt;{0}": keys are &lt;prefix&gt;&lt;resource&gt;, as RedLock.net's string.Format; default "redlock:{0}". The same on every endpoint.</summary>
        public string RedisKeyFormat { get; set; }

        /// <summary>Not used.</summary>
        public int? ConfigCheckSeconds { get; set; }

        internal string ToUrl(int index)
        {
            if (Url != null)
            {
                return Url;
            }
            if (endPoints.Count != 1 || endPoints[0] == null)
            {
                throw QuorumlockException.Invalid("connect", "endpoint " + index + " must have exactly one EndPoint (got " + endPoints.Count + "); list each master as its own RedLockEndPoint");
            }
            string host;
            int port;
            var dns = endPoints[0] as DnsEndPoint;
            var ip = endPoints[0] as IPEndPoint;
            if (dns != null)
            {
                host = dns.Host;
                port = dns.Port;
            }
            else if (ip != null)
            {
                host = ip.Address.AddressFamily == System.Net.Sockets.AddressFamily.InterNetworkV6 ? "[" + ip.Address + "]" : ip.Address.ToString();
                port = ip.Port;
            }
            else
            {
                throw QuorumlockException.Invalid("connect", "endpoint " + index + " is a " + endPoints[0].GetType().Name + "; use a DnsEndPoint, an IPEndPoint or a Url");
            }
            var auth = string.IsNullOrEmpty(Password) ? string.Empty : ":" + Uri.EscapeDataString(Password) + "@";
            var db = RedisDatabase ?? 0;
            if (db < 0)
            {
                throw QuorumlockException.Invalid("connect", "endpoint " + index + ": RedisDatabase must not be negative");
            }
            return (Ssl ? "rediss://" : "redis://") + auth + host + ":" + port + "/" + db;
        }
    }

    /// <summary>
    /// RedLock.net's RedLockFactory over quorumlock:
    /// <c>var factory = RedLockFactory.Create(endPoints); await using (var l = await factory.CreateLockAsync(resource, expiry, wait, retry)) { if (l.IsAcquired) ... }</c>.
    /// Defaults are RedLock.net's: no restart quarantine, no TTL cap, keys "redlock:&lt;resource&gt;"
    /// (the same keys, so RedLock.net and quorumlock processes exclude each other during a migration);
    /// a held lock is extended by the engine until disposed, and its status turns to Expired
    /// (or Conflicted) as soon as the engine finds it lost.
    /// </summary>
    public sealed class RedLockFactory : IDistributedLockFactory, IDisposable
    {
        private readonly QuorumlockClient client;
        private readonly int quorum;

        private RedLockFactory(QuorumlockClient client)
        {
            this.client = client;
            quorum = client.NodeCount / 2 + 1;
        }

        /// <summary>The native client behind the factory.</summary>
        public QuorumlockClient Client => client;

        /// <summary>Connects to the endpoints (independent masters; quorum N / 2 + 1).</summary>
        /// <param name="endPoints">One per master.</param>
        /// <param name="settings">quorumlock settings over RedLock.net's defaults (e.g. Quarantine = On).</param>
        public static RedLockFactory Create(IList<RedLockEndPoint> endPoints, QuorumlockSettings settings = null)
        {
            NativeLibrary.EnsureLoaded();
            if (endPoints == null || endPoints.Count == 0)
            {
                throw QuorumlockException.Invalid("connect", "endPoints must not be null or empty");
            }
            var s = settings?.Clone() ?? new QuorumlockSettings();
            s.Quarantine = s.Quarantine ?? QuarantineMode.Off;
            s.MaxTtl = s.MaxTtl ?? TimeSpan.MaxValue; // no cap, as RedLock.net (the engine takes up to 2^53 - 1 ms)
            s.KeyFormat = s.KeyFormat ?? KeyFormat.Bare; // RedLock.net's keys: string.Format(RedisKeyFormat, resource)
            var urls = new List<string>();
            string format = null;
            int? connect = null;
            for (var i = 0; i < endPoints.Count; i++)
            {
                var ep = endPoints[i] ?? throw QuorumlockException.Invalid("connect", "endpoint " + i + " is null");
                urls.Add(ep.ToUrl(i));
                var f = ep.RedisKeyFormat ?? "redlock:{0}";
                if (format != null && f != format)
                {
                    throw QuorumlockException.Invalid("connect", "every endpoint must use the same RedisKeyFormat");
                }
                format = f;
                if (ep.ConnectionTimeout.HasValue)
                {
                    connect = Math.Max(connect ?? 0, ep.ConnectionTimeout.Value);
                }
            }
            if (s.KeyPrefix == null)
            {
                if (!format.EndsWith("{0}", StringComparison.Ordinal) || format.IndexOf("{0}", StringComparison.Ordinal) != format.Length - 3)
                {
                    throw QuorumlockException.Invalid("connect", "RedisKeyFormat must be \"<prefix>{0}\", got \"" + format + "\"");
                }
                s.KeyPrefix = format.Substring(0, format.Length - 3).Replace("{{", "{").Replace("}}", "}");
            }
            if (connect.HasValue && !s.ConnectTimeout.HasValue)
            {
                s.ConnectTimeout = TimeSpan.FromMilliseconds(Math.Max(connect.Value, 1));
            }
            return new RedLockFactory(QuorumlockClient.Connect(urls, s));
        }

        /// <inheritdoc/>
        public IRedLock CreateLock(string resource, TimeSpan expiryTime) =>
            Take(resource, expiryTime, null, null, CancellationToken.None);

        /// <inheritdoc/>
        public Task<IRedLock> CreateLockAsync(string resource, TimeSpan expiryTime) =>
            Task.Run(() => CreateLock(resource, expiryTime));

        /// <inheritdoc/>
        public IRedLock CreateLock(string resource, TimeSpan expiryTime, TimeSpan waitTime, TimeSpan retryTime, CancellationToken? cancellationToken = null) =>
            Take(resource, expiryTime, waitTime, retryTime, cancellationToken ?? CancellationToken.None);

        /// <inheritdoc/>
        public Task<IRedLock> CreateLockAsync(string resource, TimeSpan expiryTime, TimeSpan waitTime, TimeSpan retryTime, CancellationToken? cancellationToken = null)
        {
            // The C call blocks for up to waitTime: give it its own thread, not a pool thread.
            return Task.Factory.StartNew(
                () => CreateLock(resource, expiryTime, waitTime, retryTime, cancellationToken),
                CancellationToken.None,
                TaskCreationOptions.LongRunning,
                TaskScheduler.Default);
        }

        /// <summary>Frees the client; locks still held stay held until disposed.</summary>
        public void Dispose() => client.Dispose();

        private IRedLock Take(string resource, TimeSpan expiry, TimeSpan? wait, TimeSpan? retry, CancellationToken ct)
        {
            if (resource == null)
            {
                throw QuorumlockException.Invalid("acquire", "the resource must not be null");
            }
            if (expiry <= TimeSpan.Zero)
            {
                throw QuorumlockException.Invalid("acquire", "expiryTime must be positive, got " + expiry);
            }
            var o = new LockOptions { Ttl = expiry, AutoExtend = true, MinValidity = TimeSpan.Zero };
            if (wait.HasValue && retry.HasValue && wait.Value > TimeSpan.Zero && retry.Value > TimeSpan.Zero)
            {
                o.Wait = wait;
                o.RetryDelay = retry;
                o.RetryJitter = TimeSpan.Zero;
            }
            else
            {
                // RedLock.net: 3 attempts, a random 0..400 ms apart.
                o.RetryCount = 2;
                o.RetryDelay = TimeSpan.Zero;
                o.RetryJitter = TimeSpan.FromMilliseconds(400);
            }
            try
            {
                var native = client.AcquireCore(QuorumlockClient.Utf8(resource, "the resource", "acquire"), resource, o, ct);
                return new RedLock(resource, native, RedLockStatus.Acquired, new RedLockInstanceSummary(quorum, 0, 0), null);
            }
            catch (QuorumlockException e) when (e.Code == QuorumlockCode.Busy || e.Code == QuorumlockCode.Quorum || e.Code == QuorumlockCode.Validity)
            {
                var status = e.Code == QuorumlockCode.Busy ? RedLockStatus.Conflicted : e.Code == QuorumlockCode.Quorum ? RedLockStatus.NoQuorum : RedLockStatus.Expired;
                return new RedLock(resource, null, status, Summary(e.Nodes), e);
            }
        }

        private static RedLockInstanceSummary Summary(IList<NodeReport> nodes)
        {
            int acquired = 0, conflicted = 0, error = 0;
            foreach (var n in nodes)
            {
                switch (n.KindName)
                {
                    case "Ok": acquired++; break;
                    case "HeldByOther": conflicted++; break;
                    default: error++; break;
                }
            }
            return new RedLockInstanceSummary(acquired, conflicted, error);
        }
    }

    /// <summary>A lock from <see cref="RedLockFactory"/>; dispose it to release.</summary>
    public sealed class RedLock : IRedLock
    {
        private readonly QuorumlockLock native;
        private int status;
        private RedLockInstanceSummary summary;

        internal RedLock(string resource, QuorumlockLock native, RedLockStatus status, RedLockInstanceSummary summary, QuorumlockException error)
        {
            Resource = resource;
            this.native = native;
            this.status = (int)status;
            this.summary = summary;
            LastError = error;
        }

        /// <inheritdoc/>
        public string Resource { get; }

        /// <inheritdoc/>
        public string LockId => native?.Value ?? string.Empty;

        /// <inheritdoc/>
        public bool IsAcquired => Status == RedLockStatus.Acquired;

        /// <inheritdoc/>
        public RedLockStatus Status
        {
            get
            {
                var s = (RedLockStatus)Volatile.Read(ref status);
                if (s == RedLockStatus.Acquired && native != null && native.LostReason != LostReason.None)
                {
                    return native.LostReason == LostReason.Taken ? RedLockStatus.Conflicted : RedLockStatus.Expired;
                }
                return s;
            }
        }

        /// <inheritdoc/>
        public RedLockInstanceSummary InstanceSummary => summary;

        /// <inheritdoc/>
        public int ExtendCount => 0;

        /// <summary>Why it was not acquired, with the per-node report (null when acquired).</summary>
        public QuorumlockException LastError { get; }

        /// <summary>Validity left; zero when not held.</summary>
        public TimeSpan Remaining => native?.Remaining ?? TimeSpan.Zero;

        /// <summary>Cancelled when the engine finds the lock lost (CancellationToken.None when not acquired).</summary>
        public CancellationToken LostToken => native?.LostToken ?? CancellationToken.None;

        /// <summary>The native lock (null when not acquired).</summary>
        public QuorumlockLock Lock => native;

        /// <summary>Releases the lock (blocking one round trip); node errors are swallowed as in RedLock.net.</summary>
        public void Dispose()
        {
            native?.Dispose();
            Volatile.Write(ref status, (int)RedLockStatus.Unlocked);
            summary = default(RedLockInstanceSummary);
        }

        /// <summary>Dispose on a pool thread (the C release blocks).</summary>
        public ValueTask DisposeAsync() => new ValueTask(Task.Run(() => Dispose()));
    }
}
