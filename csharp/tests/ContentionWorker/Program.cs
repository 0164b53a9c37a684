using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Text;
using Quorumlock;

// One contending process: ContentionWorker.exe <lock|nolock> <resource> <iterations> <log file> <hold ms>.
// Inside the critical section it records "<enter> <leave> <pid> <remaining ms>" on the shared
// monotonic clock (Stopwatch ticks) and appends the lines to the log at the end.
// ContentionWorker.exe hold <resource>: takes the lock (RedLockFactory, auto-extended), prints
// its LockId, waits for a line on stdin, then waits up to 10 s for the engine to find it lost
// and prints "<Status> <LostReason>".
internal static class Program
{
    private static int Main(string[] args)
    {
        var mode = args[0];
        if (mode == "hold")
        {
            return Hold(args[1]);
        }
        var resource = args[1];
        var iterations = int.Parse(args[2]);
        var hold = int.Parse(args[4]);
        var nodes = Environment.GetEnvironmentVariable("QL_NODES").Split(',');
        var endPoints = new List<RedLockEndPoint>();
        foreach (var n in nodes)
        {
            endPoints.Add(n);
        }
        var lines = new StringBuilder();
        var pid = Process.GetCurrentProcess().Id;
        using (var factory = RedLockFactory.Create(endPoints, new QuorumlockSettings { NodeTimeout = TimeSpan.FromMilliseconds(250) }))
        {
            for (var i = 0; i < iterations; i++)
            {
                IRedLock l = null;
                if (mode == "lock")
                {
                    l = factory.CreateLock(resource, TimeSpan.FromSeconds(5), TimeSpan.FromSeconds(30), TimeSpan.FromMilliseconds(20));
                    if (!l.IsAcquired)
                    {
                        Console.Error.WriteLine("not acquired: " + l.Status + " " + ((RedLock)l).LastError?.Message);
                        return 2;
                    }
                }
                var enter = Stopwatch.GetTimestamp();
                System.Threading.Thread.Sleep(hold);
                var left = l == null ? 1 : (long)((RedLock)l).Remaining.TotalMilliseconds;
                var leave = Stopwatch.GetTimestamp();
                lines.Append(enter).Append(' ').Append(leave).Append(' ').Append(pid).Append(' ').Append(left).Append('\n');
                l?.Dispose();
            }
        }
        using (var f = new FileStream(args[3], FileMode.Append, FileAccess.Write, FileShare.ReadWrite))
        {
            var bytes = Encoding.ASCII.GetBytes(lines.ToString());
            f.Write(bytes, 0, bytes.Length); // one write of < 4 KiB in O_APPEND mode: not interleaved
        }
        return 0;
    }

    private static int Hold(string resource)
    {
        var endPoints = new List<RedLockEndPoint>();
        foreach (var n in Environment.GetEnvironmentVariable("QL_NODES").Split(','))
        {
            endPoints.Add(n);
        }
        using (var factory = RedLockFactory.Create(endPoints, new QuorumlockSettings { NodeTimeout = TimeSpan.FromMilliseconds(250) }))
        using (var l = (RedLock)factory.CreateLock(resource, TimeSpan.FromMilliseconds(1500)))
        {
            if (!l.IsAcquired)
            {
                Console.Error.WriteLine("not acquired: " + l.Status);
                return 2;
            }
            Console.WriteLine(l.LockId);
            Console.Out.Flush();
            Console.In.ReadLine();
            l.LostToken.WaitHandle.WaitOne(10000);
            Console.WriteLine(l.Status + " " + l.Lock.LostReason);
            Console.Out.Flush();
        }
        return 0;
    }
}
