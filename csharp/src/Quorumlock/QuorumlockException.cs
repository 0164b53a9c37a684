using System;
using System.Collections.Generic;
using System.Collections.ObjectModel;
using System.Runtime.InteropServices;

namespace Quorumlock
{
    /// <summary>The C ABI's result codes (QL_* in quorumlock.h); the numbers never change.</summary>
    public enum QuorumlockCode : uint
    {
        /// <summary>QL_OK: success.</summary>
        Ok = 0,
        /// <summary>QL_BUSY: other owners hold the resource.</summary>
        Busy = 1,
        /// <summary>QL_QUORUM: node failures blocked the quorum.</summary>
        Quorum = 2,
        /// <summary>QL_VALIDITY: a quorum was reached with too little validity left.</summary>
        Validity = 3,
        /// <summary>QL_CANCELLED: the caller cancelled.</summary>
        Cancelled = 4,
        /// <summary>QL_LOST: the held lock expired or was taken over.</summary>
        Lost = 5,
        /// <summary>QL_EXT_LIMIT: an extension cap was reached.</summary>
        ExtLimit = 6,
        /// <summary>QL_INVALID: bad input, configuration or state; nothing was sent.</summary>
        Invalid = 7,
        /// <summary>QL_CONNECTION: fewer than a quorum of nodes could be reached (RequireQuorum).</summary>
        Connection = 8,
        /// <summary>QL_AUTH: credentials or ACL refused.</summary>
        Auth = 9,
        /// <summary>QL_SCRIPT: scripting unavailable.</summary>
        Script = 10,
        /// <summary>QL_MISCONFIGURED: unsafe node settings.</summary>
        Misconfigured = 11,
        /// <summary>QL_TIMEOUT: no reply in time.</summary>
        Timeout = 12,
        /// <summary>QL_INTERNAL: a bug; the engine caught a panic at the C boundary.</summary>
        Internal = 99,
    }

    /// <summary>Why a held lock was lost (QL_LOST_*).</summary>
    public enum LostReason : uint
    {
        /// <summary>Not lost.</summary>
        None = 0,
        /// <summary>The validity ran out, or the keys expired or vanished.</summary>
        Expired = 1,
        /// <summary>Another owner holds the keys now.</summary>
        Taken = 2,
        /// <summary>The auto-extension stopped at a cap and the validity ran out.</summary>
        ExtensionLimit = 3,
    }

    /// <summary>What happened on one node in the call that failed.</summary>
    public sealed class NodeReport
    {
        internal NodeReport(int index, string address, uint kind, string kindName, long? latencyMicroseconds)
        {
            Index = index;
            Address = address;
            Kind = kind;
            KindName = kindName;
            LatencyMicroseconds = latencyMicroseconds;
        }

        /// <summary>Position in the node list given to the client.</summary>
        public int Index { get; }

        /// <summary>host:port/db, never credentials.</summary>
        public string Address { get; }

        /// <summary>The QL_NODE_* number.</summary>
        public uint Kind { get; }

        /// <summary>Its name: "Ok", "HeldByOther", "Timeout", "ConnectionRefused", ...</summary>
        public string KindName { get; }

        /// <summary>Reply latency; null when the node gave no reply.</summary>
        public long? LatencyMicroseconds { get; }

        /// <inheritdoc/>
        public override string ToString() =>
            "node " + Index + " (" + Address + "): " + KindName + (LatencyMicroseconds.HasValue ? " in " + LatencyMicroseconds + " us" : ", no reply");
    }

    /// <summary>
    /// Every error of the package: <see cref="Code"/> is the C ABI's result code, and engine
    /// failures carry the per-node report (<see cref="Nodes"/>).
    /// </summary>
    public class QuorumlockException : Exception
    {
        private static readonly IList<NodeReport> NoNodes = new ReadOnlyCollection<NodeReport>(new NodeReport[0]);

        /// <summary>Creates an error with a code and a message.</summary>
        public QuorumlockException(QuorumlockCode code, string message, Exception inner = null)
            : this(code, message, string.Empty, NoNodes, 0, LostReason.None, inner)
        {
        }

        internal QuorumlockException(QuorumlockCode code, string message, string operation, IList<NodeReport> nodes, int attempts, LostReason lostReason, Exception inner)
            : base(message, inner)
        {
            Code = code;
            Operation = operation;
            Nodes = nodes;
            Attempts = attempts;
            LostReason = lostReason;
            HResult = unchecked((int)0x80510000 | (int)code);
        }

