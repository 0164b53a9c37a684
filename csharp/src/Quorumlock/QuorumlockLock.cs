using System;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Quorumlock
{
    /// <summary>
    /// A held distributed lock. Act on the protected resource only while <see cref="Remaining"/>
    /// is positive; <see cref="LostToken"/> is cancelled when the engine finds it lost.
    /// Dispose releases it.
    /// </summary>
    public sealed class QuorumlockLock : IDisposable, IAsyncDisposable
    {
        private readonly LockHandle handle;
        private readonly LostState lost;
        private readonly ulong ttlMs;
        private int released;

        internal QuorumlockLock(LockHandle handle, string resource)
        {
            this.handle = handle;
            lost = new LostState();
            ttlMs = Native.quorumlock_lock_ttl_ms(handle);
            Resource = resource;
            Value = ReadValue();
            LostState.Watch(lost, this);
        }

        /// <summary>The resource name (Base64 for a binary name).</summary>
        public string Resource { get; }

        /// <summary>The lock's random value (40 hex characters), the same on every node.</summary>
        public string Value { get; }

        /// <summary>The TTL it was acquired with (what <see cref="Extend"/> uses by default), as the engine has it.</summary>
        public TimeSpan Ttl => TimeSpan.FromMilliseconds(ttlMs);

        /// <summary>Validity left (whole milliseconds); zero once expired, lost or released.</summary>
        public TimeSpan Remaining
        {
            get
            {
                if (handle.IsClosed)
                {
                    return TimeSpan.Zero;
                }
                try
                {
                    return TimeSpan.FromMilliseconds(Native.quorumlock_lock_remaining_ms(handle));
                }
                catch (ObjectDisposedException)
                {
                    return TimeSpan.Zero;
                }
            }
        }

        /// <summary>Held: validity left and not released.</summary>
        public bool IsHeld => Volatile.Read(ref released) == 0 && Remaining > TimeSpan.Zero;

        /// <summary>Lost: expired, taken over or capped before release.</summary>
        public bool IsLost => LostReason != LostReason.None;

        /// <summary>
        /// Why it was lost (Expired, Taken, ExtensionLimit), as the engine has it: read without
        /// sending anything; None while held and after a release.
        /// </summary>
        public LostReason LostReason
        {
            get
            {
                var fired = lost.Reason;
                if (fired != LostReason.None)
                {
                    return fired;
                }
                return Volatile.Read(ref released) != 0 ? LostReason.None : Polled();
            }
        }

        /// <summary>
        /// Cancelled (on a pool thread) once the lock is lost: within about 20 ms after the
        /// engine finds it lost (validity run out, taken over, an extend that failed). Never
        /// after a release.
        /// </summary>
        public CancellationToken LostToken => lost.Source.Token;

        /// <summary>The fencing token of a lock taken with <see cref="LockOptions.Fenced"/>.</summary>
        /// <exception cref="QuorumlockException">Invalid when the lock is not fenced.</exception>
        public ulong Token
        {
            get
            {
                if (Native.quorumlock_lock_token(Live("token"), out var t) != 0)
                {
                    throw QuorumlockException.Invalid("token", "the lock was not acquired with Fenced = true");
                }
                return t;
            }
        }

        /// <summary>
        /// Extends the lock to <paramref name="ttl"/> (default: its TTL) from now on a quorum of
        /// nodes. An expired lock is never revived (code Lost); a failed extend keeps the deadline.
        /// </summary>
        public void Extend(TimeSpan? ttl = null)
        {
            var ms = ttl.HasValue ? QuorumlockClient.Ms(ttl.Value, "ttl", "extend") : ttlMs;
            var r = Native.quorumlock_lock_extend(Live("extend"), ms, out var err);
            if (r != 0)
            {
                var e = QuorumlockException.FromNative(r, err, "extend", Resource);
                if (e.Code == QuorumlockCode.Lost)
                {
                    var why = Polled();
                    lost.Fire(why != LostReason.None ? why : e.LostReason != LostReason.None ? e.LostReason : LostReason.Expired);
                }
                throw e;
            }
        }

        /// <summary>Starts or stops the engine's automatic extension.</summary>
        public void SetAutoExtend(bool on)
        {
            var r = Native.quorumlock_lock_set_auto_extend(Live("autoExtend"), on, out var err);
            if (r != 0)
            {
                throw QuorumlockException.FromNative(r, err, "autoExtend", Resource);
            }
        }

        /// <summary>
        /// Releases it on every node (blocks one round trip). Returns whether a quorum still held
        /// it; false after a loss or a previous release (which sends nothing).
        /// </summary>
        public bool Release()
        {
            if (Interlocked.Exchange(ref released, 1) != 0)
            {
                return false;
            }
            LostState.Unwatch(lost);
            var r = Native.quorumlock_lock_release(Live("release"), out var held, out var err);
            if (r != 0)
            {
                throw QuorumlockException.FromNative(r, err, "release", Resource);
            }
            return held;
        }

        /// <summary>Release on a pool thread (the C call blocks).</summary>
        public Task<bool> ReleaseAsync() => Task.Run(() => Release());

        /// <summary>Releases (errors are swallowed, the keys then expire) and frees the handle.</summary>
        public void Dispose()
        {
            if (handle.IsClosed)
            {
                return;
            }
            try
            {
                Release();
            }
            catch (QuorumlockException)
            {
                // The keys expire by themselves.
            }
            handle.Dispose();
        }

        /// <summary>Dispose on a pool thread.</summary>
        public ValueTask DisposeAsync() => new ValueTask(Task.Run(() => Dispose()));

        /// <summary>Called by the poller: a held lock whose validity ran out is lost.</summary>
        internal void CheckLost()
        {
            if (Volatile.Read(ref released) != 0 || handle.IsClosed)
            {
                LostState.Unwatch(lost);
                return;
            }
            var why = Polled();
            if (why != LostReason.None && Volatile.Read(ref released) == 0)
            {
                lost.Fire(why);
            }
        }

        /// <summary>The engine's loss reason (QL_LOST_*; None while held, released or disposed).</summary>
        private LostReason Polled()
        {
            if (handle.IsClosed)
            {
                return LostReason.None;
            }
            try
            {
                return (LostReason)Native.quorumlock_lock_lost_reason(handle);
            }
            catch (ObjectDisposedException)
            {
                return LostReason.None;
            }
        }

        private LockHandle Live(string op)
        {
            if (handle.IsClosed)
            {
                throw QuorumlockException.Invalid(op, "the lock is disposed");
            }
            return handle;
        }

        private string ReadValue()
        {
            var buf = new byte[64];
            Native.quorumlock_lock_value(handle, buf, (UIntPtr)buf.Length, out var n);
            return Encoding.ASCII.GetString(buf, 0, (int)Math.Min(n.ToUInt64(), 63));
        }
    }
}
