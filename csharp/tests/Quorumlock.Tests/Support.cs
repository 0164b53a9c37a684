using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading;
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

        /// <summary>Sends one command to node <paramref name="i"/> (RESP) and returns the reply: string, long, null or object[].</summary>
        internal static object Redis(int i, params string[] args)
        {
            var u = new Uri(Nodes[i]);
            using (var tcp = new TcpClient(u.Host, u.Port))
            using (var s = tcp.GetStream())
            {
                var cmd = new StringBuilder("*" + args.Length + "\r\n");
                foreach (var a in args)
                {
                    cmd.Append('$').Append(Encoding.UTF8.GetByteCount(a)).Append("\r\n").Append(a).Append("\r\n");
                }
                var bytes = Encoding.UTF8.GetBytes(cmd.ToString());
                s.Write(bytes, 0, bytes.Length);
                return Reply(s);
            }
        }

        /// <summary>The reply of every node.</summary>
        internal static object[] OnAll(params string[] args)
        {
            var r = new object[Nodes.Length];
            for (var i = 0; i < r.Length; i++)
            {
                r[i] = Redis(i, args);
            }
            return r;
        }

        /// <summary>The same value n times (to compare with OnAll).</summary>
        internal static object[] Each(object v)
        {
            var r = new object[Nodes.Length];
            for (var i = 0; i < r.Length; i++)
            {
                r[i] = v;
            }
            return r;
        }

        /// <summary>Waits up to <paramref name="ms"/> for <paramref name="cond"/>.</summary>
        /// <summary>Waits until every node answers `expected` to the command and returns whether
        /// they did: a call returns at the quorum-th reply, so the other nodes' writes may still be
        /// in flight.</summary>
        internal static bool EveryNodeSays(object expected, params string[] args)
        {
            return Eventually(() => Array.TrueForAll(OnAll(args), v => Equals(v, expected)));
        }

        internal static bool Eventually(Func<bool> cond, int ms = 5000)
        {
            var sw = Stopwatch.StartNew();
            while (!cond())
            {
                if (sw.ElapsedMilliseconds > ms)
                {
                    return false;
                }
                Thread.Sleep(10);
            }
            return true;
        }

        private static string Line(Stream s)
        {
            var sb = new StringBuilder();
            int c;
            while ((c = s.ReadByte()) >= 0 && c != '\n')
            {
                if (c != '\r')
                {
                    sb.Append((char)c);
                }
            }
            return sb.ToString();
        }

        private static object Reply(Stream s)
        {
            var line = Line(s);
            var rest = line.Substring(1);
            switch (line[0])
            {
                case '+':
                    return rest;
                case ':':
                    return long.Parse(rest);
                case '$':
                    var n = int.Parse(rest);
                    if (n < 0)
                    {
                        return null;
                    }
                    var buf = new byte[n + 2];
                    var got = 0;
                    while (got < buf.Length)
                    {
                        got += s.Read(buf, got, buf.Length - got);
                    }
                    return Encoding.UTF8.GetString(buf, 0, n);
                case '*':
                    var items = new object[int.Parse(rest)];
                    for (var i = 0; i < items.Length; i++)
                    {
                        items[i] = Reply(s);
                    }
                    return items;
                default:
                    throw new InvalidOperationException("redis: " + line);
            }
        }

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
