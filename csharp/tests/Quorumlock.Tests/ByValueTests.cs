using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Threading;
using NUnit.Framework;
using Quorumlock;

namespace Quorumlock.Tests
{
    /// <summary>Key formats, release and extend by value, the engine's TTL and polled loss reasons.</summary>
    [TestFixture]
    public class ByValueTests
    {
        [Test]
        public void KeyFormats()
        {
            var name = Support.Name("format");
            using (var bare = Support.Client(new QuorumlockSettings { KeyFormat = KeyFormat.Bare, KeyPrefix = string.Empty }))
            using (var l = bare.Acquire(name, new LockOptions { Ttl = TimeSpan.FromSeconds(5) }))
            {
                Assert.IsTrue(Support.EveryNodeSays(l.Value, "GET", name), "the lock value on every node");
            }
            using (var prefixed = Support.Client(new QuorumlockSettings { KeyFormat = KeyFormat.Bare }))
            using (var l = prefixed.Acquire(name, new LockOptions { Ttl = TimeSpan.FromSeconds(5) }))
            {
                Assert.IsTrue(Support.EveryNodeSays(l.Value, "GET", "quorumlock:" + name), "the lock value on every node");
            }
            using (var braced = Support.Client())
            using (var l = braced.Acquire(name, new LockOptions { Ttl = TimeSpan.FromSeconds(5) }))
            {
                Assert.IsTrue(Support.EveryNodeSays(l.Value, "GET", "quorumlock:{" + name + "}"), "braced by default");
            }
            var e = Assert.Throws<QuorumlockException>(() => Support.Client(new QuorumlockSettings { KeyFormat = (KeyFormat)7 }));
            Assert.AreEqual(QuorumlockCode.Invalid, e.Code);
        }

        /// <summary>RedLockFactory's keys are RedLock.net's: "redlock:" + resource, so each library keeps the other out.</summary>
        [Test]
        public void RedLockFactoryKeysAreRedLockNets()
        {
            var name = Support.Name("redlock");
            using (var factory = Support.Factory())
            {
                using (var l = factory.CreateLock(name, TimeSpan.FromSeconds(5)))
                {
                    Assert.IsTrue(l.IsAcquired);
                    Assert.IsTrue(Support.EveryNodeSays(l.LockId, "GET", "redlock:" + name), "the lock value on every node");
                    CollectionAssert.AreEqual(Support.Each(0L), Support.OnAll("EXISTS", "redlock:{" + name + "}"));
                }
                // A RedLock.net holder: SET NX PX with a Guid; the factory's client releases it by value.
                var guid = Guid.NewGuid().ToString();
                Support.OnAll("SET", "redlock:" + name, guid, "NX", "PX", "3000");
                using (var l = factory.CreateLock(name, TimeSpan.FromSeconds(2)))
                {
                    Assert.AreEqual(RedLockStatus.Conflicted, l.Status, "kept out by the RedLock.net holder");
                }
                Assert.That(factory.Client.ExtendValue(name, guid, TimeSpan.FromSeconds(20)), Is.GreaterThan(TimeSpan.FromSeconds(15)));
                // A call returns at the quorum-th reply; the other nodes' writes may be in flight.
                Assert.IsTrue(Support.Eventually(() => Array.TrueForAll(Support.OnAll("PTTL", "redlock:" + name), ms => (long)ms > 15000)), "PTTL on every node");
                Assert.IsTrue(factory.Client.ReleaseValue(name, guid));
                CollectionAssert.AreEqual(Support.Each(0L), Support.OnAll("EXISTS", "redlock:" + name));
            }
            var endPoints = Support.EndPoints();
            foreach (var ep in endPoints)
            {
                ep.RedisKeyFormat = "app:{{x}}:{0}";
            }
            using (var factory = RedLockFactory.Create(endPoints, new QuorumlockSettings { NodeTimeout = Support.NodeTimeout }))
            using (var l = factory.CreateLock(name, TimeSpan.FromSeconds(2)))
            {
                Assert.IsTrue(Support.EveryNodeSays(l.LockId, "GET", "app:{x}:" + name), "string.Format's key");
            }
            using (var factory = RedLockFactory.Create(Support.EndPoints(), new QuorumlockSettings { NodeTimeout = Support.NodeTimeout, KeyFormat = KeyFormat.Braced }))
            using (var l = factory.CreateLock(name, TimeSpan.FromSeconds(2)))
            {
                Assert.IsTrue(Support.Eventually(() => Array.TrueForAll(Support.OnAll("EXISTS", "redlock:{" + name + "}"), x => (long)x == 1L)), "KeyFormat overrides");
            }
        }

