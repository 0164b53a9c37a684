using System;
using System.Diagnostics;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;
using Quorumlock;

namespace Quorumlock.Tests
{
    [TestFixture]
    public class ClientTests
    {
        [Test]
        public void AcquireReleaseAndRelock()
        {
            using (var client = Support.Client())
            {
                Assert.AreEqual(3, client.NodeCount);
                var name = Support.Name("basic");
                var l = client.Acquire(name, new LockOptions { Ttl = TimeSpan.FromSeconds(5) });
                Assert.That(l.Remaining, Is.GreaterThan(TimeSpan.FromSeconds(4)).And.LessThanOrEqualTo(TimeSpan.FromSeconds(5)));
                StringAssert.IsMatch("^[0-9a-f]{40}$", l.Value);
                Assert.IsTrue(l.IsHeld);
                Assert.IsFalse(l.IsLost);
                Assert.IsTrue(l.Release());
                Assert.IsFalse(l.Release(), "a second release sends nothing");
                Assert.AreEqual(TimeSpan.Zero, l.Remaining);
                Assert.IsFalse(l.IsLost);
                l.Dispose();
                using (var again = client.Acquire(name))
                {
                    Assert.AreNotEqual(l.Value, again.Value);
                }
            }
        }

        [Test]
        public void BusyCarriesTheCodeAndTheNodeReport()
        {
            using (var a = Support.Client())
            using (var b = Support.Client())
            {
                var name = Support.Name("busy");
                using (a.Acquire(name))
                {
                    var e = Assert.Throws<QuorumlockException>(() => b.Acquire(name, new LockOptions { RetryCount = 0 }));
                    Assert.AreEqual(QuorumlockCode.Busy, e.Code);
                    Assert.AreEqual(1, (int)e.Code);
                    Assert.AreEqual("QL_BUSY", e.CodeName);
                    Assert.AreEqual("acquire", e.Operation);
                    Assert.AreEqual(1, e.Attempts);
                    StringAssert.Contains(name, e.Message);
                    Assert.AreEqual(3, e.Nodes.Count);
                    Assert.GreaterOrEqual(e.Nodes.Count(n => n.KindName == "HeldByOther"), 2, string.Join(", ", e.Nodes));
                    StringAssert.IsMatch(@"^127\.0\.0\.1:\d+/0$", e.Nodes[0].Address);
                }
                using (b.Acquire(name))
                {
                }
            }
        }

        [Test]
        public void ExpiryCancelsTheLostTokenAndExtendNeverRevives()
        {
            using (var client = Support.Client())
            {
                var l = client.Acquire(Support.Name("lost"), new LockOptions { Ttl = TimeSpan.FromMilliseconds(800) });
                var fired = new ManualResetEventSlim();
                l.LostToken.Register(() => fired.Set());
                Thread.Sleep(300);
                l.Extend(TimeSpan.FromMilliseconds(1000));
                Assert.That(l.Remaining, Is.GreaterThan(TimeSpan.FromMilliseconds(500)), "extended past the first deadline");
                Assert.IsFalse(fired.IsSet);
                Assert.IsTrue(fired.Wait(5000), "the lost token must fire after expiry");
                Assert.IsTrue(l.IsLost);
                Assert.AreEqual(LostReason.Expired, l.LostReason);
                var e = Assert.Throws<QuorumlockException>(() => l.Extend());
                Assert.AreEqual(QuorumlockCode.Lost, e.Code);
                Assert.AreEqual(LostReason.Expired, e.LostReason);
                l.Release(); // no error; the keys may outlive the local validity by the drift
            }
        }

        [Test]
        public void AutoExtendKeepsItAndReleaseNeverFiresLost()
        {
            using (var client = Support.Client())
            {
                var l = client.Acquire(Support.Name("auto"), new LockOptions { Ttl = TimeSpan.FromMilliseconds(1500), AutoExtend = true });
                Thread.Sleep(2000);
                Assert.That(l.Remaining, Is.GreaterThan(TimeSpan.Zero));
                Assert.IsFalse(l.LostToken.IsCancellationRequested);
                Assert.IsTrue(l.Release());
                Thread.Sleep(100);
                Assert.IsFalse(l.LostToken.IsCancellationRequested);
                l.Dispose();
            }
        }

