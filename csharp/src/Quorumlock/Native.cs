using System;
using System.Collections.Generic;
using System.IO;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;

namespace Quorumlock
{
    /// <summary>
    /// Finds libquorumlock once per process. Lookup, first hit wins: the environment variable
    /// <c>QUORUMLOCK_LIB</c> (a file, or a directory holding libquorumlock.so); a copy beside
    /// Quorumlock.dll; the standard prefixes /usr/local/lib, /usr/lib, /usr/lib/&lt;multiarch&gt;,
    /// /usr/lib64 (where <c>make install PREFIX=...</c> puts it); then the runtime's own search
    /// for "libquorumlock.so.0" (ld.so.cache, LD_LIBRARY_PATH, a Mono dllmap).
    /// </summary>
    public static class NativeLibrary
    {
        private static readonly object Gate = new object();
        private static bool loaded;
        private static string path;

        /// <summary>The path the library was loaded from, or "libquorumlock.so.0" when the runtime's own search found it.</summary>
        public static string Path
        {
            get
            {
                EnsureLoaded();
                return path;
            }
        }

        /// <summary>The library's version ("0.2.0").</summary>
        public static string Version
        {
            get
            {
                EnsureLoaded();
                return ReadVersion();
            }
        }

        /// <summary>The candidate paths in lookup order (without the runtime's own search).</summary>
        public static IList<string> Candidates()
        {
            var env = Environment.GetEnvironmentVariable("QUORUMLOCK_LIB");
            if (!string.IsNullOrEmpty(env))
            {
                return new[] { Directory.Exists(env) ? System.IO.Path.Combine(env, "libquorumlock.so") : env };
            }
            var dirs = new List<string>();
            var here = System.IO.Path.GetDirectoryName(typeof(NativeLibrary).Assembly.Location);
            if (!string.IsNullOrEmpty(here))
            {
                dirs.Add(here);
            }
            dirs.Add("/usr/local/lib");
            dirs.Add("/usr/lib");
            dirs.Add("/usr/lib/x86_64-linux-gnu");
            dirs.Add("/usr/lib/aarch64-linux-gnu");
            dirs.Add("/usr/lib64");
            var list = new List<string>();
            foreach (var d in dirs)
            {
                list.Add(System.IO.Path.Combine(d, "libquorumlock.so.0"));
                list.Add(System.IO.Path.Combine(d, "libquorumlock.so"));
            }
            return list;
        }

        /// <summary>
        /// Loads the library (idempotent). Throws <see cref="QuorumlockException"/> with
        /// <see cref="QuorumlockCode.Invalid"/> when it cannot be found or loaded.
        /// </summary>
        public static void EnsureLoaded()
        {
            if (loaded)
            {
                return;
            }
            lock (Gate)
            {
                if (loaded)
                {
                    return;
                }
                var explicitPath = !string.IsNullOrEmpty(Environment.GetEnvironmentVariable("QUORUMLOCK_LIB"));
                var candidates = Candidates();
                string found = null;
                foreach (var c in candidates)
                {
                    if (File.Exists(c))
                    {
                        found = c;
                        break;
                    }
                }
                if (found == null && explicitPath)
                {
                    throw QuorumlockException.Invalid("load", "no libquorumlock at " + candidates[0] + " (QUORUMLOCK_LIB)");
                }
                if (found != null)
                {
                    // Loaded by path with its SONAME libquorumlock.so.0, which the DllImports name:
                    // the dynamic loader then hands them this copy.
                    if (Dl.dlopen(found, Dl.RTLD_NOW | Dl.RTLD_GLOBAL) == IntPtr.Zero)
                    {
                        var why = Marshal.PtrToStringAnsi(Dl.dlerror());
                        throw QuorumlockException.Invalid("load", "cannot load " + found + ": " + why);
                    }
                }
                string version;
                try
                {
                    version = ReadVersion();
                }
                catch (Exception e) when (e is DllNotFoundException || e is EntryPointNotFoundException || e is BadImageFormatException)
                {
                    throw QuorumlockException.Invalid(
                        "load",
                        "libquorumlock not found (looked for QUORUMLOCK_LIB, " + string.Join(", ", candidates) + ", then libquorumlock.so.0 on the loader's path): " + e.Message,
                        e);
                }
                if (version == null || !version.StartsWith("0.", StringComparison.Ordinal))
                {
                    throw QuorumlockException.Invalid("load", (found ?? Native.Lib) + " is libquorumlock " + version + "; this package needs 0.x");
                }
                path = found ?? Native.Lib;
                loaded = true;
            }
        }

