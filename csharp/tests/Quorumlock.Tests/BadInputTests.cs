using System;
using System.Collections.Generic;
using System.Net;
using NUnit.Framework;
using Quorumlock;

namespace Quorumlock.Tests
{
    /// <summary>Bad input is a QuorumlockException with code Invalid (QL_INVALID = 7), never a crash.</summary>
    [TestFixture]
    public class BadInputTests
    {
        private static readonly string Surrogate = "res\ud800";

        private static void AssertInvalid(TestDelegate f)
        {
            var e = Assert.Throws<QuorumlockException>(f);
            Assert.AreEqual(QuorumlockCode.Invalid, e.Code, e.Message);
            Assert.AreEqual("QL_INVALID", e.CodeName);
            StringAssert.Contains("QL_INVALID", e.Message);
        }

        public static IEnumerable<TestCaseData> BadClients()
        {
            var ok = Support.Nodes;
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(null))).SetName("nodes null");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(new string[0]))).SetName("nodes empty");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(new string[] { null }))).SetName("node null");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(new[] { "not a url" }))).SetName("node not a URL");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(new[] { "http://127.0.0.1:6379" }))).SetName("node wrong scheme");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(new[] { "redis://127.0.0.1:6379/" + Surrogate }))).SetName("node lone surrogate");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(ok, new QuorumlockSettings { MaxTtl = TimeSpan.FromMilliseconds(-1) }))).SetName("max ttl negative");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(ok, new QuorumlockSettings { MaxTtl = TimeSpan.Zero }))).SetName("max ttl zero");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(ok, new QuorumlockSettings { DriftFactor = 0.9 }))).SetName("drift too big");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(ok, new QuorumlockSettings { DriftFactor = double.NaN }))).SetName("drift NaN");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(ok, new QuorumlockSettings { Quarantine = (QuarantineMode)9 }))).SetName("quarantine unknown");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(ok, new QuorumlockSettings { EvictionCheck = (EvictionCheck)9 }))).SetName("eviction unknown");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(ok, new QuorumlockSettings { KeyPrefix = Surrogate }))).SetName("prefix lone surrogate");
            yield return new TestCaseData(new TestDelegate(() => QuorumlockClient.Connect(ok, new QuorumlockSettings { ConnectTimeout = TimeSpan.FromSeconds(-1) }))).SetName("connect timeout negative");
            yield return new TestCaseData(new TestDelegate(() => RedLockFactory.Create(null))).SetName("factory null");
            yield return new TestCaseData(new TestDelegate(() => RedLockFactory.Create(new List<RedLockEndPoint>()))).SetName("factory empty");
            yield return new TestCaseData(new TestDelegate(() => RedLockFactory.Create(new List<RedLockEndPoint> { null }))).SetName("endpoint null");
            yield return new TestCaseData(new TestDelegate(() => RedLockFactory.Create(new List<RedLockEndPoint> { new RedLockEndPoint() }))).SetName("endpoint empty");
            yield return new TestCaseData(new TestDelegate(() => RedLockFactory.Create(new List<RedLockEndPoint> { new RedLockEndPoint(new List<EndPoint> { new DnsEndPoint("a", 1), new DnsEndPoint("b", 1) }) }))).SetName("endpoint with replicas");
            yield return new TestCaseData(new TestDelegate(() => RedLockFactory.Create(new List<RedLockEndPoint> { new RedLockEndPoint(new DnsEndPoint("h", 1)) { RedisKeyFormat = "{0}:lock" } }))).SetName("key format suffix");
            yield return new TestCaseData(new TestDelegate(() => RedLockFactory.Create(new List<RedLockEndPoint> { new RedLockEndPoint(new DnsEndPoint("h", 1)) { RedisDatabase = -1 } }))).SetName("database negative");
        }

        [TestCaseSource("BadClients")]
        public void BadClientInput(TestDelegate make) => AssertInvalid(make);

        public static IEnumerable<TestCaseData> BadLocks()
        {
            yield return new TestCaseData(null, null).SetName("resource null");
            yield return new TestCaseData(string.Empty, null).SetName("resource empty");
            yield return new TestCaseData(new string('r', 1025), null).SetName("resource too long");
            yield return new TestCaseData(Surrogate, null).SetName("resource lone surrogate");
            yield return new TestCaseData("r", new LockOptions { Ttl = TimeSpan.Zero }).SetName("ttl zero");
            yield return new TestCaseData("r", new LockOptions { Ttl = TimeSpan.FromMilliseconds(-5) }).SetName("ttl negative");
            yield return new TestCaseData("r", new LockOptions { Ttl = TimeSpan.FromMilliseconds(60001) }).SetName("ttl over max");
            yield return new TestCaseData("r", new LockOptions { Ttl = TimeSpan.MaxValue }).SetName("ttl huge");
            yield return new TestCaseData("r", new LockOptions { Ttl = TimeSpan.FromMilliseconds(1) }).SetName("ttl below drift");
            yield return new TestCaseData("r", new LockOptions { RetryCount = -1 }).SetName("retry count negative");
            yield return new TestCaseData("r", new LockOptions { RetryDelay = TimeSpan.FromSeconds(-1) }).SetName("retry delay negative");
            yield return new TestCaseData("r", new LockOptions { Wait = TimeSpan.FromSeconds(-1) }).SetName("wait negative");
            yield return new TestCaseData("r", new LockOptions { MaxExtensions = -1 }).SetName("max extensions negative");
            yield return new TestCaseData("r", new LockOptions { Value = "short" }).SetName("value short");
            yield return new TestCaseData("r", new LockOptions { Value = "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9" }).SetName("value not ASCII");
            yield return new TestCaseData("r", new LockOptions { MinValidity = TimeSpan.FromSeconds(20) }).SetName("min validity over ttl");
        }

        [TestCaseSource("BadLocks")]
        public void BadLockInput(string resource, LockOptions options)
        {
            using (var client = Support.Client())
            {
                AssertInvalid(() => client.Acquire(resource, options));
                AssertInvalid(() => client.AcquireAsync(resource, options).GetAwaiter().GetResult());
            }
        }

        [Test]
        public void BadFactoryLocks()
        {
            using (var f = Support.Factory())
            {
                AssertInvalid(() => f.CreateLock(null, TimeSpan.FromSeconds(1)));
                AssertInvalid(() => f.CreateLock("", TimeSpan.FromSeconds(1)));
                AssertInvalid(() => f.CreateLock("r", TimeSpan.Zero));
                AssertInvalid(() => f.CreateLock("r", TimeSpan.FromSeconds(-1)));
                AssertInvalid(() => f.CreateLock(Surrogate, TimeSpan.FromSeconds(1)));
                AssertInvalid(() => f.CreateLockAsync("r", TimeSpan.FromSeconds(-1), TimeSpan.FromSeconds(1), TimeSpan.FromMilliseconds(10)).GetAwaiter().GetResult());
            }
        }

        [Test]
        public void BadLockUse()
        {
            using (var client = Support.Client())
            {
                var l = client.Acquire(Support.Name("bad-use"));
                AssertInvalid(() => l.Extend(TimeSpan.FromSeconds(-1)));
                AssertInvalid(() => l.Extend(TimeSpan.Zero));
                Assert.IsTrue(l.Release());
                AssertInvalid(() => l.Extend());
                AssertInvalid(() => l.SetAutoExtend(true));
                l.Dispose();
                AssertInvalid(() => l.Extend());
                AssertInvalid(() => { var t = l.Token; });
                Assert.AreEqual(TimeSpan.Zero, l.Remaining);
                l.Dispose();
            }
        }
    }
}
