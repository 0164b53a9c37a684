//! The machine driven by hand: every transition a driver can see.

use super::*;

struct Counter(u8);

impl Random for Counter {
    fn fill(&mut self, out: &mut [u8]) -> std::result::Result<(), String> {
        for b in out {
            self.0 = self.0.wrapping_add(1);
            *b = self.0;
        }
        Ok(())
    }
}

struct Broken;

impl Random for Broken {
    fn fill(&mut self, _: &mut [u8]) -> std::result::Result<(), String> {
        Err("no entropy".into())
    }
}

fn members(n: usize) -> Arc<[Member]> {
    (0..n)
        .map(|i| Member {
            address: format!("redis://n{i}"),
            cluster: false,
        })
        .collect()
}

fn timing() -> Timing {
    Timing {
        drift_factor: 0.01,
        drift_constant: Duration::from_millis(2),
        max_ttl: Duration::from_secs(60),
        quarantine_period: Duration::from_secs(65),
    }
}

fn machine(n: usize, opts: LockOptions) -> Acquisition {
    Acquisition::new(members(n), opts, &timing(), 1_000).unwrap()
}

/// Drains the outputs: the sends (round, node, request) and the other outputs.
fn drain(m: &mut Acquisition, now: u64) -> (Vec<(u64, usize, Request)>, Vec<Output>) {
    let (mut sends, mut rest) = (Vec::new(), Vec::new());
    while let Some(o) = m.poll_output(now, &mut Counter((now % 251) as u8)) {
        match o {
            Output::Send {
                round,
                node,
                request,
            } => sends.push((round, node, request)),
            other => rest.push(other),
        }
    }
    (sends, rest)
}

fn opts() -> LockOptions {
    LockOptions::default()
        .ttl(Duration::from_secs(10))
        .retry_count(0)
}

#[test]
fn a_quorum_grants_with_the_validity_from_the_start() {
    let mut m = machine(5, opts());
    let (sends, rest) = drain(&mut m, 1_000);
    assert!(matches!(rest[..], [Output::Attempt { number: 1 }]));
    assert_eq!(sends.len(), 5);
    let round = sends[0].0;
    for (node, t) in [(0, 1_100), (1, 1_200)] {
        assert!(m.handle_answer(round, node, Ok(NodeKind::Ok), t));
        assert!(
            drain(&mut m, t).1.is_empty(),
            "two votes of five decide nothing"
        );
    }
    assert!(m.handle_answer(round, 3, Ok(NodeKind::Ok), 1_500));
    let (_, rest) = drain(&mut m, 1_500);
    let [Output::Done(Ok(g))] = &rest[..] else {
        panic!("{rest:?}")
    };
    let drift = timing().drift(Duration::from_secs(10));
    assert_eq!(g.t1_us, 1_000);
    assert_eq!(g.t2_us, 1_500);
    assert_eq!(
        g.valid_until_us,
        1_000 + micros(Duration::from_secs(10) - drift)
    );
    assert_eq!(
        g.report
            .nodes()
            .iter()
            .filter(|r| r.kind == NodeKind::Pending)
            .count(),
        2
    );
    assert_eq!(g.value.len(), 40);
    assert!(
        !m.handle_answer(round, 4, Ok(NodeKind::Ok), 1_600),
        "late answers do not count"
    );
}

#[test]
fn other_holders_make_it_busy_and_refusals_need_no_cleanup() {
    let mut m = machine(3, opts());
    let (sends, _) = drain(&mut m, 1_000);
    for (round, node, _) in &sends[..2] {
        m.handle_answer(*round, *node, Ok(NodeKind::HeldByOther), 2_000);
    }
    let (_, rest) = drain(&mut m, 2_000);
    assert!(
        rest.is_empty(),
        "only the node still pending may hold our key: its answer decides ({rest:?})"
    );
    assert_eq!(
        m.poll_timeout(),
        Some(3_000),
        "as long again as the round took until its decision (1 ms)"
    );
    assert!(
        m.handle_answer(sends[2].0, 2, Ok(NodeKind::HeldByOther), 2_100),
        "a suspect's late answer counts"
    );
    let (_, rest) = drain(&mut m, 2_100);
    let [Output::Done(Err(e))] = &rest[..] else {
        panic!("{rest:?}")
    };
    assert_eq!(e.kind(), ErrorKind::Busy);
    assert_eq!(e.attempts(), 1);
}

