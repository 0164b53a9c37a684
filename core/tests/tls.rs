//! TLS and mutual TLS end to end (docs/SECURITY.md): TLS-only redis-server nodes with
//! certificates the harness makes (TESTING.md §2.7), the CA and client certificate given as
//! URL parameters, and the typed errors for a wrong CA, an expired certificate, a host-name
//! mismatch, a missing client certificate and the refused `#insecure`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use quorumlock::{Client, Error, ErrorKind, NodeKind};
use quorumlock_harness::{ServerCert, Tls, tls::encode};

/// A client over every node that waits for all of them (TLS handshakes of a debug build on
/// a loaded machine can be slow).
async fn tls_client(c: &Cluster) -> Client {
    Client::builder()
        .nodes(c.urls())
        .require_quorum(true)
        .connect_timeout(Duration::from_secs(10))
        .lock_options(opts(10_000))
        .connect()
        .await
        .expect("connect over TLS")
}

fn tls_cluster(n: usize, mode: Tls, certs: &[(usize, ServerCert)]) -> Cluster {
    let mut b = Cluster::builder().nodes(n).tls(mode);
    for &(i, cert) in certs {
        b = b.tls_node_cert(i, cert);
    }
    b.start().expect("start TLS nodes")
}

/// Connects to one node URL and requires it: a TLS failure is the connect error.
async fn connect_one(url: &str) -> quorumlock::Result<Client> {
    Client::builder()
        .node(url)
        .require_quorum(true)
        .connect_timeout(Duration::from_secs(10))
        .lock_options(opts(10_000))
        .connect()
        .await
}

/// Checks a failed connect: `QL_CONNECTION`, the node named with its kind and detail.
fn check_refused(e: &Error, port: u16, kind: NodeKind, detail: &str) {
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    let report = e.report();
    let node = &report.nodes()[0];
    assert_eq!(node.kind, kind, "{report}");
    assert!(
        node.address.contains(&format!("127.0.0.1:{port}")),
        "{}",
        node.address
    );
    assert!(
        node.detail
            .as_deref()
            .unwrap_or("")
            .to_lowercase()
            .contains(detail),
        "{}: {:?}",
        node.address,
        node.detail
    );
    println!(
        "{}: {e}\n  node {}: {} {:?}",
        e.kind(),
        node.address,
        node.kind,
        node.detail
    );
}

#[tokio::test]
async fn locks_over_tls_with_a_ca_file() {
    let c = tls_cluster(3, Tls::Server, &[]);
    assert!(c.url(0).starts_with("rediss://127.0.0.1:"), "{}", c.url(0));
    let client = tls_client(&c).await;
    let lock = client.acquire(["tls:a"]).await.expect("acquire over TLS");
    assert_eq!(
        wait_holders(&c, &client.key("tls:a"), lock.value(), 3).await,
        3
    );
    let report = lock.release().await.unwrap();
    assert!(report.was_held_by_quorum(), "{report}");
    assert!(client.addresses()[0].ends_with("(tls)"));
    // A plain client on a TLS port gets no lock.
    let (_, certs) = c.tls().unwrap();
    let plain = format!("redis://{}", c.addr(0));
    let e = connect_one(&plain)
        .await
        .expect_err("plain TCP on a TLS port");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    let _ = certs;
}

#[tokio::test]
async fn locks_over_mutual_tls_and_refuses_a_client_without_certificate() {
    let c = tls_cluster(3, Tls::Mutual, &[]);
    let client = tls_client(&c).await;
    let lock = client.acquire(["mtls:a"]).await.expect("acquire over mTLS");
    assert_eq!(
        wait_holders(&c, &client.key("mtls:a"), lock.value(), 3).await,
        3
    );
    lock.release().await.unwrap();
    // The CA alone is not enough: the node wants a client certificate.
    let (_, certs) = c.tls().unwrap();
    let url = format!("{}/?tls_ca={}", c.bare_url(0), encode(&certs.ca()));
    let e = connect_one(&url).await.expect_err("no client certificate");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    let node = &e.report().nodes()[0];
    assert!(
        matches!(node.kind, NodeKind::Tls | NodeKind::ConnectionLost),
        "{node:?}"
    );
    println!(
        "no client certificate: {e}\n  node {}: {} {:?}",
        node.address, node.kind, node.detail
    );
    // A client certificate signed by another CA is refused as well.
    let url = format!(
        "{}/?tls_ca={}&tls_cert={}&tls_key={}",
        c.bare_url(0),
        encode(&certs.ca()),
        encode(&certs.server_cert(ServerCert::WrongHost)),
        encode(&certs.server_key())
    );
    // (A server certificate as client certificate: right CA, wrong usage.)
    let e = connect_one(&url)
        .await
        .expect_err("server certificate as client certificate");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
}

