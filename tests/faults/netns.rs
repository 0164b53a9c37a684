//! Kernel partitions (`docs/TESTING.md` §3.7): the scenarios of the matrix's common setup
//! with faults made by nftables rules in a network namespace instead of proxies, for what a
//! proxy cannot do: packets lost one by one (TCP retransmits them, so replies arrive hundreds
//! of milliseconds late, after the node timeout), connection attempts whose SYN is dropped
//! (they hang in the kernel's backoff instead of being refused), requests and replies lost on
//! an established connection. Root only: each test runs again inside a namespace it creates
//! (`quorumlock_harness::netns`); without root, `ip netns` or `nft` it prints a `SKIP` line.
//!
//! Inside, every node listens on 127.0.0.1 and on one address per client view: A connects
//! through `A_VIEW`, the workers through `W_VIEW`, and rules on those destination addresses
//! cut one view only. A cannot reach n3 and n4 (its SYN there is answered with a reset, as the
//! proxies' `Reset`), so it holds exactly {n0, n1, n2}.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../harness/src/workload.rs"]
mod workload;

mod common;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use common::{ClientCfg, Links, Scenario, ScriptOn, Setup, blocking, contend, judge, scenario};
use quorumlock::MonoTime;
use quorumlock_harness::netns::{self, Filter, Netns};
use quorumlock_harness::{Cluster, Partition};

/// A's address of every node.
const A_VIEW: &str = "127.0.0.11";
/// The workers' address of every node.
const W_VIEW: &str = "127.0.0.21";

/// Runs `body` inside a fresh network namespace: this test binary runs test `name` again
/// there, where [`netns::inside`] holds.
fn in_namespace<F, Fut>(name: &str, body: F)
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ()>,
{
    if netns::inside() {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(body());
        return;
    }
    let ns = match Netns::create() {
        Ok(ns) => ns,
        Err(why) => {
            println!("SKIP faults_netns {name}: {why}");
            return;
        }
    };
    let status = ns
        .run_test(name)
        .expect("run the test inside its namespace");
    assert!(status.success(), "{name} failed inside {}", ns.name());
}

/// Five lock nodes with A's and the workers' addresses, the resource node, and the filter.
struct NsBench {
    nodes: Cluster,
    resource: Cluster,
    filter: Filter,
}

impl NsBench {
    fn start() -> NsBench {
        let nodes = Cluster::builder()
            .nodes(5)
            .also_bind([A_VIEW, W_VIEW])
            .start()
            .expect("lock nodes");
        let resource = Cluster::builder().nodes(1).start().expect("resource node");
        let bench = NsBench {
            nodes,
            resource,
            filter: Filter::new().expect("nft table"),
        };
        bench.heal();
        bench
    }

    /// The ports of `nodes`, as an nft set.
    fn ports(&self, nodes: impl IntoIterator<Item = usize>) -> String {
        let ports: Vec<String> = nodes
            .into_iter()
            .map(|i| self.nodes.addr(i).port().to_string())
            .collect();
        format!("{{ {} }}", ports.join(", "))
    }

    fn rule(&self, rule: &str) {
        self.filter.add(rule).expect("nft rule");
    }

    /// Removes every fault; A still cannot reach n3 and n4.
    fn heal(&self) {
        self.filter.heal().expect("nft flush");
        let cut = self.ports([3, 4]);
        self.rule(&format!(
            "ip daddr {A_VIEW} tcp dport {cut} reject with tcp reset"
        ));
    }
}

impl Setup for NsBench {
    fn a_urls(&self) -> Vec<String> {
        (0..5).map(|i| self.nodes.url_via(i, A_VIEW)).collect()
    }

    fn worker_urls(&self) -> Vec<String> {
        (0..5).map(|i| self.nodes.url_via(i, W_VIEW)).collect()
    }

    fn counter(&self) -> u64 {
        common::resource_counter(&self.resource)
    }

    fn resource_addr(&self) -> SocketAddr {
        self.resource.addr(0)
    }

    fn leftovers(&self) -> Vec<common::Leftover> {
        common::leftovers_on(&self.nodes)
    }
}

/// A fault: `rules` (given the bench, to name ports) for `ms`, then healed.
fn fault(rules: fn(&NsBench) -> Vec<String>, ms: u64) -> ScriptOn<NsBench> {
    Box::new(move |b: Arc<NsBench>| {
        tokio::spawn(async move {
            for r in rules(&b) {
                blocking(|| b.rule(&r));
            }
            tokio::time::sleep(Duration::from_millis(ms)).await;
            blocking(|| b.heal());
        })
    })
}

/// Runs `scenario` on a fresh [`NsBench`] per run with the fault `rules` held for `ms`.
async fn run(scenario: Scenario, rules: fn(&NsBench) -> Vec<String>, ms: u64) {
    judge(&scenario, || async {
        let bench = Arc::new(blocking(NsBench::start));
        contend(bench, &scenario, fault(rules, ms)).await
    })
    .await;
}