/// The contended case of `other_holders_make_it_busy_and_refusals_need_no_cleanup`: of the
/// nodes still silent when other holders decided the attempt, only those that wrote (or
/// whose outcome is unknown) are cleaned, and the next attempt waits for that.
#[test]
fn silent_nodes_of_a_refused_attempt_are_cleaned_only_if_they_wrote() {
    let o = opts()
        .retry_count(1)
        .retry_delay(Duration::from_millis(1))
        .retry_jitter(Duration::ZERO);
    let mut m = machine(5, o);
    let (sends, _) = drain(&mut m, 1_000);
    let round = sends[0].0;
    let Request::Acquire { value } = sends[0].2.clone() else {
        panic!()
    };
    for node in 0..3 {
        m.handle_answer(round, node, Ok(NodeKind::HeldByOther), 3_000);
    }
    let (_, rest) = drain(&mut m, 3_000);
    assert!(matches!(rest[..], [Output::Listen]), "{rest:?}");
    assert_eq!(
        m.poll_timeout(),
        Some(5_000),
        "the round took 2 ms: 2 ms more"
    );
    m.handle_answer(round, 3, Ok(NodeKind::Ok), 3_200);
    assert!(drain(&mut m, 3_200).1.is_empty(), "node 4 still silent");
    m.handle_timeout(4_999);
    assert!(
        drain(&mut m, 4_999).0.is_empty(),
        "no attempt before the suspects are settled, past the retry delay too"
    );
    m.handle_answer(round, 4, Ok(NodeKind::HeldByOther), 4_999);
    let (_, rest) = drain(&mut m, 4_999);
    let [Output::Clean { nodes, value: v }] = &rest[..] else {
        panic!("{rest:?}")
    };
    assert_eq!(nodes, &vec![3], "node 3 wrote late, node 4 refused");
    assert_eq!(v, &value);
    assert_eq!(m.poll_timeout(), None, "the cleanup runs");
    m.handle_cleaned(5_200);
    let (sends, rest) = drain(&mut m, 5_200);
    assert!(
        matches!(rest[..], [Output::Attempt { number: 2 }]),
        "{rest:?}"
    );
    assert_eq!(sends.len(), 5);

    // Refused everywhere but one node, which does not answer in time: cleaned as before,
    // never later than the round's deadline.
    let mut m = machine(3, opts());
    let (sends, _) = drain(&mut m, 1_000);
    for node in 0..2 {
        m.handle_answer(sends[0].0, node, Ok(NodeKind::HeldByOther), 1_100);
    }
    let deadline = m.poll_timeout().unwrap();
    assert_eq!(deadline, 2_100, "decided after 100 µs: the 1 ms floor");
    let mut late = machine(3, opts());
    let (sends_late, _) = drain(&mut late, 1_000);
    let end = 1_000 + micros(late.node_timeout());
    for node in 0..2 {
        late.handle_answer(sends_late[0].0, node, Ok(NodeKind::HeldByOther), end - 10);
    }
    assert_eq!(
        late.poll_timeout(),
        Some(end),
        "capped by the round's deadline"
    );
    assert_eq!(m.handle_timeout(deadline - 1), Vec::<usize>::new());
    assert_eq!(
        m.handle_timeout(deadline),
        Vec::<usize>::new(),
        "not a node timeout: the wait was 1 ms"
    );
    let (_, rest) = drain(&mut m, deadline);
    assert!(
        matches!(&rest[..], [Output::Clean { nodes, .. }] if nodes == &vec![2]),
        "{rest:?}"
    );
    m.handle_cleaned(deadline + 10);
    let (_, rest) = drain(&mut m, deadline + 10);
    assert!(matches!(rest[..], [Output::Done(Err(_))]), "{rest:?}");
}