#[tokio::test]
async fn bad_certificates_give_typed_errors_naming_the_node() {
    let c = tls_cluster(
        3,
        Tls::Server,
        &[(1, ServerCert::Expired), (2, ServerCert::WrongHost)],
    );
    let (_, certs) = c.tls().unwrap();
    // A CA that did not sign the node's certificate.
    let wrong_ca = format!("{}/?tls_ca={}", c.bare_url(0), encode(&certs.other_ca()));
    let e = connect_one(&wrong_ca).await.expect_err("wrong CA");
    check_refused(&e, c.addr(0).port(), NodeKind::Tls, "unknownissuer");
    // The right CA, but the node's certificate has expired.
    let e = connect_one(&c.url(1))
        .await
        .expect_err("expired certificate");
    check_refused(&e, c.addr(1).port(), NodeKind::Tls, "expired");
    // The right CA, but the certificate is for another host name.
    let e = connect_one(&c.url(2))
        .await
        .expect_err("host-name mismatch");
    check_refused(&e, c.addr(2).port(), NodeKind::Tls, "not valid for name");
    // Inside a lock operation the same causes appear in the node report.
    let client = Client::builder()
        .nodes(c.urls())
        .connect_timeout(Duration::from_secs(10))
        .lock_options(opts(10_000))
        .connect()
        .await
        .unwrap();
    let e = client.acquire(["tls:bad"]).await.expect_err("1 of 3 nodes");
    assert_eq!(e.kind(), ErrorKind::QuorumNotReached, "{e}");
    let r = e.report();
    // Node 0 voted, or was still pending when the other two made the quorum impossible.
    assert!(
        matches!(r.nodes()[0].kind, NodeKind::Ok | NodeKind::Pending),
        "{r}"
    );
    assert_eq!(r.nodes()[1].kind, NodeKind::Tls, "{r}");
    assert_eq!(r.nodes()[2].kind, NodeKind::Tls, "{r}");
}

#[tokio::test]
async fn insecure_tls_is_refused_before_anything_is_sent() {
    for url in [
        "rediss://user:s3cret@127.0.0.1:1/#insecure",
        "rediss+cluster://user:s3cret@127.0.0.1:1,127.0.0.1:2/#insecure",
    ] {
        let e = connect_one(url).await.expect_err("#insecure refused");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains("#insecure"), "{e}");
        assert!(!format!("{e} {e:?}").contains("s3cret"), "{e:?}");
    }
    let insecure = redis::Client::open("rediss://127.0.0.1:1/#insecure").unwrap();
    let e = Client::builder()
        .redis_client(insecure)
        .connect()
        .await
        .expect_err("an insecure redis::Client is refused");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    // TLS files on a plain URL, a missing file, a half client pair: typed, before any I/O.
    for (url, want) in [
        (
            "redis://127.0.0.1:1/?tls_ca=/etc/hostname",
            "need a TLS URL",
        ),
        (
            "rediss://127.0.0.1:1/?tls_ca=/nonexistent.pem",
            "cannot read the tls_ca file",
        ),
        ("rediss://127.0.0.1:1/?tls_key=/etc/hostname", "go together"),
        (
            "rediss://127.0.0.1:1/?tls_ca=/etc/hostname",
            "no PEM certificate",
        ),
    ] {
        let e = connect_one(url).await.expect_err(url);
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains(want), "{url}: {e}");
        assert!(e.to_string().contains("node #0: "), "{e}");
    }
}
