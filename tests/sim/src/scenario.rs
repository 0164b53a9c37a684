//! Scenarios: one configuration each, from which a seed draws a schedule (clock rates, crash,
//! pause and jump times, link delays). Safe ones must show no violation; broken-assumption ones
//! must be flagged.

use crate::link::LinkSpec;
use crate::mutant::Mutant;

/// A simulation configuration.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name for tables.
    pub name: &'static str,
    /// Whether the real protocol must pass it.
    pub safe: bool,
    /// Nodes.
    pub nodes: usize,
    /// Clients.
    pub clients: usize,
    /// Resources (a call locks a random non-empty subset).
    pub resources: usize,
    /// Lock TTL (ms).
    pub ttl_ms: u64,
    /// Retry delay and jitter (ms).
    pub retry_ms: (u64, u64),
    /// Retries per call.
    pub retry_count: u32,
    /// Work time after a grant (ms, uniform); beyond the validity a correct holder stops.
    pub hold_ms: (i64, i64),
    /// Idle time between calls (ms, uniform).
    pub idle_ms: (i64, i64),
    /// Link parameters.
    pub link: LinkSpec,
    /// Node clock rates (uniform in the range).
    pub rate: (f64, f64),
    /// Clock rate of a majority of nodes, overriding `rate`.
    pub majority_rate: Option<f64>,
    /// A forward clock jump (ms) on a majority of nodes, once.
    pub majority_jump_ms: Option<i64>,
    /// Mean crashes per node over the run, and their length (ms).
    pub crashes: (f64, (i64, i64)),
    /// Whether nodes keep their data across a restart.
    pub persistent: bool,
    /// Pauses per client over the run, and their length (ms).
    pub pauses: (u32, (i64, i64)),
    /// Holders extend every `ttl / 3`.
    pub extend: bool,
    /// Fenced acquisitions.
    pub fenced: bool,
    /// The holder ignores its validity: works until it releases.
    pub ignore_validity: bool,
    /// After the run, every lock key must be gone (lossless, crash-free scenarios only).
    pub leak_audit: bool,
    /// Simulated time during which clients start calls (ms).
    pub duration_ms: i64,
    /// Release notification as the engine's default (waiters' lines and grants): waiting
    /// calls listen, releases wake and grant. Off: waiting calls poll.
    pub notify: bool,
}

/// LAN-like links: 0.1–2 ms, 2% slow up to 15 ms, no loss.
pub const LAN: LinkSpec = LinkSpec {
    min_us: 100,
    max_us: 2_000,
    slow_p: 0.02,
    slow_us: 15_000,
    loss: 0.0,
};

impl Scenario {
    /// The base: 5 nodes, 3 clients, 2 resources, TTL 300 ms, LAN links, exact clocks.
    pub fn base(name: &'static str) -> Self {
        Self {
            name,
            safe: true,
            nodes: 5,
            clients: 3,
            resources: 2,
            ttl_ms: 300,
            retry_ms: (5, 20),
            retry_count: 40,
            hold_ms: (20, 400),
            idle_ms: (0, 30),
            link: LAN,
            rate: (1.0, 1.0),
            majority_rate: None,
            majority_jump_ms: None,
            crashes: (0.0, (0, 0)),
            persistent: true,
            pauses: (0, (0, 0)),
            extend: false,
            fenced: false,
            ignore_validity: false,
            leak_audit: false,
            duration_ms: 1_500,
            notify: true,
        }
    }