        /// <summary>A lock held by another process is extended and released here by value; the holder sees it lost.</summary>
        [Test]
        public void ALockOfAnotherProcess()
        {
            var name = Support.Name("other");
            var psi = new ProcessStartInfo("mono", "\"" + Path.Combine(Support.BuildDir, "ContentionWorker.exe") + "\" hold " + name)
            {
                UseShellExecute = false,
                RedirectStandardInput = true,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
            };
            psi.EnvironmentVariables["QL_NODES"] = string.Join(",", Support.Nodes);
            psi.EnvironmentVariables["QUORUMLOCK_LIB"] = NativeLibrary.Path;
            using (var p = Process.Start(psi))
            using (var factory = Support.Factory())
            {
                var err = p.StandardError.ReadToEndAsync();
                var value = p.StandardOutput.ReadLine();
                StringAssert.IsMatch("^[0-9a-f]{40}$", value ?? string.Empty, err.IsCompleted ? err.Result : "no LockId");
                using (var l = factory.CreateLock(name, TimeSpan.FromSeconds(2)))
                {
                    Assert.AreEqual(RedLockStatus.Conflicted, l.Status, "held by the other process");
                }
                Assert.That(factory.Client.ExtendValue(name, value, TimeSpan.FromSeconds(30)), Is.GreaterThan(TimeSpan.FromSeconds(25)));
                Assert.IsTrue(Support.Eventually(() => Array.TrueForAll(Support.OnAll("PTTL", "redlock:" + name), ms => (long)ms > 25000)), "PTTL on every node");
                Assert.IsTrue(factory.Client.ReleaseValue(name, value));
                CollectionAssert.AreEqual(Support.Each(0L), Support.OnAll("EXISTS", "redlock:" + name));
                Assert.IsFalse(factory.Client.ReleaseValue(name, value), "a second release finds nothing");
                var e = Assert.Throws<QuorumlockException>(() => factory.Client.ExtendValue(name, value, TimeSpan.FromSeconds(5)));
                Assert.AreEqual(QuorumlockCode.Lost, e.Code);
                CollectionAssert.AreEqual(Support.Each(0L), Support.OnAll("EXISTS", "redlock:" + name), "never re-created");
                p.StandardInput.WriteLine("go");
                p.StandardInput.Close();
                Assert.AreEqual("Expired Expired", p.StandardOutput.ReadLine(), "the holder's extension finds its keys gone");
                Assert.IsTrue(p.WaitForExit(20000));
                Assert.AreEqual(0, p.ExitCode, err.Result);
            }
        }

        [Test]
        public void ExtendValueNeverRecreates()
        {
            using (var client = Support.Client())
            {
                var shortLock = client.Acquire(Support.Name("short"), new LockOptions { Ttl = TimeSpan.FromMilliseconds(300) });
                var key = "quorumlock:{" + shortLock.Resource + "}";
                Assert.IsTrue(Support.Eventually(() => ((IList<object>)Support.OnAll("EXISTS", key)).IndexOf(1L) < 0), "keys expired");
                var e = Assert.Throws<QuorumlockException>(() => client.ExtendValue(shortLock.Resource, shortLock.Value, TimeSpan.FromSeconds(5)));
                Assert.AreEqual(QuorumlockCode.Lost, e.Code);
                CollectionAssert.AreEqual(Support.Each(0L), Support.OnAll("EXISTS", key), "not re-created");
                shortLock.Dispose();

                var name = Support.Name("held");
                using (var l = client.Acquire(name, new LockOptions { Ttl = TimeSpan.FromSeconds(5) }))
                {
                    var other = new string('e', 40);
                    e = Assert.Throws<QuorumlockException>(() => client.ExtendValue(name, other, TimeSpan.FromSeconds(60)));
                    Assert.AreEqual(QuorumlockCode.Lost, e.Code);
                    foreach (long ms in Support.OnAll("PTTL", "quorumlock:{" + name + "}"))
                    {
                        Assert.LessOrEqual(ms, 5000, "another owner's keys are not extended");
                    }
                    Assert.IsFalse(client.ReleaseValue(name, other));
                    Assert.IsTrue(Support.EveryNodeSays(l.Value, "GET", "quorumlock:{" + name + "}"), "the lock value on every node");
                    Assert.That(client.ExtendValue(new[] { name }, l.Value, TimeSpan.FromSeconds(15)), Is.GreaterThan(TimeSpan.FromSeconds(10)));
                    Support.OnAll("DEL", "quorumlock:{" + name + "}");
                    e = Assert.Throws<QuorumlockException>(() => client.ExtendValue(name, l.Value, TimeSpan.FromSeconds(5)));
                    Assert.AreEqual(LostReason.Expired, e.LostReason);
                    CollectionAssert.AreEqual(Support.Each(0L), Support.OnAll("EXISTS", "quorumlock:{" + name + "}"));
                }
            }
        }