/// Every lock node's packets, both ways, lost at random (30 %).
fn random_loss(b: &NsBench) -> Vec<String> {
    let ports = b.ports(0..5);
    vec![
        format!("tcp dport {ports} numgen random mod 100 < 30 drop"),
        format!("tcp sport {ports} numgen random mod 100 < 30 drop"),
    ]
}

/// A's packets to its majority dropped: new connections hang, requests vanish.
fn a_majority_dropped(b: &NsBench) -> Vec<String> {
    vec![format!(
        "ip daddr {A_VIEW} tcp dport {} drop",
        b.ports(0..3)
    )]
}

/// The replies to the workers from n0 and n1 dropped: the nodes apply the requests, the
/// workers never hear back.
fn worker_replies_dropped(b: &NsBench) -> Vec<String> {
    vec![format!(
        "ip saddr {W_VIEW} tcp sport {} drop",
        b.ports(0..2)
    )]
}

#[test]
fn k1_random_loss_on_every_node() {
    in_namespace("k1_random_loss_on_every_node", || {
        run(
            scenario(
                "K1 kernel: 30 % random loss, every node, both ways, 3 s",
                true,
            ),
            random_loss,
            3_000,
        )
    });
}

/// K1 with fenced locks: phase 2's raises go over the same lossy links, and the tokens
/// increase (G1).
#[test]
fn k1f_fenced_tokens_increase_under_random_loss() {
    in_namespace("k1f_fenced_tokens_increase_under_random_loss", || {
        let mut s = scenario(
            "K1f as K1 (30 % random loss), fenced: tokens increase",
            true,
        );
        s.fenced = true;
        run(s, random_loss, 3_000)
    });
}

#[test]
fn k2_holders_majority_dropped() {
    in_namespace("k2_holders_majority_dropped", || {
        run(
            scenario("K2 kernel: A's packets to n0-n2 dropped 3 s", true),
            a_majority_dropped,
            3_000,
        )
    });
}

#[test]
fn k3_replies_to_the_workers_dropped() {
    in_namespace("k3_replies_to_the_workers_dropped", || {
        run(
            scenario(
                "K3 kernel: replies of n0,n1 to the workers dropped 2 s",
                true,
            ),
            worker_replies_dropped,
            2_000,
        )
    });
}

/// A's packets to and from its majority lost at random, `percent` of them, the replies of
/// its extensions among them.
fn a_majority_lossy(b: &NsBench, percent: u32) -> Vec<String> {
    let ports = b.ports(0..3);
    let lose = format!("numgen random mod 100 < {percent} drop");
    vec![
        format!("ip daddr {A_VIEW} tcp dport {ports} {lose}"),
        format!("ip saddr {A_VIEW} tcp sport {ports} {lose}"),
    ]
}

/// An auto-extending holder whose extensions fail (half its packets lost: an extension needs
/// all three of its nodes, so most runs lose the lock at the first one during the fault): it
/// must stop working once the validity it has runs out, before its keys expire.
#[test]
fn k6_auto_extending_holder_loses_its_extensions() {
    in_namespace("k6_auto_extending_holder_loses_its_extensions", || {
        let mut s = scenario(
            "K6 kernel: A auto-extends (works 2 x ttl), 50 % loss to and from n0-n2, 3 s",
            true,
        );
        s.a_auto_extends = true;
        s.secs = 6.0;
        run(s, |b| a_majority_lossy(b, 50), 3_000)
    });
}

/// K6 with a fifth of the packets lost: most extensions get through, with replies resent
/// after the node timeout among them, and A mostly works its whole 2 x ttl.
#[test]
fn k7_auto_extending_holder_extends_through_loss() {
    in_namespace("k7_auto_extending_holder_extends_through_loss", || {
        let mut s = scenario(
            "K7 kernel: A auto-extends (works 2 x ttl), 20 % loss to and from n0-n2, 3 s",
            true,
        );
        s.a_auto_extends = true;
        s.secs = 6.0;
        run(s, |b| a_majority_lossy(b, 20), 3_000)
    });
}

/// The checker can fail in this setup: A cut off from its majority keeps working past its
/// validity, and the workers take the lock once its keys expired.
#[test]
fn k4_a_cut_off_holder_that_ignores_validity_is_caught() {
    in_namespace(
        "k4_a_cut_off_holder_that_ignores_validity_is_caught",
        || {
            let mut s = scenario("K4 kernel: K2, A ignores validity (works 2 x ttl)", false);
            s.a_ignores_validity = Some(Duration::from_millis(2 * common::TTL_MS));
            s.secs = 5.0;
            run(s, a_majority_dropped, 3_000)
        },
    );
}

