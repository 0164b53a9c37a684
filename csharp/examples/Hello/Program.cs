using System;
using System.Collections.Generic;
using System.Threading.Tasks;
using Quorumlock;

// mono Hello.exe   (QL_NODES=redis://h1:6379,redis://h2:6379,... ; QUORUMLOCK_LIB if libquorumlock
// is neither beside Quorumlock.dll nor under a standard prefix). Exits with the QL_* code on error.
internal static class Program
{
    private static int Main() => MainAsync().GetAwaiter().GetResult();

    private static async Task<int> MainAsync()
    {
        var endPoints = new List<RedLockEndPoint>();
        foreach (var url in (Environment.GetEnvironmentVariable("QL_NODES") ?? "redis://127.0.0.1:6379").Split(','))
        {
            endPoints.Add(url);
        }
        try
        {
            using (var factory = RedLockFactory.Create(endPoints, new QuorumlockSettings { NodeTimeout = TimeSpan.FromMilliseconds(250) }))
            {
                // C# 8 and later: await using (var l = await factory.CreateLockAsync(...)) { ... }
                var l = await factory.CreateLockAsync("hello:csharp", TimeSpan.FromSeconds(10), TimeSpan.FromSeconds(5), TimeSpan.FromMilliseconds(100));
                try
                {
                    if (!l.IsAcquired)
                    {
                        Console.WriteLine("not acquired: " + l.Status + " (" + l.InstanceSummary + ")");
                        return 1;
                    }
                    Console.WriteLine("locked " + l.Resource + " as " + l.LockId + " with libquorumlock " + QuorumlockClient.Version + " from " + NativeLibrary.Path);
                }
                finally
                {
                    await l.DisposeAsync();
                }
                Console.WriteLine("released: " + l.Status);
                return 0;
            }
        }
        catch (QuorumlockException e)
        {
            Console.WriteLine(e.CodeName + " " + e.Message);
            return (int)e.Code;
        }
    }
}
