using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Net;
using Quorumlock;

namespace Quorumlock.Tests
{
    /// <summary>Nodes and helpers (the suite runs under `ql-harness exec`, which sets QL_NODES).</summary>
    internal static class Support
    {
        /// <summary>Node timeout for a loaded 2-core machine (docs/TESTING.md §2.2).</summary>
        internal static readonly TimeSpan NodeTimeout = TimeSpan.FromMilliseconds(250);

        internal static string[] Nodes
        {
            get
            {
                var nodes = Environment.GetEnvironmentVariable("QL_NODES");
                if (string.IsNullOrEmpty(nodes))
                {
                    throw new InvalidOperationException("QL_NODES is not set: run under `ql-harness exec --nodes 3 -- ...` (make test-csharp)");
                }
                return nodes.Split(',');
            }
        }

        internal static QuorumlockClient Client(QuorumlockSettings settings = null)
        {
            settings = settings ?? new QuorumlockSettings();
            settings.NodeTimeout = settings.NodeTimeout ?? NodeTimeout;
            return QuorumlockClient.Connect(Nodes, settings);
        }

        internal static List<RedLockEndPoint> EndPoints()
        {
            var list = new List<RedLockEndPoint>();
            foreach (var n in Nodes)
            {
                var u = new Uri(n);
                list.Add(new DnsEndPoint(u.Host, u.Port));
            }
            return list;
        }

        internal static RedLockFactory Factory() =>
            RedLockFactory.Create(EndPoints(), new QuorumlockSettings { NodeTimeout = NodeTimeout });

        internal static string Name(string prefix) => prefix + ":" + Guid.NewGuid().ToString("N").Substring(0, 12);

        /// <summary>Directory of the test assembly (the build folder holds Quorumlock.dll and the worker).</summary>
        internal static string BuildDir => Path.GetDirectoryName(typeof(Support).Assembly.Location);

        /// <summary>Runs mono with the given environment (only PATH inherited); returns exit code and output.</summary>
        internal static Tuple<int, string> Run(string exe, string args, IDictionary<string, string> env, string cwd = null)
        {
            var psi = new ProcessStartInfo("mono", "\"" + exe + "\" " + args)
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                WorkingDirectory = cwd ?? BuildDir,
            };
            psi.EnvironmentVariables.Clear();
            psi.EnvironmentVariables["PATH"] = Environment.GetEnvironmentVariable("PATH");
            psi.EnvironmentVariables["HOME"] = Environment.GetEnvironmentVariable("HOME") ?? "/tmp";
            foreach (var kv in env)
            {
                psi.EnvironmentVariables[kv.Key] = kv.Value;
            }
            using (var p = Process.Start(psi))
            {
                var err = p.StandardError.ReadToEndAsync();
                var output = p.StandardOutput.ReadToEnd();
                p.WaitForExit();
                return Tuple.Create(p.ExitCode, output + err.Result);
            }
        }
    }
}
