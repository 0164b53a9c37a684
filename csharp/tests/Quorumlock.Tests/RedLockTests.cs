using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Net;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using Quorumlock;

namespace Quorumlock.Tests
{
    /// <summary>RedLock.net's shape: CreateLock(Async) gives a lock with IsAcquired, Status and InstanceSummary.</summary>
    [TestFixture]
    public class RedLockTests
    {
        [Test]
        public async Task AcquireConflictAndDisposeAsync()
        {
            using (var factory = Support.Factory())
            {
                var resource = Support.Name("redlock");
                var first = await factory.CreateLockAsync(resource, TimeSpan.FromSeconds(5));
                try
                {
                    Assert.IsTrue(first.IsAcquired);
                    Assert.AreEqual(RedLockStatus.Acquired, first.Status);
                    Assert.AreEqual(resource, first.Resource);
                    StringAssert.IsMatch("^[0-9a-f]{40}$", first.LockId);
                    Assert.GreaterOrEqual(first.InstanceSummary.Acquired, 2);
                    Assert.AreEqual(0, first.ExtendCount);

                    var second = factory.CreateLock(resource, TimeSpan.FromSeconds(5));
                    Assert.IsFalse(second.IsAcquired);
                    Assert.AreEqual(RedLockStatus.Conflicted, second.Status);
                    Assert.GreaterOrEqual(second.InstanceSummary.Conflicted, 2);
                    Assert.AreEqual(QuorumlockCode.Busy, ((RedLock)second).LastError.Code);
                    Assert.AreEqual(string.Empty, second.LockId);
                    second.Dispose();
                }
                finally
                {
                    await first.DisposeAsync();
                }
                Assert.AreEqual(RedLockStatus.Unlocked, first.Status);
                using (var third = factory.CreateLock(resource, TimeSpan.FromSeconds(5)))
                {
                    Assert.IsTrue(third.IsAcquired, "dispose released the first");
                }
            }
        }

        [Test]
        public async Task WaitAndRetryGetTheLockWhenItIsReleased()
        {
            using (var factory = Support.Factory())
            {
                var resource = Support.Name("wait");
                var held = factory.CreateLock(resource, TimeSpan.FromSeconds(5));
                var sw = Stopwatch.StartNew();
                var waiting = factory.CreateLockAsync(resource, TimeSpan.FromSeconds(5), TimeSpan.FromSeconds(10), TimeSpan.FromMilliseconds(50));
                await Task.Delay(300);
                Assert.IsFalse(waiting.IsCompleted);
                held.Dispose();
                using (var got = await waiting)
                {
                    Assert.IsTrue(got.IsAcquired);
                    Assert.Less(sw.ElapsedMilliseconds, 5000);
                }
                using (var again = factory.CreateLock(resource, TimeSpan.FromSeconds(5)))
                {
                    sw.Restart();
                    var timedOut = factory.CreateLock(resource, TimeSpan.FromSeconds(5), TimeSpan.FromMilliseconds(300), TimeSpan.FromMilliseconds(50));
                    Assert.AreEqual(RedLockStatus.Conflicted, timedOut.Status);
                    Assert.That(sw.ElapsedMilliseconds, Is.InRange(250, 3000));
                    Assert.Greater(((RedLock)timedOut).LastError.Attempts, 1);
                }
            }
        }

        [Test]
        public void CancellationThrowsOperationCanceled()
        {
            using (var factory = Support.Factory())
            using (var held = factory.CreateLock(Support.Name("cancel"), TimeSpan.FromSeconds(5)))
            using (var cts = new CancellationTokenSource(200))
            {
                var sw = Stopwatch.StartNew();
                var e = Assert.Throws<OperationCanceledException>(() =>
                    factory.CreateLock(held.Resource, TimeSpan.FromSeconds(5), TimeSpan.FromSeconds(10), TimeSpan.FromMilliseconds(20), cts.Token));
                Assert.Less(sw.ElapsedMilliseconds, 3000);
                Assert.AreEqual(QuorumlockCode.Cancelled, ((QuorumlockException)e.InnerException).Code);
            }
        }

        [Test]
        public void HeldLocksAreExtendedUntilDisposed()
        {
            using (var factory = Support.Factory())
            using (var l = factory.CreateLock(Support.Name("extended"), TimeSpan.FromMilliseconds(1500)))
            {
                Assert.IsTrue(l.IsAcquired);
                Thread.Sleep(2000);
                Assert.IsTrue(l.IsAcquired, "the engine extends a RedLockFactory lock, as RedLock.net does");
                Assert.That(((RedLock)l).Remaining, Is.GreaterThan(TimeSpan.Zero));
            }
        }

        [Test]
        public void StatusTurnsExpiredWhenTheNodesStopAnswering()
        {
            var run = Environment.GetEnvironmentVariable("QL_RUN_DIR");
            Assert.IsNotNull(run, "QL_RUN_DIR (set by ql-harness exec)");
            using (var factory = Support.Factory())
            {
                var l = (RedLock)factory.CreateLock(Support.Name("expire"), TimeSpan.FromMilliseconds(600));
                Assert.IsTrue(l.IsAcquired);
                Signal(run, "STOP", 1); // a stopped server keeps its connections but never answers
                Signal(run, "STOP", 2);
                try
                {
                    Assert.IsTrue(l.LostToken.WaitHandle.WaitOne(5000), "lost once extensions fail and the validity runs out");
                    Assert.AreEqual(RedLockStatus.Expired, l.Status);
                    Assert.IsFalse(l.IsAcquired);
                }
                finally
                {
                    Signal(run, "CONT", 1);
                    Signal(run, "CONT", 2);
                }
                l.Dispose();
                Assert.AreEqual(RedLockStatus.Unlocked, l.Status);
            }
        }

        [Test]
        public void UnreachableEndpointsGiveNoQuorum()
        {
            var dead = new List<RedLockEndPoint>
            {
                new DnsEndPoint("127.0.0.1", 1), new IPEndPoint(IPAddress.Loopback, 2), "redis://127.0.0.1:3",
            };
            dead[0].ConnectionTimeout = 200;
            using (var factory = RedLockFactory.Create(dead))
            using (var l = factory.CreateLock("r", TimeSpan.FromSeconds(1)))
            {
                Assert.AreEqual(RedLockStatus.NoQuorum, l.Status);
                Assert.AreEqual(3, l.InstanceSummary.Error);
                Assert.AreEqual(QuorumlockCode.Quorum, ((RedLock)l).LastError.Code);
            }
        }

        /// <summary>Sends a signal to node <paramref name="node"/> of the harness run, by the PID it recorded.</summary>
        private static void Signal(string run, string signal, int node)
        {
            var pid = File.ReadAllText(Path.Combine(run, "n" + node, "pid")).Trim().Split(' ')[0];
            using (var p = Process.Start(new ProcessStartInfo("kill", "-" + signal + " " + int.Parse(pid)) { UseShellExecute = false }))
            {
                p.WaitForExit();
                Assert.AreEqual(0, p.ExitCode, "kill -" + signal + " " + pid);
            }
        }
    }
}