#[test]
fn cancelling_while_suspects_are_silent_cleans_them() {
    let mut m = machine(3, opts().retry_count(3));
    let (sends, _) = drain(&mut m, 1_000);
    let Request::Acquire { value } = sends[0].2.clone() else {
        panic!()
    };
    for node in 0..2 {
        m.handle_answer(sends[0].0, node, Ok(NodeKind::HeldByOther), 1_100);
    }
    drain(&mut m, 1_100);
    let c = m.cancel();
    assert_eq!(c.clean, Some((vec![2], value)));
    assert_eq!(c.error.kind(), ErrorKind::Cancelled);
}

#[test]
fn a_cluster_member_that_refuses_late_is_still_cleaned() {
    let mut members: Vec<Member> = members(3).to_vec();
    members[2].cluster = true;
    let mut m = Acquisition::new(members.into(), opts(), &timing(), 1_000).unwrap();
    let (sends, _) = drain(&mut m, 1_000);
    for node in 0..2 {
        m.handle_answer(sends[0].0, node, Ok(NodeKind::HeldByOther), 1_100);
    }
    assert!(drain(&mut m, 1_100).1.is_empty());
    m.handle_answer(
        sends[0].0,
        2,
        Err((NodeKind::ConnectionRefused, "refused".into())),
        1_200,
    );
    let (_, rest) = drain(&mut m, 1_200);
    assert!(
        matches!(&rest[..], [Output::Clean { nodes, .. }] if nodes == &vec![2]),
        "its client may have retried our own write, whatever it answers: {rest:?}"
    );
}

#[test]
fn a_failed_attempt_cleans_waits_and_retries_with_a_fresh_value() {
    let o = opts()
        .retry_count(1)
        .retry_delay(Duration::from_millis(100))
        .retry_jitter(Duration::ZERO);
    let mut m = machine(5, o);
    let (sends, _) = drain(&mut m, 1_000);
    let Request::Acquire { value: first } = sends[0].2.clone() else {
        panic!()
    };
    m.handle_answer(sends[0].0, 0, Ok(NodeKind::Ok), 1_100);
    m.handle_answer(sends[0].0, 1, Ok(NodeKind::HeldByOther), 1_100);
    let deadline = m.poll_timeout().unwrap();
    assert_eq!(deadline, 1_000 + micros(m.node_timeout()));
    assert_eq!(m.handle_timeout(deadline), vec![2, 3, 4]);
    let (_, rest) = drain(&mut m, deadline);
    let [Output::Clean { nodes, value }, Output::Listen] = &rest[..] else {
        panic!("{rest:?}")
    };
    assert_eq!(
        nodes,
        &vec![0, 2, 3, 4],
        "node 1 refused: it cannot hold our key"
    );
    assert_eq!(value, &first);
    assert_eq!(
        m.poll_timeout(),
        None,
        "the next attempt waits for the cleanup"
    );
    m.handle_cleaned(deadline + 10);
    let until = m.poll_timeout().unwrap();
    assert_eq!(until, deadline + 100_000);
    m.handle_timeout(until);
    let (sends, rest) = drain(&mut m, until);
    assert!(matches!(rest[..], [Output::Attempt { number: 2 }]));
    let Request::Acquire { value: second } = sends[0].2.clone() else {
        panic!()
    };
    assert_ne!(first, second);
    for (round, node, _) in &sends[..3] {
        m.handle_answer(*round, *node, Ok(NodeKind::Ok), until + 5);
    }
    let (_, rest) = drain(&mut m, until + 5);
    let [Output::Done(Ok(g))] = &rest[..] else {
        panic!("{rest:?}")
    };
    assert_eq!((g.attempts, g.history.len()), (2, 1));
}