        [Test]
        public void FencingTokensGrow()
        {
            using (var client = Support.Client())
            {
                var name = Support.Name("fence");
                ulong first;
                using (var a = client.Acquire(name, new LockOptions { Fenced = true }))
                {
                    first = a.Token;
                }
                using (var b = client.Acquire(name, new LockOptions { Fenced = true }))
                {
                    Assert.Greater(b.Token, first);
                }
                using (var plain = client.Acquire(name))
                {
                    Assert.AreEqual(QuorumlockCode.Invalid, Assert.Throws<QuorumlockException>(() => { var t = plain.Token; }).Code);
                }
            }
        }

        [Test]
        public async Task AsyncAcquireWaitsAndCancels()
        {
            using (var client = Support.Client())
            {
                var name = Support.Name("async");
                var held = client.Acquire(name, new LockOptions { Ttl = TimeSpan.FromSeconds(5) });
                var waiter = client.AcquireAsync(name, new LockOptions { Wait = TimeSpan.FromSeconds(5) });
                await Task.Delay(200);
                Assert.IsFalse(waiter.IsCompleted);
                await held.ReleaseAsync();
                var sw = Stopwatch.StartNew();
                using (var got = await waiter)
                {
                    Assert.Less(sw.ElapsedMilliseconds, 2000, "woken by the release");
                    using (var cts = new CancellationTokenSource(300))
                    {
                        var e = Assert.Throws<OperationCanceledException>(() => client.Acquire(name, new LockOptions { Wait = TimeSpan.FromSeconds(10) }, cts.Token));
                        Assert.IsInstanceOf<QuorumlockException>(e.InnerException);
                        Assert.AreEqual(QuorumlockCode.Cancelled, ((QuorumlockException)e.InnerException).Code);
                        Assert.AreEqual(cts.Token, e.CancellationToken);
                    }
                }
            }
        }

        [Test]
        public void BinaryNamesAndGivenValues()
        {
            using (var client = Support.Client())
            {
                var name = new byte[] { 0, 0xff, 0xfe, (byte)'x' };
                using (var l = client.Acquire(name))
                {
                    Assert.AreEqual(QuorumlockCode.Busy, Assert.Throws<QuorumlockException>(() => client.Acquire(name, new LockOptions { RetryCount = 0 })).Code);
                }
                using (var l = client.Acquire(Support.Name("value"), new LockOptions { Value = "my-own-value-0123456789" }))
                {
                    Assert.AreEqual("my-own-value-0123456789", l.Value);
                }
            }
        }

        [Test]
        public void LocksOutliveTheirClient()
        {
            var client = Support.Client(new QuorumlockSettings { Quarantine = QuarantineMode.Off, Notify = false, KeyPrefix = "cs-test:" });
            var l = client.Acquire(Support.Name("outlive"));
            client.Dispose();
            client.Dispose();
            Assert.That(l.Remaining, Is.GreaterThan(TimeSpan.Zero));
            Assert.IsTrue(l.Release());
            var e = Assert.Throws<QuorumlockException>(() => client.Acquire("x"));
            Assert.AreEqual(QuorumlockCode.Invalid, e.Code);
            StringAssert.Contains("disposed", e.Message);
        }

        [Test]
        public void UnreachableNodesAreTypedErrors()
        {
            var dead = new[] { "redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3" };
            using (var client = QuorumlockClient.Connect(dead, new QuorumlockSettings { ConnectTimeout = TimeSpan.FromMilliseconds(200) }))
            {
                var e = Assert.Throws<QuorumlockException>(() => client.Acquire("x", new LockOptions { RetryCount = 0 }));
                Assert.AreEqual(QuorumlockCode.Quorum, e.Code);
                Assert.AreEqual(3, e.Nodes.Count);
                foreach (var n in e.Nodes)
                {
                    Assert.That(new[] { "ConnectionRefused", "NotConnected" }, Has.Member(n.KindName), n.ToString());
                }
            }
            var c = Assert.Throws<QuorumlockException>(() => QuorumlockClient.Connect(dead, new QuorumlockSettings { ConnectTimeout = TimeSpan.FromMilliseconds(200), RequireQuorum = true }));
            Assert.AreEqual(QuorumlockCode.Connection, c.Code);
            Assert.AreEqual(3, c.Nodes.Count);
        }

        [Test]
        public void EveryCodeHasItsName()
        {
            foreach (QuorumlockCode code in Enum.GetValues(typeof(QuorumlockCode)))
            {
                var e = new QuorumlockException(code, "m");
                Assert.AreEqual(code, e.Code);
                Assert.AreNotEqual("QL_UNKNOWN", e.CodeName);
            }
            Assert.AreEqual(14, Enum.GetValues(typeof(QuorumlockCode)).Length);
            StringAssert.IsMatch(@"^\d+\.\d+\.\d+$", QuorumlockClient.Version);
        }
    }
}