    /// Scenarios the real protocol must pass.
    pub fn safe() -> Vec<Scenario> {
        let lossy = LinkSpec {
            loss: 0.05,
            slow_p: 0.05,
            slow_us: 40_000,
            ..LAN
        };
        vec![
            Scenario {
                leak_audit: true,
                ..Self::base("safe: random delays")
            },
            Scenario {
                link: lossy,
                extend: true,
                ..Self::base("safe: delays, 5% loss, extend")
            },
            Scenario {
                crashes: (1.0, (5, 400)),
                link: lossy,
                ..Self::base("safe: crashes with persistence")
            },
            Scenario {
                rate: (0.95, 1.009),
                extend: true,
                hold_ms: (200, 900),
                ..Self::base("safe: node clocks 0.95..1.009")
            },
            Scenario {
                pauses: (3, (1, 150)),
                extend: true,
                ..Self::base("safe: client pauses < validity")
            },
            Scenario {
                fenced: true,
                link: lossy,
                crashes: (0.5, (5, 200)),
                ..Self::base("safe: fenced, loss, crashes")
            },
            // Waiters in line for one key: most locks change hands by a release's grant.
            Scenario {
                resources: 1,
                clients: 5,
                link: lossy,
                crashes: (0.5, (5, 200)),
                ..Self::base("safe: one key, 5 clients, loss, crashes")
            },
            Scenario {
                notify: false,
                link: lossy,
                extend: true,
                ..Self::base("safe: notification off, loss, extend")
            },
        ]
    }

    /// Scenarios whose broken assumption the checker must flag.
    pub fn broken() -> Vec<Scenario> {
        vec![
            Scenario {
                safe: false,
                majority_rate: Some(2.0),
                hold_ms: (100, 600),
                ..Self::base("broken: clock rate 2 on a majority")
            },
            Scenario {
                safe: false,
                persistent: false,
                crashes: (2.0, (1, 50)),
                hold_ms: (100, 600),
                ..Self::base("broken: restart without persistence")
            },
            Scenario {
                safe: false,
                ignore_validity: true,
                hold_ms: (100, 700),
                ..Self::base("broken: client ignores validity")
            },
            Scenario {
                safe: false,
                majority_jump_ms: Some(250),
                hold_ms: (100, 600),
                ..Self::base("broken: clock jump on a majority")
            },
        ]
    }

    /// The scenario a mutant is run on: a safe one with the conditions its bug needs.
    pub fn for_mutant(m: Mutant) -> Scenario {
        let s = match m {
            Mutant::NoElapsed => Scenario {
                pauses: (3, (1, 150)),
                hold_ms: (200, 600),
                ..Self::base("")
            },
            Mutant::NoDrift => Scenario {
                rate: (1.0, 1.009),
                hold_ms: (300, 900),
                retry_ms: (1, 3),
                clients: 4,
                ..Self::base("")
            },
            // A rare race (a late SET overwrites the next holder's key and the release behind
            // it deletes it): one resource and five clients make it about 5 times likelier.
            Mutant::ExtendSet => Scenario {
                extend: true,
                resources: 1,
                clients: 5,
                link: LinkSpec {
                    loss: 0.05,
                    slow_p: 0.05,
                    slow_us: 40_000,
                    ..LAN
                },
                crashes: (1.0, (5, 400)),
                pauses: (3, (1, 150)),
                rate: (0.95, 1.009),
                hold_ms: (100, 900),
                ..Self::base("")
            },
            Mutant::NoCleanup => Scenario {
                leak_audit: true,
                ..Self::base("")
            },
            Mutant::NoPhase2 => Scenario {
                fenced: true,
                resources: 1,
                clients: 4,
                link: LinkSpec { loss: 0.1, ..LAN },
                ..Self::base("")
            },
            // Grants won after long waits: one resource, many clients, short retry delays.
            Mutant::GrantFromNow => Scenario {
                resources: 1,
                clients: 5,
                hold_ms: (100, 600),
                ..Self::base("")
            },
            // Grants split among waiters and given back while old grants are on their way.
            Mutant::StaleGrants => Scenario {
                resources: 1,
                clients: 5,
                link: LinkSpec {
                    slow_p: 0.1,
                    slow_us: 30_000,
                    ..LAN
                },
                ..Self::base("")
            },
            Mutant::QuorumHalf | Mutant::None => Self::base(""),
        };
        Scenario {
            name: m.name(),
            safe: false,
            ..s
        }
    }
}