#[test]
fn the_last_failure_returns_only_after_its_cleanup() {
    let mut m = machine(1, opts());
    let (sends, _) = drain(&mut m, 1_000);
    m.handle_answer(
        sends[0].0,
        0,
        Err((NodeKind::ConnectionLost, "reset".into())),
        1_200,
    );
    let (_, rest) = drain(&mut m, 1_200);
    assert!(matches!(rest[..], [Output::Clean { .. }]), "{rest:?}");
    m.handle_cleaned(1_300);
    let (_, rest) = drain(&mut m, 1_300);
    let [Output::Done(Err(e))] = &rest[..] else {
        panic!("{rest:?}")
    };
    assert_eq!(e.kind(), ErrorKind::QuorumNotReached);
    assert_eq!(e.attempt_reports().len(), 1);
}

#[test]
fn too_little_validity_fails_even_with_a_quorum() {
    let mut m = machine(1, opts().min_validity(Duration::from_secs(9)));
    let (sends, _) = drain(&mut m, 1_000);
    m.handle_answer(sends[0].0, 0, Ok(NodeKind::Ok), 1_000 + 2_000_000);
    let (_, rest) = drain(&mut m, 2_001_000);
    assert!(matches!(rest[..], [Output::Clean { .. }]), "{rest:?}");
    m.handle_cleaned(2_001_000);
    let (_, rest) = drain(&mut m, 2_001_000);
    let [Output::Done(Err(e))] = &rest[..] else {
        panic!("{rest:?}")
    };
    assert_eq!(e.kind(), ErrorKind::ValidityTooShort);
}

#[test]
fn fenced_attempts_raise_lagging_counters_before_granting() {
    let mut m = machine(3, opts().fenced(true));
    let (sends, _) = drain(&mut m, 1_000);
    assert!(matches!(sends[0].2, Request::FencedAcquire { .. }));
    let r = sends[0].0;
    m.handle_counters(r, 0, vec![7], 1_100);
    m.handle_counters(r, 1, vec![5], 1_100);
    let (raises, rest) = drain(&mut m, 1_100);
    assert!(rest.is_empty());
    let [(r2, 1, Request::Raise { tokens, .. })] = &raises[..] else {
        panic!("{raises:?}")
    };
    assert_eq!(&tokens[..], &[7]);
    assert!(!m.handle_counters(r, 2, vec![9], 1_150), "phase 1 is over");
    m.handle_answer(*r2, 1, Ok(NodeKind::Ok), 1_200);
    let (_, rest) = drain(&mut m, 1_200);
    let [Output::Done(Ok(g))] = &rest[..] else {
        panic!("{rest:?}")
    };
    assert_eq!(g.tokens, Some(vec![7]));
}

#[test]
fn a_failed_raise_fails_the_attempt_and_says_why() {
    let mut m = machine(3, opts().fenced(true));
    let (sends, _) = drain(&mut m, 1_000);
    m.handle_counters(sends[0].0, 0, vec![7], 1_100);
    m.handle_counters(sends[0].0, 1, vec![5], 1_100);
    let (raises, _) = drain(&mut m, 1_100);
    m.handle_answer(raises[0].0, 1, Ok(NodeKind::NotHeld), 1_200);
    let (_, rest) = drain(&mut m, 1_200);
    let [Output::Clean { nodes, .. }] = &rest[..] else {
        panic!("{rest:?}")
    };
    assert_eq!(nodes, &vec![0, 1, 2], "voters and the pending node 2");
    m.handle_cleaned(1_300);
    let (_, rest) = drain(&mut m, 1_300);
    let [Output::Done(Err(e))] = &rest[..] else {
        panic!("{rest:?}")
    };
    assert_eq!(e.kind(), ErrorKind::QuorumNotReached);
    assert!(
        e.report().nodes()[1]
            .detail
            .as_deref()
            .unwrap()
            .starts_with("fencing phase 2")
    );
}