        /// <summary>Compiled only after the dlopen above: Mono resolves a DllImport when it compiles its caller.</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private static string ReadVersion() => Marshal.PtrToStringAnsi(Native.quorumlock_version());

        private static class Dl
        {
            public const int RTLD_NOW = 2;
            public const int RTLD_GLOBAL = 0x100;

            [DllImport("libdl.so.2")]
            public static extern IntPtr dlopen(string file, int mode);

            [DllImport("libdl.so.2")]
            public static extern IntPtr dlerror();
        }
    }

    /// <summary>The C ABI (include/quorumlock.h). Byte inputs are byte[] with their length.</summary>
    internal static class Native
    {
        internal const string Lib = "libquorumlock.so.0";

        internal static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);

        [DllImport(Lib)] internal static extern IntPtr quorumlock_version();
        [DllImport(Lib)] internal static extern IntPtr quorumlock_result_name(uint code);
        [DllImport(Lib)] internal static extern IntPtr quorumlock_node_kind_name(uint kind);
        [DllImport(Lib)] internal static extern IntPtr quorumlock_fence_check_script();

        [DllImport(Lib)] internal static extern uint quorumlock_config_new(out ConfigHandle cfg);
        [DllImport(Lib)] internal static extern void quorumlock_config_free(IntPtr cfg);
        [DllImport(Lib)] internal static extern uint quorumlock_config_add_node(ConfigHandle cfg, byte[] url, UIntPtr len, out IntPtr err);
        [DllImport(Lib)] internal static extern uint quorumlock_config_set_drift(ConfigHandle cfg, double factor, ulong constantMs);
        [DllImport(Lib)] internal static extern uint quorumlock_config_set_max_ttl_ms(ConfigHandle cfg, ulong ms);
        [DllImport(Lib)] internal static extern uint quorumlock_config_set_connect_timeout_ms(ConfigHandle cfg, ulong ms);
        [DllImport(Lib)] internal static extern uint quorumlock_config_set_key_prefix(ConfigHandle cfg, byte[] prefix, UIntPtr len);
        [DllImport(Lib)] internal static extern uint quorumlock_config_set_require_quorum(ConfigHandle cfg, [MarshalAs(UnmanagedType.I1)] bool on);
        [DllImport(Lib)] internal static extern uint quorumlock_config_set_notify(ConfigHandle cfg, [MarshalAs(UnmanagedType.I1)] bool on);
        [DllImport(Lib)] internal static extern uint quorumlock_config_set_quarantine(ConfigHandle cfg, uint mode, ulong marginMs);
        [DllImport(Lib)] internal static extern uint quorumlock_config_set_eviction_check(ConfigHandle cfg, uint mode);
        [DllImport(Lib)] internal static extern uint quorumlock_config_set_key_format(ConfigHandle cfg, uint format);
        [DllImport(Lib)] internal static extern uint quorumlock_config_set_lock_options(ConfigHandle cfg, OptionsHandle opts);

        [DllImport(Lib)] internal static extern uint quorumlock_client_new(ConfigHandle cfg, out ClientHandle client, out IntPtr err);
        [DllImport(Lib)] internal static extern void quorumlock_client_free(IntPtr client);
        [DllImport(Lib)] internal static extern UIntPtr quorumlock_client_node_count(ClientHandle client);
        [DllImport(Lib)] internal static extern uint quorumlock_client_release_value(ClientHandle client, IntPtr[] resources, UIntPtr[] lens, UIntPtr count, byte[] value, UIntPtr valueLen, [MarshalAs(UnmanagedType.I1)] out bool held, out IntPtr err);
        [DllImport(Lib)] internal static extern uint quorumlock_client_extend_value(ClientHandle client, IntPtr[] resources, UIntPtr[] lens, UIntPtr count, byte[] value, UIntPtr valueLen, ulong ttlMs, out ulong validityMs, out IntPtr err);