        [Test]
        public void TtlAndLostReasonFromTheEngine()
        {
            using (var client = Support.Client())
            {
                using (var l = client.Acquire(Support.Name("ttl")))
                {
                    Assert.AreEqual(TimeSpan.FromSeconds(10), l.Ttl, "the engine's default TTL");
                }
                using (var l = client.Acquire(Support.Name("ttl"), new LockOptions { Ttl = TimeSpan.FromSeconds(7) }))
                {
                    Assert.AreEqual(TimeSpan.FromSeconds(7), l.Ttl);
                    l.Extend();
                    Assert.That(l.Remaining, Is.GreaterThan(TimeSpan.FromSeconds(6)));
                    Assert.AreEqual(LostReason.None, l.LostReason);
                    l.Release();
                    Assert.AreEqual(LostReason.None, l.LostReason, "none after a release");
                }
                var name = Support.Name("taken");
                var fired = new ManualResetEventSlim();
                using (var l = client.Acquire(name, new LockOptions { Ttl = TimeSpan.FromMilliseconds(900), AutoExtend = true }))
                {
                    l.LostToken.Register(() => fired.Set());
                    Support.OnAll("SET", "quorumlock:{" + name + "}", "someone-else-value", "PX", "5000");
                    Assert.IsTrue(fired.Wait(10000), "the poller sees the loss the auto-extension found");
                    Assert.AreEqual(LostReason.Taken, l.LostReason, "taken, not just expired");
                    Assert.IsTrue(l.IsLost);
                    Assert.IsFalse(l.Release());
                    CollectionAssert.AreEqual(Support.Each("someone-else-value"), Support.OnAll("GET", "quorumlock:{" + name + "}"));
                }
            }
            using (var factory = Support.Factory())
            {
                var name = Support.Name("conflicted");
                var l = (RedLock)factory.CreateLock(name, TimeSpan.FromMilliseconds(900));
                Assert.IsTrue(l.IsAcquired);
                Support.OnAll("SET", "redlock:" + name, "someone-else-value", "PX", "5000");
                Assert.IsTrue(l.LostToken.WaitHandle.WaitOne(10000));
                Assert.AreEqual(RedLockStatus.Conflicted, l.Status, "a lock taken over reads Conflicted");
                l.Dispose();
            }
        }

        [Test]
        public void ByValueBadInput()
        {
            var f40 = new string('f', 40);
            using (var client = Support.Client())
            {
                var cases = new Dictionary<string, Action>
                {
                    { "short value", () => client.ReleaseValue("x", "short") },
                    { "non-printable value", () => client.ReleaseValue("x", new string('\u0001', 20)) },
                    { "null value", () => client.ReleaseValue("x", null) },
                    { "null resource", () => client.ReleaseValue((string)null, f40) },
                    { "no resources", () => client.ReleaseValue(new string[0], f40) },
                    { "null list", () => client.ReleaseValue((IList<string>)null, f40) },
                    { "lone surrogate", () => client.ReleaseValue("\ud800", f40) },
                    { "zero ttl", () => client.ExtendValue("x", f40, TimeSpan.Zero) },
                    { "negative ttl", () => client.ExtendValue("x", f40, TimeSpan.FromMilliseconds(-1)) },
                };
                foreach (var c in cases)
                {
                    var e = Assert.Throws<QuorumlockException>(() => c.Value(), c.Key);
                    Assert.AreEqual(QuorumlockCode.Invalid, e.Code, c.Key);
                }
                client.Dispose();
                Assert.AreEqual(QuorumlockCode.Invalid, Assert.Throws<QuorumlockException>(() => client.ReleaseValue("x", f40)).Code, "disposed");
            }
        }
    }
}