#[test]
fn releases_and_vacancies_shorten_the_wait() {
    let o = opts()
        .retry_count(5)
        .retry_delay(Duration::from_secs(1))
        .retry_jitter(Duration::ZERO);
    let mut m = machine(1, o);
    let (sends, _) = drain(&mut m, 1_000);
    m.handle_answer(sends[0].0, 0, Ok(NodeKind::HeldByOther), 1_100);
    let (_, rest) = drain(&mut m, 1_100);
    assert!(matches!(rest[..], [Output::Listen]), "{rest:?}");
    assert_eq!(m.poll_timeout(), Some(1_001_100));
    assert!(m.wants_release_notice());
    assert!(m.handle_released(2_000));
    assert!(
        !m.wants_release_notice() && !m.handle_released(2_100),
        "one wake-up per wait"
    );
    assert_eq!(m.poll_timeout(), Some(2_000), "a wake-up tries at once");
    m.handle_timeout(2_000);
    let (sends, _) = drain(&mut m, 2_000);
    m.handle_answer(sends[0].0, 0, Ok(NodeKind::HeldByOther), 2_001);
    let (_, rest) = drain(&mut m, 2_001);
    assert!(
        rest.is_empty(),
        "Listen only before the first wait: {rest:?}"
    );
    let t = 3_000;
    m.handle_vacant(t);
    assert_eq!(m.poll_timeout(), Some(t));
}

#[test]
fn a_waiter_that_split_the_vote_spreads_its_next_attempt() {
    let o = opts()
        .retry_count(50)
        .retry_delay(Duration::from_secs(1))
        .retry_jitter(Duration::ZERO);
    let mut m = machine(3, o);
    let mut pauses = std::collections::BTreeSet::new();
    let mut t = 1_000;
    for _ in 0..8 {
        let (sends, _) = drain(&mut m, t);
        let round = sends[0].0;
        // One vote of three: a split vote, whose cleanup runs before the wait.
        m.handle_answer(round, 0, Ok(NodeKind::Ok), t + 1);
        m.handle_answer(round, 1, Ok(NodeKind::HeldByOther), t + 2);
        m.handle_answer(round, 2, Ok(NodeKind::HeldByOther), t + 3);
        drain(&mut m, t + 3);
        m.handle_cleaned(t + 4);
        assert!(m.handle_released(t + 5));
        let until = m.poll_timeout().unwrap();
        assert!(
            (t + 5..t + 5 + 20_000).contains(&until),
            "within SPLIT_SPREAD: {until}"
        );
        pauses.insert(until - t - 5);
        m.handle_timeout(until);
        t = until + 100_000;
    }
    assert!(pauses.len() > 4, "spread, not a fixed pause: {pauses:?}");
}

#[test]
fn cancelling_cleans_the_nodes_that_may_hold_a_key() {
    let mut m = machine(3, opts());
    let (sends, _) = drain(&mut m, 1_000);
    m.handle_answer(sends[0].0, 0, Ok(NodeKind::HeldByOther), 1_100);
    let c = m.cancel();
    let (nodes, _) = c.clean.unwrap();
    assert_eq!(nodes, vec![1, 2], "pending nodes may have written");
    assert_eq!(c.error.kind(), ErrorKind::Cancelled);
    assert!(
        drain(&mut m, 1_200).1.is_empty(),
        "a cancelled call does nothing more"
    );
}

#[test]
fn a_broken_random_source_is_an_error_not_a_weak_value() {
    let mut m = machine(3, opts());
    let out = m.poll_output(1_000, &mut Broken);
    let Some(Output::Done(Err(e))) = out else {
        panic!("{out:?}")
    };
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("no entropy"));
}

#[test]
fn bad_options_are_refused_up_front() {
    let zero = LockOptions::default().ttl(Duration::ZERO);
    assert!(Acquisition::new(members(3), zero, &timing(), 0).is_err());
    assert!(Acquisition::new(Vec::new().into(), opts(), &timing(), 0).is_err());
}

