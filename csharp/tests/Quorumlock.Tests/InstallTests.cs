using System;
using System.Collections.Generic;
using System.IO;
using NUnit.Framework;
using Quorumlock;

namespace Quorumlock.Tests
{
    /// <summary>
    /// The documented install steps, each in a fresh mono process whose environment holds only
    /// PATH, HOME, QL_NODES and what the step names: QUORUMLOCK_LIB, or a library bundled beside
    /// Quorumlock.dll.
    /// </summary>
    [TestFixture]
    public class InstallTests
    {
        private static string Hello => Path.Combine(Support.BuildDir, "Hello.exe");

        private static string Nodes => string.Join(",", Support.Nodes);

        [Test]
        public void ExampleRunsWithQuorumlockLib()
        {
            var r = Support.Run(Hello, string.Empty, new Dictionary<string, string> { { "QL_NODES", Nodes }, { "QUORUMLOCK_LIB", NativeLibrary.Path } });
            Assert.AreEqual(0, r.Item1, r.Item2);
            StringAssert.Contains("released: Unlocked", r.Item2);
        }

        [Test]
        public void BundledLibraryIsFoundWithoutEnvironment()
        {
            var dir = Path.Combine(Path.GetTempPath(), "ql-cs-bundle-" + Guid.NewGuid().ToString("N").Substring(0, 8));
            Directory.CreateDirectory(dir);
            try
            {
                File.Copy(Hello, Path.Combine(dir, "Hello.exe"));
                File.Copy(Path.Combine(Support.BuildDir, "Quorumlock.dll"), Path.Combine(dir, "Quorumlock.dll"));
                File.Copy(NativeLibrary.Path, Path.Combine(dir, "libquorumlock.so.0"));
                var r = Support.Run(Path.Combine(dir, "Hello.exe"), string.Empty, new Dictionary<string, string> { { "QL_NODES", Nodes } }, dir);
                Assert.AreEqual(0, r.Item1, r.Item2);
                StringAssert.Contains("from " + Path.Combine(dir, "libquorumlock.so.0"), r.Item2);
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }

        [Test]
        public void MonoDllmapIsTheLastResort()
        {
            var dir = Path.Combine(Path.GetTempPath(), "ql-cs-dllmap-" + Guid.NewGuid().ToString("N").Substring(0, 8));
            Directory.CreateDirectory(dir);
            try
            {
                File.Copy(Hello, Path.Combine(dir, "Hello.exe"));
                File.Copy(Path.Combine(Support.BuildDir, "Quorumlock.dll"), Path.Combine(dir, "Quorumlock.dll"));
                var env = new Dictionary<string, string> { { "QL_NODES", Nodes } };
                var standard = NativeLibraryCandidatesWithoutEnvironment(dir).Find(File.Exists);
                var r = Support.Run(Path.Combine(dir, "Hello.exe"), string.Empty, env, dir);
                if (standard != null)
                {
                    // A library under a standard prefix (make install PREFIX=/usr/local) comes first.
                    Assert.AreEqual(0, r.Item1, r.Item2);
                    StringAssert.Contains("from " + standard, r.Item2);
                    return;
                }
                Assert.AreEqual(7, r.Item1, r.Item2);
                StringAssert.Contains("libquorumlock not found (looked for QUORUMLOCK_LIB, " + Path.Combine(dir, "libquorumlock.so.0"), r.Item2);
                File.WriteAllText(
                    Path.Combine(dir, "Quorumlock.dll.config"),
                    "<configuration><dllmap dll=\"libquorumlock.so.0\" target=\"" + NativeLibrary.Path + "\" /></configuration>");
                r = Support.Run(Path.Combine(dir, "Hello.exe"), string.Empty, env, dir);
                Assert.AreEqual(0, r.Item1, r.Item2);
                StringAssert.Contains("from libquorumlock.so.0", r.Item2);
            }
            finally
            {
                Directory.Delete(dir, true);
            }
        }

        private static List<string> NativeLibraryCandidatesWithoutEnvironment(string assemblyDir)
        {
            var list = new List<string>();
            foreach (var d in new[] { assemblyDir, "/usr/local/lib", "/usr/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64" })
            {
                list.Add(Path.Combine(d, "libquorumlock.so.0"));
                list.Add(Path.Combine(d, "libquorumlock.so"));
            }
            return list;
        }

        [TestCase("/nonexistent/libquorumlock.so", "no libquorumlock at /nonexistent")]
        [TestCase("/etc/hostname", "cannot load /etc/hostname")]
        public void BrokenSetupsAreTypedErrors(string lib, string says)
        {
            var r = Support.Run(Hello, string.Empty, new Dictionary<string, string> { { "QL_NODES", Nodes }, { "QUORUMLOCK_LIB", lib } });
            Assert.AreEqual(7, r.Item1, r.Item2);
            StringAssert.StartsWith("QL_INVALID ", r.Item2);
            StringAssert.Contains(says, r.Item2);
        }
    }
}
