//! Splitting one request of a cluster member by hash slot: a script may only touch keys of
//! one slot, so a multi-resource request becomes one request per slot, sent in parallel,
//! whose answers are joined into the member's one answer.

use redis::cluster_routing::Slot;

use super::NodeFailure;
use crate::report::NodeKind;

/// The resources of a request grouped by the hash slot of their lock key, as positions into
/// the request's resources, in first-seen order. `keys` holds `n` lock keys, followed (for
/// fenced requests, `stride` 2) by their `n` counter keys, which must share the slot.
pub(crate) fn groups(keys: &[Vec<u8>], stride: usize) -> Result<Vec<Vec<usize>>, NodeFailure> {
    let n = keys.len() / stride;
    let mut out: Vec<(Slot, Vec<usize>)> = Vec::new();
    for i in 0..n {
        let slot = Slot::for_key(&keys[i]);
        if stride == 2 && Slot::for_key(&keys[n + i]) != slot {
            return Err((
                NodeKind::ClusterUnsupported,
                "a fencing counter would live in another hash slot than its lock key; fenced locks on a cluster member need the braced key format".to_owned(),
            ));
        }
        match out.iter_mut().find(|(s, _)| *s == slot) {
            Some((_, g)) => g.push(i),
            None => out.push((slot, vec![i])),
        }
    }
    Ok(out.into_iter().map(|(_, g)| g).collect())
}

/// The locks of an extension batch grouped by hash slot, as positions into the batch in
/// first-seen order: `(true, group)` for locks whose keys all live in the group's one slot,
/// `(false, [i])` for a lock whose keys span several slots (sent on its own).
pub(crate) fn batch_groups<'a>(
    locks: impl Iterator<Item = &'a [Vec<u8>]>,
) -> Vec<(bool, Vec<usize>)> {
    let mut out: Vec<(Option<Slot>, Vec<usize>)> = Vec::new();
    for (i, keys) in locks.enumerate() {
        let slot = keys.first().map(Slot::for_key);
        let one = keys.iter().all(|k| Some(Slot::for_key(k)) == slot);
        match out.iter_mut().find(|(s, _)| one && *s == slot) {
            Some((_, g)) => g.push(i),
            None if one => out.push((slot, vec![i])),
            None => out.push((None, vec![i])),
        }
    }
    out.into_iter().map(|(s, g)| (s.is_some(), g)).collect()
}

/// The keys of one group, laid out like the whole request's keys.
pub(crate) fn subset(keys: &[Vec<u8>], stride: usize, group: &[usize]) -> Vec<Vec<u8>> {
    let n = keys.len() / stride;
    (0..stride)
        .flat_map(|part| group.iter().map(move |&i| keys[part * n + i].clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_group_by_slot_and_keep_their_layout() {
        let keys: Vec<Vec<u8>> = [
            "q:{a}",
            "q:{b}",
            "q:{a}x",
            "q:{a}:fence",
            "q:{b}:fence",
            "q:{a}x:fence",
        ]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
        let g = groups(&keys, 2).unwrap();
        assert_eq!(g, vec![vec![0, 2], vec![1]]);
        let sub = subset(&keys, 2, &g[0]);
        assert_eq!(
            sub,
            [&keys[0], &keys[2], &keys[3], &keys[5]].map(|k| k.clone())
        );
        assert_eq!(groups(&keys[..3], 1).unwrap().len(), 2);
    }

    #[test]
    fn a_batch_groups_by_slot_and_sends_a_lock_across_slots_alone() {
        let k = |s: &str| s.as_bytes().to_vec();
        let locks = [
            vec![k("q:{a}")],
            vec![k("q:{b}"), k("q:{c}")],
            vec![k("q:{a}"), k("x:{a}")],
            vec![k("q:{d}")],
            vec![k("q:{b}"), k("q:{c}")],
        ];
        let g = batch_groups(locks.iter().map(Vec::as_slice));
        assert_eq!(
            g,
            vec![
                (true, vec![0, 2]),
                (false, vec![1]),
                (true, vec![3]),
                (false, vec![4])
            ]
        );
    }

    #[test]
    fn counters_in_another_slot_are_refused() {
        let keys: Vec<Vec<u8>> = ["a", "a:fence"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        assert!(Slot::for_key(b"a") != Slot::for_key(b"a:fence"));
        assert_eq!(
            groups(&keys, 2).unwrap_err().0,
            NodeKind::ClusterUnsupported
        );
    }
}