#[test]
fn answers_that_arrive_together_are_all_reported() {
    let mut m = machine(3, opts());
    let (sends, _) = drain(&mut m, 1_000);
    let refused = || Err((NodeKind::Quarantined, "restarted".to_string()));
    let batch = (0..3).map(|i| (i, refused(), None)).collect();
    assert!(m.handle_batch(sends[0].0, batch, 1_000));
    let (_, rest) = drain(&mut m, 1_000);
    let [Output::Done(Err(e))] = &rest[..] else {
        panic!("{rest:?}")
    };
    assert_eq!(e.report().count(NodeKind::Quarantined), 3, "{e}");
}

/// Each hook of the simulator's mutants changes the decision it names, and only that one.
#[cfg(feature = "mutants")]
mod mutants {
    use super::*;
    use crate::mutant::Mutant;

    fn planted(n: usize, opts: LockOptions, mutant: Mutant) -> Acquisition {
        machine(n, opts).with_mutant(mutant)
    }

    fn granted(rest: &[Output]) -> &Grant {
        let [Output::Done(Ok(g))] = rest else {
            panic!("{rest:?}")
        };
        g
    }

    #[test]
    fn quorum_half_decides_and_grants_on_two_of_five() {
        let mut m = planted(5, opts(), Mutant::QuorumHalf);
        let (sends, _) = drain(&mut m, 1_000);
        m.handle_answer(sends[0].0, 0, Ok(NodeKind::Ok), 1_100);
        assert!(drain(&mut m, 1_100).1.is_empty());
        m.handle_answer(sends[0].0, 1, Ok(NodeKind::Ok), 1_200);
        let (_, rest) = drain(&mut m, 1_200);
        assert_eq!(granted(&rest).report.count(NodeKind::Ok), 2);
    }

    #[test]
    fn validity_terms_and_cleanup() {
        let ttl = Duration::from_secs(10);
        let drift = timing().drift(ttl);
        for (mutant, valid_until) in [
            (Mutant::None, 1_000 + micros(ttl - drift)),
            (Mutant::NoDrift, 1_000 + micros(ttl)),
            (Mutant::NoElapsed, 1_500 + micros(ttl - drift)),
        ] {
            let mut m = planted(1, opts(), mutant);
            let (sends, _) = drain(&mut m, 1_000);
            m.handle_answer(sends[0].0, 0, Ok(NodeKind::Ok), 1_500);
            let (_, rest) = drain(&mut m, 1_500);
            assert_eq!(granted(&rest).valid_until_us, valid_until, "{mutant:?}");
        }
        let mut m = planted(1, opts(), Mutant::NoCleanup);
        let (sends, _) = drain(&mut m, 1_000);
        m.handle_answer(sends[0].0, 0, Ok(NodeKind::Timeout), 1_500);
        let (_, rest) = drain(&mut m, 1_500);
        assert!(
            matches!(rest[..], [Output::Done(Err(_))]),
            "no Clean: {rest:?}"
        );
    }

    #[test]
    fn no_phase2_takes_the_tokens_of_phase_one() {
        let mut m = planted(3, opts().fenced(true), Mutant::NoPhase2);
        let (sends, _) = drain(&mut m, 1_000);
        m.handle_counters(sends[0].0, 0, vec![7], 1_100);
        m.handle_counters(sends[0].0, 1, vec![5], 1_100);
        let (raises, rest) = drain(&mut m, 1_100);
        assert!(raises.is_empty());
        assert_eq!(granted(&rest).tokens, Some(vec![7]));
    }
}

#[test]
fn cancelling_before_polling_undoes_a_queued_grant_or_cleanup() {
    let mut m = machine(3, opts());
    let (sends, _) = drain(&mut m, 1_000);
    for (round, node, _) in &sends[..2] {
        m.handle_answer(*round, *node, Ok(NodeKind::Ok), 1_100);
    }
    // The grant is queued; the driver gives up before polling it.
    let c = m.cancel();
    let (nodes, _) = c.clean.expect("the unseen grant's keys are cleaned");
    assert_eq!(nodes, vec![0, 1, 2]);

    let mut m = machine(1, opts());
    let (sends, _) = drain(&mut m, 1_000);
    m.handle_answer(
        sends[0].0,
        0,
        Err((NodeKind::ConnectionLost, "reset".into())),
        1_200,
    );
    let c = m.cancel();
    assert_eq!(
        c.clean.map(|(n, _)| n),
        Some(vec![0]),
        "the queued cleanup is returned"
    );
}

