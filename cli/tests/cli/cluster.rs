//! A Redis Cluster as one member of the CLI's nodes: `--nodes` (comma-split) keeps the
//! cluster URL's seeds together.

use quorumlock_harness::{Cluster, Persist};

use crate::common::*;

#[test]
fn run_and_status_with_a_cluster_member() {
    let singles = cluster();
    let rc = Cluster::builder()
        .nodes(3)
        .persist(Persist::Always)
        .redis_cluster(0)
        .start()
        .expect("start a Redis Cluster");
    let mut nodes = singles.urls()[..2].to_vec();
    nodes.push(rc.cluster_url().expect("cluster url"));
    let nodes = nodes.join(",");
    let out = output(
        bin()
            .args(["--nodes", &nodes, "run", "cluster-job", "--"])
            .args(["sh", "-c", "echo $QUORUMLOCK_VALUE"]),
    );
    assert_eq!(code(&out), 0, "{out:?}");
    let out = output(bin().args(["--nodes", &nodes, "--json", "ping"]));
    assert_eq!(code(&out), 0, "{out:?}");
    let v = stdout_json(&out);
    let text = v.to_string();
    assert!(text.contains("cluster(127.0.0.1:"), "{text}");
}
