//! Several workers contend for one lock across N Redis nodes: who holds it, how much
//! validity is left, and how each node voted. `make demo` runs it against five local nodes.
//!
//! Nodes come from `QL_NODES` (comma-separated URLs, set by `ql-harness exec`) or the
//! command line.

use std::time::Duration;

use quorumlock::{Client, LockOptions, NodeKind};

fn votes(report: &quorumlock::Report) -> String {
    report
        .nodes()
        .iter()
        .map(|n| match n.kind {
            NodeKind::Ok => "+".to_owned(),
            NodeKind::HeldByOther => "x".to_owned(),
            NodeKind::Pending => ".".to_owned(),
            other => format!("!{other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut urls: Vec<String> = std::env::args().skip(1).collect();
    if urls.is_empty() {
        urls = std::env::var("QL_NODES")
            .map_err(|_| "give node URLs as arguments or in QL_NODES")?
            .split(',')
            .map(str::to_owned)
            .collect();
    }
    let client = Client::connect(urls).await?;
    println!(
        "{} nodes, quorum {}: {}",
        client.node_count(),
        client.quorum(),
        client.addresses().join(", ")
    );
    println!("votes per node: + for, x held by another, . not awaited (decided at quorum)\n");

    let opts = LockOptions::default()
        .ttl(Duration::from_secs(2))
        .retry_forever()
        .retry_delay(Duration::from_millis(20))
        .retry_jitter(Duration::from_millis(40))
        .wait(Duration::from_secs(10));
    let mut workers = Vec::new();
    for w in 0..4 {
        let (client, opts) = (client.clone(), opts.clone());
        workers.push(tokio::spawn(async move {
            for round in 0..3 {
                let lock = client.acquire_with(["demo:report"], &opts).await?;
                println!(
                    "worker {w} holds demo:report (round {round}, attempt {}, validity left {} ms) votes [{}]",
                    lock.attempts(),
                    lock.remaining().as_millis(),
                    votes(lock.report())
                );
                tokio::time::sleep(Duration::from_millis(150)).await;
                let report = lock.release().await?;
                println!(
                    "worker {w} released on {}/{} nodes",
                    report.released_count(),
                    report.nodes().len()
                );
            }
            Ok::<(), quorumlock::Error>(())
        }));
    }
    for w in workers {
        w.await??;
    }

    // A busy lock is a typed error with one entry per node.
    let held = client.acquire(["demo:busy"]).await?;
    match client
        .acquire_with(["demo:busy"], &LockOptions::default().retry_count(0))
        .await
    {
        Err(busy) => println!("\nsecond owner: {} [{}]", busy.kind(), votes(busy.report())),
        Ok(_) => return Err("a held lock was granted twice".into()),
    }
    held.release().await?;
    Ok(())
}
