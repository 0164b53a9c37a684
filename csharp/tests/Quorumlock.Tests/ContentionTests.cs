using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;
using NUnit.Framework;
using Quorumlock;

namespace Quorumlock.Tests
{
    /// <summary>
    /// Threads and processes contend for one resource and record their critical-section windows
    /// on the shared monotonic clock; no two may overlap. The same workers without the lock must
    /// show overlaps, so the check can fail.
    /// </summary>
    [TestFixture]
    public class ContentionTests
    {
        private const int Threads = 6;
        private const int PerThread = 8;
        private const int Processes = 3;
        private const int PerProcess = 6;

        [Test]
        public void ThreadsNeverHoldAtOnce()
        {
            var windows = ContendThreads(true);
            Assert.AreEqual(Threads * PerThread, windows.Count);
            CollectionAssert.IsEmpty(Overlaps(windows), "two holders at once");
            Assert.IsTrue(windows.All(w => w[3] > 0), "a holder left with no validity");
        }

        [Test]
        public void TheCheckFindsOverlapsBetweenThreadsWithoutTheLock()
        {
            CollectionAssert.IsNotEmpty(Overlaps(ContendThreads(false)));
        }

        [Test]
        public void ProcessesNeverHoldAtOnce()
        {
            var windows = ContendProcesses("lock");
            Assert.AreEqual(Processes * PerProcess, windows.Count);
            CollectionAssert.IsEmpty(Overlaps(windows), "two holders at once");
            Assert.AreEqual(Processes, windows.Select(w => w[2]).Distinct().Count());
        }

        /// <summary>Without the lock each window lasts 80 ms, longer than the processes' start-up skew.</summary>
        [Test]
        public void TheCheckFindsOverlapsBetweenProcessesWithoutTheLock()
        {
            CollectionAssert.IsNotEmpty(Overlaps(ContendProcesses("nolock")));
        }

        private static List<long[]> ContendThreads(bool locked)
        {
            var windows = new List<long[]>();
            var resource = Support.Name("threads");
            var errors = new List<Exception>();
            using (var client = Support.Client())
            {
                var start = new Barrier(Threads);
                var threads = Enumerable.Range(0, Threads).Select(t => new Thread(() =>
                {
                    try
                    {
                        start.SignalAndWait();
                        for (var i = 0; i < PerThread; i++)
                        {
                            var l = locked ? client.Acquire(resource, new LockOptions { Ttl = TimeSpan.FromSeconds(5), Wait = TimeSpan.FromSeconds(30) }) : null;
                            var enter = System.Diagnostics.Stopwatch.GetTimestamp();
                            Thread.Sleep(3);
                            var left = l == null ? 1 : (long)l.Remaining.TotalMilliseconds;
                            var leave = System.Diagnostics.Stopwatch.GetTimestamp();
                            lock (windows)
                            {
                                windows.Add(new[] { enter, leave, t, left });
                            }
                            l?.Dispose();
                        }
                    }
                    catch (Exception e)
                    {
                        lock (errors)
                        {
                            errors.Add(e);
                        }
                    }
                })).ToList();
                threads.ForEach(th => th.Start());
                threads.ForEach(th => th.Join());
            }
            CollectionAssert.IsEmpty(errors);
            return windows;
        }

        private static List<long[]> ContendProcesses(string mode)
        {
            var log = Path.GetTempFileName();
            try
            {
                var resource = Support.Name("processes");
                var env = new Dictionary<string, string>
                {
                    { "QL_NODES", string.Join(",", Support.Nodes) },
                    { "QUORUMLOCK_LIB", NativeLibrary.Path },
                };
                var exe = Path.Combine(Support.BuildDir, "ContentionWorker.exe");
                var runs = Enumerable.Range(0, Processes)
                    .Select(_ => System.Threading.Tasks.Task.Run(() => Support.Run(exe, mode + " " + resource + " " + PerProcess + " \"" + log + "\" " + (mode == "lock" ? 3 : 80), env)))
                    .ToList();
                foreach (var r in runs)
                {
                    Assert.AreEqual(0, r.Result.Item1, r.Result.Item2);
                }
                return File.ReadAllLines(log).Where(l => l.Length > 0).Select(l => l.Split(' ').Select(long.Parse).ToArray()).ToList();
            }
            finally
            {
                File.Delete(log);
            }
        }

        private static List<string> Overlaps(List<long[]> windows)
        {
            var sorted = windows.OrderBy(w => w[0]).ToList();
            var found = new List<string>();
            for (var i = 1; i < sorted.Count; i++)
            {
                if (sorted[i][0] < sorted[i - 1][1])
                {
                    found.Add("worker " + sorted[i][2] + " entered before worker " + sorted[i - 1][2] + " left");
                }
            }
            return found;
        }
    }
}
