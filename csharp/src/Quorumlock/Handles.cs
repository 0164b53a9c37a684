using System;
using System.Runtime.InteropServices;

namespace Quorumlock
{
    /// <summary>A C handle freed by its <c>_free</c> function; SafeHandle's reference count keeps
    /// it alive during calls, so a free never races a call on the same handle.</summary>
    internal abstract class QlHandle : SafeHandle
    {
        protected QlHandle()
            : base(IntPtr.Zero, true)
        {
        }

        public override bool IsInvalid => handle == IntPtr.Zero;

        internal void Set(IntPtr ptr) => SetHandle(ptr);
    }

    internal sealed class ConfigHandle : QlHandle
    {
        protected override bool ReleaseHandle()
        {
            Native.quorumlock_config_free(handle);
            return true;
        }
    }

    internal sealed class ClientHandle : QlHandle
    {
        protected override bool ReleaseHandle()
        {
            Native.quorumlock_client_free(handle);
            return true;
        }
    }

    internal sealed class OptionsHandle : QlHandle
    {
        protected override bool ReleaseHandle()
        {
            Native.quorumlock_lock_options_free(handle);
            return true;
        }
    }

    internal sealed class CancelHandle : QlHandle
    {
        protected override bool ReleaseHandle()
        {
            Native.quorumlock_cancel_free(handle);
            return true;
        }
    }

    internal sealed class LockHandle : QlHandle
    {
        protected override bool ReleaseHandle()
        {
            Native.quorumlock_lock_free(handle);
            return true;
        }
    }
}