        /// <summary>The C result code.</summary>
        public QuorumlockCode Code { get; }

        /// <summary>The C name of the code ("QL_BUSY").</summary>
        public string CodeName => CodeNameOf(Code);

        /// <summary>"connect", "acquire", "extend", "release", ...</summary>
        public string Operation { get; }

        /// <summary>What happened on each node (empty when none was asked).</summary>
        public IList<NodeReport> Nodes { get; }

        /// <summary>Acquisition attempts made (0 when nothing was sent).</summary>
        public int Attempts { get; }

        /// <summary>For <see cref="QuorumlockCode.Lost"/>: why.</summary>
        public LostReason LostReason { get; }

        /// <summary>"QL_BUSY" for <see cref="QuorumlockCode.Busy"/>, ...; "QL_UNKNOWN" for other numbers.</summary>
        public static string CodeNameOf(QuorumlockCode code)
        {
            switch (code)
            {
                case QuorumlockCode.Ok: return "QL_OK";
                case QuorumlockCode.Busy: return "QL_BUSY";
                case QuorumlockCode.Quorum: return "QL_QUORUM";
                case QuorumlockCode.Validity: return "QL_VALIDITY";
                case QuorumlockCode.Cancelled: return "QL_CANCELLED";
                case QuorumlockCode.Lost: return "QL_LOST";
                case QuorumlockCode.ExtLimit: return "QL_EXT_LIMIT";
                case QuorumlockCode.Invalid: return "QL_INVALID";
                case QuorumlockCode.Connection: return "QL_CONNECTION";
                case QuorumlockCode.Auth: return "QL_AUTH";
                case QuorumlockCode.Script: return "QL_SCRIPT";
                case QuorumlockCode.Misconfigured: return "QL_MISCONFIGURED";
                case QuorumlockCode.Timeout: return "QL_TIMEOUT";
                case QuorumlockCode.Internal: return "QL_INTERNAL";
                default: return "QL_UNKNOWN";
            }
        }

        internal static QuorumlockException Invalid(string operation, string what, Exception inner = null) =>
            new QuorumlockException(QuorumlockCode.Invalid, "quorumlock: " + operation + ": QL_INVALID: " + what, operation, NoNodes, 0, LostReason.None, inner);

        /// <summary>Reads and frees a C error (which may be IntPtr.Zero).</summary>
        internal static QuorumlockException FromNative(uint code, IntPtr err, string operation, string resource)
        {
            var message = string.Empty;
            var nodes = new List<NodeReport>();
            var attempts = 0;
            var lost = LostReason.None;
            if (err != IntPtr.Zero)
            {
                try
                {
                    code = Native.quorumlock_error_code(err);
                    message = Native.Text((byte[] b, UIntPtr l, out UIntPtr n) => Native.quorumlock_error_message(err, b, l, out n));
                    attempts = (int)Native.quorumlock_error_attempts(err);
                    lost = (LostReason)Native.quorumlock_error_lost_reason(err);
                    var count = (int)Native.quorumlock_error_node_count(err).ToUInt64();
                    for (var i = 0; i < count; i++)
                    {
                        var idx = (UIntPtr)i;
                        Native.quorumlock_error_node_kind(err, idx, out var kind);
                        Native.quorumlock_error_node_latency_us(err, idx, out var latency);
                        var addr = Native.Text((byte[] b, UIntPtr l, out UIntPtr n) => Native.quorumlock_error_node_address(err, idx, b, l, out n));
                        var name = Marshal.PtrToStringAnsi(Native.quorumlock_node_kind_name(kind));
                        nodes.Add(new NodeReport(i, addr, kind, name, latency == ulong.MaxValue ? (long?)null : (long)latency));
                    }
                }
                finally
                {
                    Native.quorumlock_error_free(err);
                }
            }
            var codeName = CodeNameOf((QuorumlockCode)code);
            var head = "quorumlock: " + operation;
            if (resource != null)
            {
                head += " \"" + (resource.Length > 80 ? resource.Substring(0, 80) + "..." : resource) + "\"";
            }
            var text = message.StartsWith(codeName, StringComparison.Ordinal) ? message : (message.Length == 0 ? codeName : codeName + ": " + message);
            return new QuorumlockException((QuorumlockCode)code, head + ": " + text, operation, new ReadOnlyCollection<NodeReport>(nodes), attempts, lost, null);
        }
    }
}