/// P5k's links: every node also listens on one address per worker (`127.0.0.31` ...), and a
/// partition is one rule per view on the destination address.
struct NsMesh {
    nodes: Cluster,
    filter: Filter,
}

impl NsMesh {
    fn start() -> NsMesh {
        let nodes = Cluster::builder()
            .nodes(5)
            .also_bind((0..common::VIEWS).map(view_address))
            .start()
            .expect("lock nodes");
        let filter = Filter::new().expect("nft table");
        filter.heal().expect("nft flush");
        NsMesh { nodes, filter }
    }
}

/// Worker `view`'s address of every node in P5k.
fn view_address(view: usize) -> String {
    format!("127.0.0.{}", 31 + view)
}

impl Links for NsMesh {
    fn urls(&self, view: usize) -> Vec<String> {
        (0..5)
            .map(|i| self.nodes.url_via(i, &view_address(view)))
            .collect()
    }

    fn cut(&self, spec: &Partition, reset: bool) {
        self.heal();
        let verdict = if reset {
            "reject with tcp reset"
        } else {
            "drop"
        };
        for v in 0..common::VIEWS {
            let name = format!("w{v}");
            let cut: Vec<String> = (0..5)
                .filter(|&i| spec.cuts((v, &name), i, 5))
                .map(|i| self.nodes.addr(i).port().to_string())
                .collect();
            if !cut.is_empty() {
                let (address, ports) = (view_address(v), cut.join(", "));
                let rule = format!("ip daddr {address} tcp dport {{ {ports} }} {verdict}");
                self.filter.add(&rule).expect("nft rule");
            }
        }
    }

    fn heal(&self) {
        self.filter.heal().expect("nft flush");
    }
}

/// P5 at the kernel level: the flapping partitions of the proxy mesh as nftables rules, cut
/// links dropping every packet (SYNs included) in one cycle and answering with resets in the
/// next.
#[test]
fn p5k_flapping_partitions_in_the_kernel() {
    in_namespace("p5k_flapping_partitions_in_the_kernel", || async {
        common::flapping(
            "P5k partitions flapping (nftables, 4 views, cut = drop / reset)",
            || blocking(NsMesh::start),
        )
        .await;
    });
}

/// Liveness after the kernel dropped every packet to a majority for 2 s, SYNs included. A
/// connection attempt made during the cut waits in the kernel's SYN backoff (resent after 1
/// s, 3 s, 7 s ...) unless the client gives up on it and dials again; open connections keep
/// their data queued and resent. Both a client connected before the cut and one that
/// connected during it must acquire soon after the heal.
#[test]
fn k5_clients_acquire_soon_after_dropped_syns_heal() {
    in_namespace(
        "k5_clients_acquire_soon_after_dropped_syns_heal",
        || async {
            let b = blocking(NsBench::start);
            let opts = common::opts();
            let before = common::connect(b.worker_urls(), ClientCfg::default()).await;
            common::lock_once(&before, "x", &opts).await;
            blocking(|| {
                b.rule(&format!(
                    "ip daddr {W_VIEW} tcp dport {} drop",
                    b.ports(0..3)
                ))
            });
            let cut_at = MonoTime::now();
            let during = quorumlock::Client::builder()
                .nodes(b.worker_urls())
                .lock_options(opts.clone())
                .connect_timeout(Duration::from_millis(300))
                .connect()
                .await;
            let mut refused = 0;
            while MonoTime::now() - cut_at < Duration::from_secs(2) {
                assert!(
                    before.acquire_with(["x"], &opts).await.is_err(),
                    "a quorum is cut off"
                );
                refused += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            blocking(|| b.heal());
            let healed = MonoTime::now();
            let first_grant = |client: quorumlock::Client, who: &'static str| {
                let opts = opts.clone();
                async move {
                    let mut tries = 0;
                    loop {
                        tries += 1;
                        if let Ok(lock) = client.acquire_with([who], &opts).await {
                            lock.release().await.unwrap();
                            return (MonoTime::now() - healed, tries);
                        }
                        assert!(
                            MonoTime::now() - healed < Duration::from_secs(5),
                            "{who}: no acquisition within 5 s of the heal ({tries} tries)"
                        );
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            };
            let (b_took, b_tries) = first_grant(before, "connected-before").await;
            println!(
                "K5 kernel: {refused} acquisitions refused during the 2 s cut; the client connected before took {} ms after the heal ({b_tries} tries)",
                b_took.as_millis()
            );
            match during {
                Ok(client) => {
                    let (took, tries) = first_grant(client, "connected-during").await;
                    println!(
                        "K5 kernel: the client that connected during the cut took {} ms after the heal ({tries} tries)",
                        took.as_millis()
                    );
                }
                Err(e) => println!("K5 kernel: connecting during the cut failed: {e}"),
            }
        },
    );
}
