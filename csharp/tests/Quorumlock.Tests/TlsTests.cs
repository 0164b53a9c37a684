using System;
using System.Diagnostics;
using System.IO;
using System.Text.RegularExpressions;
using NUnit.Framework;
using Quorumlock;

namespace Quorumlock.Tests
{
    /// <summary>TLS end to end (docs/SECURITY.md): a mutual-TLS node of its own from ql-harness,
    /// the CA and client certificate given as node URL parameters, typed errors for a wrong CA
    /// and #insecure.</summary>
    [TestFixture]
    public class TlsTests
    {
        private string runDir, baseUrl, addr, ca, cert, key, otherCa;

        private static string Harness() =>
            Environment.GetEnvironmentVariable("QL_HARNESS") ?? Path.GetFullPath("target/debug/ql-harness");

        private static string RunHarness(string args)
        {
            var psi = new ProcessStartInfo(Harness(), args) { UseShellExecute = false, RedirectStandardOutput = true };
            using (var p = Process.Start(psi))
            {
                var output = p.StandardOutput.ReadToEnd();
                p.WaitForExit();
                Assert.AreEqual(0, p.ExitCode, "ql-harness " + args);
                return output;
            }
        }

        private static string Field(string json, string name) =>
            Regex.Match(json, "\"" + name + "\":\"([^\"]*)\"").Groups[1].Value;

        [TestFixtureSetUp]
        public void Start()
        {
            var up = RunHarness("start --nodes 1 --persist none --mtls --parent " + Process.GetCurrentProcess().Id).Trim();
            runDir = Field(up, "run_dir");
            baseUrl = Field(up, "url").Split('?')[0];
            addr = Field(up, "addr");
            ca = Field(up, "ca");
            cert = Field(up, "cert");
            key = Field(up, "key");
            otherCa = Field(up, "other_ca");
        }

        [TestFixtureTearDown]
        public void Stop() => RunHarness("stop " + runDir);

        private string Url(string caFile) =>
            baseUrl + "?tls_ca=" + Uri.EscapeDataString(caFile) + "&tls_cert=" + Uri.EscapeDataString(cert) +
            "&tls_key=" + Uri.EscapeDataString(key);

        private static QuorumlockClient Connect(string url) =>
            QuorumlockClient.Connect(new[] { url }, new QuorumlockSettings
            {
                Quarantine = QuarantineMode.Off,
                RequireQuorum = true,
                ConnectTimeout = TimeSpan.FromSeconds(10),
                NodeTimeout = Support.NodeTimeout,
            });

        [Test]
        public void LocksOverMutualTls()
        {
            using (var client = Connect(Url(ca)))
            using (var l = client.Acquire(Support.Name("tls"), new LockOptions { Ttl = TimeSpan.FromSeconds(5) }))
            {
                Assert.IsTrue(l.Release());
            }
        }

        [Test]
        public void AWrongCaIsAConnectionErrorNamingTheNode()
        {
            var e = Assert.Throws<QuorumlockException>(() => Connect(Url(otherCa)).Dispose());
            Assert.AreEqual("QL_CONNECTION", e.CodeName);
            Assert.AreEqual("Tls", e.Nodes[0].KindName);
            StringAssert.Contains(addr, e.Message);
            StringAssert.Contains("UnknownIssuer", e.Message);
        }

        [Test]
        public void InsecureIsRefused()
        {
            var e = Assert.Throws<QuorumlockException>(() => Connect(baseUrl + "#insecure").Dispose());
            Assert.AreEqual("QL_INVALID", e.CodeName);
            StringAssert.Contains("#insecure", e.Message);
        }
    }
}