#[test]
fn grants_on_a_quorum_win_between_attempts_with_the_validity_from_the_registration() {
    let o = opts()
        .retry_count(5)
        .retry_delay(Duration::from_secs(1))
        .retry_jitter(Duration::ZERO);
    let mut m = machine(5, o);
    let (sends, _) = drain(&mut m, 1_000);
    let round = sends[0].0;
    let value: Arc<str> = "registered".into();
    // An attempt in flight decides first.
    assert_eq!(
        m.handle_granted(value.clone(), &[0, 1, 2], 900, 1_050),
        Granted::NotNow
    );
    for node in 0..3 {
        m.handle_answer(round, node, Ok(NodeKind::HeldByOther), 1_100);
    }
    drain(&mut m, 1_100);
    // Fewer than a quorum: not yet; a node outside the members counts for nothing.
    assert_eq!(
        m.handle_granted(value.clone(), &[0, 1, 9], 1_200, 2_000),
        Granted::NotNow
    );
    // Node 3 wrote late: a suspect, cleaned before the grant is handed out.
    m.handle_answer(round, 3, Ok(NodeKind::Ok), 2_100);
    assert_eq!(
        m.handle_granted(value.clone(), &[0, 1, 4], 1_200, 2_500),
        Granted::Won
    );
    let (sends, rest) = drain(&mut m, 2_500);
    assert!(sends.is_empty());
    let [Output::Clean { nodes, .. }, Output::Done(Ok(g))] = &rest[..] else {
        panic!("{rest:?}")
    };
    let mut nodes = nodes.clone();
    nodes.sort_unstable();
    assert_eq!(nodes, [3, 4], "node 3 wrote, node 4 never answered");
    assert_eq!(&*g.value, "registered");
    assert_eq!((g.t1_us, g.t2_us), (1_200, 2_500));
    // ttl 10 s, drift 10 s * 0.01 + 2 ms = 102 ms, counted from the registration.
    assert_eq!(g.valid_until_us, 1_200 + 10_000_000 - 102_000);
    assert_eq!(g.report.count(NodeKind::Ok), 3);
    assert_eq!(g.report.count(NodeKind::Pending), 2);
    assert_eq!(g.tokens, None);
    assert_eq!(
        m.handle_granted(value, &[0, 1, 2], 1_200, 2_600),
        Granted::NotNow,
        "finished"
    );
}

#[test]
fn grants_after_a_long_wait_or_for_a_fenced_call_win_nothing() {
    let o = opts()
        .retry_count(5)
        .retry_delay(Duration::from_secs(1))
        .retry_jitter(Duration::ZERO);
    let refused = |m: &mut Acquisition| {
        let (sends, _) = drain(m, 1_000);
        for node in 0..3 {
            m.handle_answer(sends[0].0, node, Ok(NodeKind::HeldByOther), 1_100);
        }
        drain(m, 1_100);
    };
    let mut m = machine(3, o.clone());
    refused(&mut m);
    let v: Arc<str> = "r".into();
    // Less than the minimum validity (ttl / 10) left since the registration.
    let late = 1_000 + 9_000_000;
    assert_eq!(
        m.handle_granted(v.clone(), &[0, 1], 1_000, late),
        Granted::TooLate
    );
    assert_eq!(
        m.handle_granted(v.clone(), &[0, 1], 1_000, late - 200_000),
        Granted::Won
    );
    let mut fenced = machine(3, o.fenced(true));
    refused(&mut fenced);
    assert_eq!(
        fenced.handle_granted(v, &[0, 1, 2], 1_000, 2_000),
        Granted::NotNow
    );
}