        [DllImport(Lib)] internal static extern void quorumlock_error_free(IntPtr err);
        [DllImport(Lib)] internal static extern uint quorumlock_error_code(IntPtr err);
        [DllImport(Lib)] internal static extern uint quorumlock_error_message(IntPtr err, byte[] buf, UIntPtr len, out UIntPtr n);
        [DllImport(Lib)] internal static extern uint quorumlock_error_attempts(IntPtr err);
        [DllImport(Lib)] internal static extern uint quorumlock_error_lost_reason(IntPtr err);
        [DllImport(Lib)] internal static extern UIntPtr quorumlock_error_node_count(IntPtr err);
        [DllImport(Lib)] internal static extern uint quorumlock_error_node_kind(IntPtr err, UIntPtr index, out uint kind);
        [DllImport(Lib)] internal static extern uint quorumlock_error_node_latency_us(IntPtr err, UIntPtr index, out ulong latency);
        [DllImport(Lib)] internal static extern uint quorumlock_error_node_address(IntPtr err, UIntPtr index, byte[] buf, UIntPtr len, out UIntPtr n);

        [DllImport(Lib)] internal static extern uint quorumlock_lock_options_new(out OptionsHandle opts);
        [DllImport(Lib)] internal static extern void quorumlock_lock_options_free(IntPtr opts);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_options_set_ttl_ms(OptionsHandle opts, ulong ms);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_options_set_retry_count(OptionsHandle opts, uint count);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_options_set_retry_delay_ms(OptionsHandle opts, ulong delayMs, ulong jitterMs);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_options_set_min_validity_ms(OptionsHandle opts, ulong ms);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_options_set_node_timeout_ms(OptionsHandle opts, ulong ms);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_options_set_auto_extend(OptionsHandle opts, [MarshalAs(UnmanagedType.I1)] bool on, ulong intervalMs);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_options_set_limits(OptionsHandle opts, uint maxExtensions, ulong maxHoldMs);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_options_set_fenced(OptionsHandle opts, [MarshalAs(UnmanagedType.I1)] bool on, ulong counterTtlMs);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_options_set_value(OptionsHandle opts, byte[] value, UIntPtr len, out IntPtr err);

        [DllImport(Lib)] internal static extern uint quorumlock_cancel_new(out CancelHandle cancel);
        [DllImport(Lib)] internal static extern uint quorumlock_cancel_trigger(CancelHandle cancel);
        [DllImport(Lib)] internal static extern void quorumlock_cancel_free(IntPtr cancel);

        [DllImport(Lib)] internal static extern uint quorumlock_client_acquire(ClientHandle client, byte[] resource, UIntPtr len, OptionsHandle opts, IntPtr cancel, out IntPtr lockOut, out IntPtr err);
        [DllImport(Lib)] internal static extern uint quorumlock_client_acquire_timeout(ClientHandle client, byte[] resource, UIntPtr len, OptionsHandle opts, ulong timeoutMs, IntPtr cancel, out IntPtr lockOut, out IntPtr err);

        [DllImport(Lib)] internal static extern uint quorumlock_lock_extend(LockHandle lk, ulong ttlMs, out IntPtr err);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_release(LockHandle lk, [MarshalAs(UnmanagedType.I1)] out bool held, out IntPtr err);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_set_auto_extend(LockHandle lk, [MarshalAs(UnmanagedType.I1)] bool on, out IntPtr err);
        [DllImport(Lib)] internal static extern ulong quorumlock_lock_remaining_ms(LockHandle lk);
        [DllImport(Lib)] internal static extern ulong quorumlock_lock_ttl_ms(LockHandle lk);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_lost_reason(LockHandle lk);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_value(LockHandle lk, byte[] buf, UIntPtr len, out UIntPtr n);
        [DllImport(Lib)] internal static extern uint quorumlock_lock_token(LockHandle lk, out ulong token);
        [DllImport(Lib)] internal static extern void quorumlock_lock_free(IntPtr lk);

        /// <summary>Reads a snprintf-style text (two calls: length, then the text).</summary>
        internal delegate uint TextCall(byte[] buf, UIntPtr len, out UIntPtr n);

        internal static string Text(TextCall call)
        {
            UIntPtr n;
            if (call(null, UIntPtr.Zero, out n) != 0)
            {
                return string.Empty;
            }
            var buf = new byte[(int)n.ToUInt64() + 1];
            UIntPtr m;
            call(buf, (UIntPtr)buf.Length, out m);
            var len = (int)Math.Min(m.ToUInt64(), (ulong)(buf.Length - 1));
            return Encoding.UTF8.GetString(buf, 0, len);
        }
    }
}
