using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Quorumlock
{
    /// <summary>
    /// A client of N independent Redis masters (quorum N / 2 + 1) over libquorumlock. Safe for
    /// concurrent use; dispose it when done (locks taken through it stay usable).
    /// </summary>
    public sealed class QuorumlockClient : IDisposable
    {
        private readonly ClientHandle handle;

        private QuorumlockClient(ClientHandle handle, QuorumlockSettings settings)
        {
            this.handle = handle;
            Settings = settings;
        }

        internal QuorumlockSettings Settings { get; }

        /// <summary>The number of configured nodes N.</summary>
        public int NodeCount => (int)Native.quorumlock_client_node_count(Live("nodeCount")).ToUInt64();

        /// <summary>The library's version ("0.2.0").</summary>
        public static string Version => NativeLibrary.Version;

        /// <summary>
        /// Validates the settings and connects to every node in parallel (blocking up to the
        /// connect timeout, default 1 s). Node URLs: redis://[user:password@]host:port[/db],
        /// rediss:// for TLS, redis+cluster://h:p,h:p for a Redis Cluster as one member.
        /// </summary>
        /// <exception cref="QuorumlockException">Invalid for bad input; Connection, Auth, ... with RequireQuorum.</exception>
        public static QuorumlockClient Connect(IEnumerable<string> nodes, QuorumlockSettings settings = null)
        {
            NativeLibrary.EnsureLoaded();
            return ConnectLoaded(nodes, settings);
        }

        /// <summary>
        /// Connect once the library is loaded: Mono binds the DllImports of a method when it
        /// compiles it, so no method that calls the library may run before EnsureLoaded.
        /// </summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static QuorumlockClient ConnectLoaded(IEnumerable<string> nodes, QuorumlockSettings settings)
        {
            if (nodes == null)
            {
                throw QuorumlockException.Invalid("connect", "nodes must not be null");
            }
            settings = settings?.Clone() ?? new QuorumlockSettings();
            if (Native.quorumlock_config_new(out var cfg) != 0)
            {
                throw QuorumlockException.Invalid("connect", "cannot create a configuration");
            }
            using (cfg)
            {
                var i = 0;
                foreach (var url in nodes)
                {
                    if (url == null)
                    {
                        throw QuorumlockException.Invalid("connect", "node " + i + " is null");
                    }
                    var bytes = Utf8(url, "node " + i, "connect");
                    var r = Native.quorumlock_config_add_node(cfg, bytes, (UIntPtr)bytes.Length, out var err);
                    if (r != 0)
                    {
                        throw QuorumlockException.FromNative(r, err, "connect", null);
                    }
                    i++;
                }
                Configure(cfg, settings);
                var rc = Native.quorumlock_client_new(cfg, out var client, out var cerr);
                if (rc != 0)
                {
                    client.Dispose();
                    throw QuorumlockException.FromNative(rc, cerr, "connect", null);
                }
                return new QuorumlockClient(client, settings);
            }
        }

        /// <summary>
        /// Acquires <paramref name="resource"/> (1..1024 UTF-8 bytes), retrying as the options
        /// say; blocks the calling thread. Cancelling <paramref name="cancellationToken"/>
        /// cancels a waiting acquire (its keys are cleaned up) with an
        /// <see cref="OperationCanceledException"/> whose inner exception has code Cancelled.
        /// </summary>
        /// <exception cref="QuorumlockException">Busy, Quorum, Validity (with the node report), Invalid.</exception>
        public QuorumlockLock Acquire(string resource, LockOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (resource == null)
            {
                throw QuorumlockException.Invalid("acquire", "the resource must not be null");
            }
            return AcquireCore(Utf8(resource, "the resource", "acquire"), resource, options, cancellationToken);
        }

        /// <summary>As <see cref="Acquire(string, LockOptions, CancellationToken)"/> for a binary name.</summary>
        public QuorumlockLock Acquire(byte[] resource, LockOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            if (resource == null)
            {
                throw QuorumlockException.Invalid("acquire", "the resource must not be null");
            }
            return AcquireCore((byte[])resource.Clone(), null, options, cancellationToken);
        }

        /// <summary>
        /// Acquire on a worker thread: the C call blocks, so it runs in Task.Run (or on its own
        /// thread when <see cref="LockOptions.Wait"/> is set, so a long wait holds no pool thread).
        /// </summary>
        public Task<QuorumlockLock> AcquireAsync(string resource, LockOptions options = null, CancellationToken cancellationToken = default(CancellationToken))
        {
            var creation = options?.Wait != null ? TaskCreationOptions.LongRunning : TaskCreationOptions.None;
            return Task.Factory.StartNew(() => Acquire(resource, options, cancellationToken), CancellationToken.None, creation, TaskScheduler.Default);
        }

        /// <summary>Frees the client. Locks taken through it stay usable; disposing twice does nothing.</summary>
        public void Dispose() => handle.Dispose();

        /// <summary>
        /// Releases the keys of <paramref name="resource"/> that hold <paramref name="value"/> on
        /// every node, whoever took them (another process, or the library this one replaces);
        /// other owners' keys are never touched. Blocks one round trip. Returns whether a quorum
        /// of nodes still held the value.
        /// </summary>
        /// <exception cref="QuorumlockException">Invalid for a value the engine never gives (under 16 printable ASCII characters) or bad input.</exception>
        public bool ReleaseValue(string resource, string value) => ReleaseValue(new[] { resource }, value);

        /// <summary>As <see cref="ReleaseValue(string, string)"/> for the resources of a multi-resource lock.</summary>
        public bool ReleaseValue(IList<string> resources, string value)
        {
            bool held = false;
            ByValue("release", resources, value, (ClientHandle c, IntPtr[] ptrs, UIntPtr[] lens, UIntPtr n, byte[] v, out IntPtr err) =>
                Native.quorumlock_client_release_value(c, ptrs, lens, n, v, (UIntPtr)v.Length, out held, out err));
            return held;
        }

        /// <summary>
        /// Extends the keys of <paramref name="resource"/> that hold <paramref name="value"/> to
        /// <paramref name="ttl"/> from now on a quorum of nodes; keys that are gone are never
        /// re-created. Blocks one round trip. Returns the validity left.
        /// </summary>
        /// <exception cref="QuorumlockException">Lost (gone or taken), Quorum or Validity (transient), Invalid.</exception>
        public TimeSpan ExtendValue(string resource, string value, TimeSpan ttl) => ExtendValue(new[] { resource }, value, ttl);

        /// <summary>As <see cref="ExtendValue(string, string, TimeSpan)"/> for the resources of a multi-resource lock.</summary>
        public TimeSpan ExtendValue(IList<string> resources, string value, TimeSpan ttl)
        {
            var ms = Ms(ttl, "ttl", "extend");
            ulong left = 0;
            ByValue("extend", resources, value, (ClientHandle c, IntPtr[] ptrs, UIntPtr[] lens, UIntPtr n, byte[] v, out IntPtr err) =>
                Native.quorumlock_client_extend_value(c, ptrs, lens, n, v, (UIntPtr)v.Length, ms, out left, out err));
            return TimeSpan.FromMilliseconds(left);
        }

        private delegate uint ByValueCall(ClientHandle client, IntPtr[] resources, UIntPtr[] lens, UIntPtr count, byte[] value, out IntPtr err);

        /// <summary>Pins the UTF-8 names for the call and throws its typed error.</summary>
        private void ByValue(string op, IList<string> resources, string value, ByValueCall call)
        {
            if (resources == null || resources.Count == 0)
            {
                throw QuorumlockException.Invalid(op, "no resources");
            }
            if (value == null)
            {
                throw QuorumlockException.Invalid(op, "the value must not be null");
            }
            var label = resources.Count == 1 ? resources[0] : string.Join(",", resources);
            var names = new byte[resources.Count][];
            for (var i = 0; i < names.Length; i++)
            {
                if (resources[i] == null)
                {
                    throw QuorumlockException.Invalid(op, "resource " + i + " is null");
                }
                names[i] = Utf8(resources[i], "resource " + i, op);
            }
            var v = Utf8(value, "the value", op);
            var client = Live(op, label);
            var pins = new GCHandle[names.Length];
            var ptrs = new IntPtr[names.Length];
            var lens = new UIntPtr[names.Length];
            uint r;
            IntPtr err;
            try
            {
                for (var i = 0; i < names.Length; i++)
                {
                    // A zero-length array has no address to pin: give it one byte (length 0).
                    pins[i] = GCHandle.Alloc(names[i].Length == 0 ? new byte[1] : names[i], GCHandleType.Pinned);
                    ptrs[i] = pins[i].AddrOfPinnedObject();
                    lens[i] = (UIntPtr)names[i].Length;
                }
                r = call(client, ptrs, lens, (UIntPtr)names.Length, v, out err);
            }
            catch (ObjectDisposedException e)
            {
                throw QuorumlockException.Invalid(op, "the client is disposed", e);
            }
            finally
            {
                foreach (var p in pins)
                {
                    if (p.IsAllocated)
                    {
                        p.Free();
                    }
                }
            }
            if (r != 0)
            {
                throw QuorumlockException.FromNative(r, err, op, label);
            }
        }

        internal QuorumlockLock AcquireCore(byte[] resource, string label, LockOptions options, CancellationToken ct)
        {
            const string op = "acquire";
            var o = options ?? new LockOptions();
            var client = Live(op, label);
            var ttl = o.Ttl.HasValue ? Ms(o.Ttl.Value, "Ttl", op) : (ulong?)null; // null: the engine's default
            ct.ThrowIfCancellationRequested();
            {
                using (var opts = BuildOptions(ttl, o, op, label))
                {
                    CancelHandle cancel = null;
                    var reg = default(CancellationTokenRegistration);
                    var added = false;
                    uint r;
                    IntPtr lockPtr, err;
                    try
                    {
                        if (ct.CanBeCanceled)
                        {
                            Check(Native.quorumlock_cancel_new(out cancel), op, label);
                            cancel.DangerousAddRef(ref added);
                            var c = cancel;
                            reg = ct.Register(() => Native.quorumlock_cancel_trigger(c));
                        }
                        var cancelPtr = cancel == null ? IntPtr.Zero : cancel.DangerousGetHandle();
                        if (o.Wait.HasValue)
                        {
                            var wait = Ms(o.Wait.Value, "Wait", op);
                            r = Native.quorumlock_client_acquire_timeout(client, resource, (UIntPtr)resource.Length, opts, wait, cancelPtr, out lockPtr, out err);
                        }
                        else
                        {
                            r = Native.quorumlock_client_acquire(client, resource, (UIntPtr)resource.Length, opts, cancelPtr, out lockPtr, out err);
                        }
                    }
                    catch (ObjectDisposedException e)
                    {
                        throw QuorumlockException.Invalid(op, "the client is disposed", e);
                    }
                    finally
                    {
                        reg.Dispose();
                        if (added)
                        {
                            cancel.DangerousRelease();
                        }
                        cancel?.Dispose();
                    }
                    if (r != 0)
                    {
                        var e = QuorumlockException.FromNative(r, err, op, label);
                        if (e.Code == QuorumlockCode.Cancelled)
                        {
                            throw new OperationCanceledException(e.Message, e, ct);
                        }
                        throw e;
                    }
                    var h = new LockHandle();
                    h.Set(lockPtr);
                    return new QuorumlockLock(h, label ?? Convert.ToBase64String(resource));
                }
            }
        }

        private ClientHandle Live(string op, string resource = null)
        {
            if (handle.IsClosed)
            {
                throw QuorumlockException.Invalid(op, "the client is disposed");
            }
            return handle;
        }

        private OptionsHandle BuildOptions(ulong? ttl, LockOptions o, string op, string label)
        {
            if (Native.quorumlock_lock_options_new(out var opts) != 0)
            {
                throw QuorumlockException.Invalid(op, "cannot create options");
            }
            try
            {
                if (ttl.HasValue)
                {
                    Check(Native.quorumlock_lock_options_set_ttl_ms(opts, ttl.Value), op, label);
                }
                if (o.RetryCount.HasValue)
                {
                    if (o.RetryCount.Value < 0)
                    {
                        throw QuorumlockException.Invalid(op, "RetryCount must not be negative, got " + o.RetryCount.Value);
                    }
                    Check(Native.quorumlock_lock_options_set_retry_count(opts, (uint)o.RetryCount.Value), op, label);
                }
                if (o.RetryDelay.HasValue || o.RetryJitter.HasValue)
                {
                    var delay = o.RetryDelay.HasValue ? Ms(o.RetryDelay.Value, "RetryDelay", op) : 100UL;
                    var jitter = o.RetryJitter.HasValue ? Ms(o.RetryJitter.Value, "RetryJitter", op) : (o.RetryDelay.HasValue ? 0UL : 200UL);
                    Check(Native.quorumlock_lock_options_set_retry_delay_ms(opts, delay, jitter), op, label);
                }
                if (o.MinValidity.HasValue)
                {
                    Check(Native.quorumlock_lock_options_set_min_validity_ms(opts, Ms(o.MinValidity.Value, "MinValidity", op)), op, label);
                }
                var nodeTimeout = o.NodeTimeout ?? Settings.NodeTimeout;
                if (nodeTimeout.HasValue)
                {
                    Check(Native.quorumlock_lock_options_set_node_timeout_ms(opts, Ms(nodeTimeout.Value, "NodeTimeout", op)), op, label);
                }
                if (o.AutoExtend || o.ExtendInterval.HasValue)
                {
                    Check(Native.quorumlock_lock_options_set_auto_extend(opts, o.AutoExtend, o.ExtendInterval.HasValue ? Ms(o.ExtendInterval.Value, "ExtendInterval", op) : 0), op, label);
                }
                if (o.MaxExtensions != 0 || o.MaxHold != TimeSpan.Zero)
                {
                    if (o.MaxExtensions < 0)
                    {
                        throw QuorumlockException.Invalid(op, "MaxExtensions must not be negative");
                    }
                    Check(Native.quorumlock_lock_options_set_limits(opts, (uint)o.MaxExtensions, Ms(o.MaxHold, "MaxHold", op)), op, label);
                }
                if (o.Fenced)
                {
                    Check(Native.quorumlock_lock_options_set_fenced(opts, true, 0), op, label);
                }
                if (o.Value != null)
                {
                    var v = Utf8(o.Value, "Value", op);
                    var r = Native.quorumlock_lock_options_set_value(opts, v, (UIntPtr)v.Length, out var err);
                    if (r != 0)
                    {
                        throw QuorumlockException.FromNative(r, err, op, label);
                    }
                }
                return opts;
            }
            catch
            {
                opts.Dispose();
                throw;
            }
        }

        private static void Configure(ConfigHandle cfg, QuorumlockSettings s)
        {
            const string op = "connect";
            if (s.Quarantine.HasValue || s.QuarantineMargin.HasValue)
            {
                var margin = s.QuarantineMargin.HasValue ? Ms(s.QuarantineMargin.Value, "QuarantineMargin", op) : 0;
                Check(Native.quorumlock_config_set_quarantine(cfg, (uint)(s.Quarantine ?? QuarantineMode.On), margin), op, null);
            }
            if (s.EvictionCheck.HasValue)
            {
                Check(Native.quorumlock_config_set_eviction_check(cfg, (uint)s.EvictionCheck.Value), op, null);
            }
            if (s.MaxTtl.HasValue)
            {
                Check(Native.quorumlock_config_set_max_ttl_ms(cfg, Ms(s.MaxTtl.Value, "MaxTtl", op)), op, null);
            }
            if (s.ConnectTimeout.HasValue)
            {
                Check(Native.quorumlock_config_set_connect_timeout_ms(cfg, Ms(s.ConnectTimeout.Value, "ConnectTimeout", op)), op, null);
            }
            if (s.Notify.HasValue)
            {
                Check(Native.quorumlock_config_set_notify(cfg, s.Notify.Value), op, null);
            }
            if (s.RequireQuorum.HasValue)
            {
                Check(Native.quorumlock_config_set_require_quorum(cfg, s.RequireQuorum.Value), op, null);
            }
            if (s.KeyFormat.HasValue)
            {
                Check(Native.quorumlock_config_set_key_format(cfg, (uint)s.KeyFormat.Value), op, null);
            }
            if (s.KeyPrefix != null)
            {
                var p = Utf8(s.KeyPrefix, "KeyPrefix", op);
                Check(Native.quorumlock_config_set_key_prefix(cfg, p, (UIntPtr)p.Length), op, null);
            }
            if (s.DriftFactor.HasValue || s.DriftConstant.HasValue)
            {
                var c = s.DriftConstant.HasValue ? Ms(s.DriftConstant.Value, "DriftConstant", op) : 2UL;
                Check(Native.quorumlock_config_set_drift(cfg, s.DriftFactor ?? 0.01, c), op, null);
            }
            if (s.NodeTimeout.HasValue)
            {
                // Also the engine's default, for the calls by value (ReleaseValue, ExtendValue).
                if (Native.quorumlock_lock_options_new(out var opts) != 0)
                {
                    throw QuorumlockException.Invalid(op, "cannot create options");
                }
                using (opts)
                {
                    Check(Native.quorumlock_lock_options_set_node_timeout_ms(opts, Ms(s.NodeTimeout.Value, "NodeTimeout", op)), op, null);
                    Check(Native.quorumlock_config_set_lock_options(cfg, opts), op, null);
                }
            }
        }

        internal static void Check(uint r, string op, string resource)
        {
            if (r != 0)
            {
                throw QuorumlockException.FromNative(r, IntPtr.Zero, op, resource);
            }
        }

        /// <summary>Whole milliseconds of a non-negative TimeSpan (rounded down), or Invalid.</summary>
        internal static ulong Ms(TimeSpan t, string name, string op)
        {
            if (t < TimeSpan.Zero)
            {
                throw QuorumlockException.Invalid(op, name + " must not be negative, got " + t);
            }
            return (ulong)(t.Ticks / TimeSpan.TicksPerMillisecond);
        }

        /// <summary>Strict UTF-8 (a lone surrogate is Invalid, never replaced).</summary>
        internal static byte[] Utf8(string s, string what, string op)
        {
            try
            {
                return Native.StrictUtf8.GetBytes(s);
            }
            catch (EncoderFallbackException e)
            {
                throw QuorumlockException.Invalid(op, what + " is not valid Unicode (a lone surrogate)", e);
            }
        }
    }

    /// <summary>
    /// The lost signal of a lock. Not fed by the C lost callback: on Mono 6.8 a call from an
    /// engine thread into managed code attaches that thread, and the process then hangs at exit
    /// (the thread never returns to managed code). A background timer polls the validity instead.
    /// </summary>
    internal sealed class LostState
    {
        private static readonly ConcurrentDictionary<LostState, WeakReference<QuorumlockLock>> Watched = new ConcurrentDictionary<LostState, WeakReference<QuorumlockLock>>();
        private static readonly Timer Poller = new Timer(_ => Poll(), null, Timeout.Infinite, Timeout.Infinite);
        private static int polling;

        internal const int PollMilliseconds = 20;

        internal readonly CancellationTokenSource Source = new CancellationTokenSource();
        private int reason;

        internal LostReason Reason => (LostReason)Volatile.Read(ref reason);

        internal static void Watch(LostState state, QuorumlockLock owner)
        {
            Watched[state] = new WeakReference<QuorumlockLock>(owner);
            if (Interlocked.Exchange(ref polling, 1) == 0)
            {
                Poller.Change(PollMilliseconds, PollMilliseconds);
            }
        }

        internal static void Unwatch(LostState state)
        {
            WeakReference<QuorumlockLock> unused;
            Watched.TryRemove(state, out unused);
        }

        /// <summary>Marks the lock lost once and cancels the token on a pool thread.</summary>
        internal void Fire(LostReason why)
        {
            Unwatch(this);
            if (Interlocked.CompareExchange(ref reason, (int)why, 0) == 0)
            {
                ThreadPool.UnsafeQueueUserWorkItem(s =>
                {
                    try
                    {
                        ((LostState)s).Source.Cancel();
                    }
                    catch (Exception)
                    {
                        // A throwing registration must not take the process down from a pool thread.
                    }
                }, this);
            }
        }

        private static void Poll()
        {
            foreach (var entry in Watched)
            {
                QuorumlockLock owner;
                if (!entry.Value.TryGetTarget(out owner))
                {
                    Unwatch(entry.Key);
                    continue;
                }
                try
                {
                    owner.CheckLost();
                }
                catch (Exception)
                {
                    Unwatch(entry.Key);
                }
            }
        }
    }
}
