//! Test certificates for TLS nodes (`docs/TESTING.md` §2.7), made with the `openssl` command
//! line tool into `<run>/tls/`: a CA, a server certificate for `127.0.0.1` and `localhost`, a
//! client certificate, and three bad ones for the negative tests: a second CA that signed
//! nothing the nodes present, an expired server certificate and one for another host name.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How a cluster's nodes speak TLS ([`crate::Builder::tls`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// TLS only (`--port 0 --tls-port P`); clients check the server's certificate against
    /// the test CA and need no certificate of their own (`--tls-auth-clients no`).
    Server,
    /// Like `Server`, and every client must present a certificate signed by the test CA
    /// (`--tls-auth-clients yes`): mutual TLS.
    Mutual,
}

impl Tls {
    /// `tls` or `mtls`, as in the JSON of `ql-harness`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tls::Server => "tls",
            Tls::Mutual => "mtls",
        }
    }
}

/// Which certificate a TLS node presents ([`crate::Builder::tls_node_cert`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerCert {
    /// Signed by the test CA, for `127.0.0.1` and `localhost`, valid for two days.
    #[default]
    Good,
    /// Signed by the test CA for the right names, but its validity ended before it began.
    Expired,
    /// Signed by the test CA, valid, but only for the name `wrong-host.invalid`.
    WrongHost,
}

/// The certificate files of one run, all PEM.
#[derive(Debug, Clone)]
pub struct Certs {
    dir: PathBuf,
}

impl Certs {
    /// The folder holding the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The CA that signed every certificate below.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
    /// Another CA, which signed nothing the nodes present.
    pub fn other_ca(&self) -> PathBuf {
        self.dir.join("other-ca.pem")
    }
    /// The client certificate (for mutual TLS).
    pub fn client_cert(&self) -> PathBuf {
        self.dir.join("client.pem")
    }
    /// The client certificate's key.
    pub fn client_key(&self) -> PathBuf {
        self.dir.join("client.key")
    }
    /// A server certificate.
    pub fn server_cert(&self, which: ServerCert) -> PathBuf {
        self.dir.join(match which {
            ServerCert::Good => "server.pem",
            ServerCert::Expired => "expired.pem",
            ServerCert::WrongHost => "wrong-host.pem",
        })
    }
    /// The key of every server certificate.
    pub fn server_key(&self) -> PathBuf {
        self.dir.join("server.key")
    }

    /// The `redis-server` arguments for a TLS node presenting `cert`.
    pub(crate) fn server_args(&self, mode: Tls, cert: ServerCert) -> Vec<String> {
        let path = |p: PathBuf| p.display().to_string();
        vec![
            "--tls-cert-file".into(),
            path(self.server_cert(cert)),
            "--tls-key-file".into(),
            path(self.server_key()),
            "--tls-ca-cert-file".into(),
            path(self.ca()),
            "--tls-auth-clients".into(),
            if mode == Tls::Mutual { "yes" } else { "no" }.into(),
        ]
    }

    /// `?tls_ca=...`, plus the client certificate and key for [`Tls::Mutual`]: the query
    /// that makes a `rediss://` URL work against these nodes.
    pub fn query(&self, mode: Tls) -> String {
        let mut q = format!("?tls_ca={}", encode(&self.ca()));
        if mode == Tls::Mutual {
            q.push_str(&format!(
                "&tls_cert={}&tls_key={}",
                encode(&self.client_cert()),
                encode(&self.client_key())
            ));
        }
        q
    }
}

/// Percent-encodes a path for a URL query (everything but unreserved characters and `/`).
pub fn encode(path: &Path) -> String {
    let mut out = String::new();
    for b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(b) {
            out.push(char::from(*b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Makes every certificate of [`Certs`] in `dir` (created if missing) with `openssl`.
pub fn generate(dir: &Path) -> io::Result<Certs> {
    std::fs::create_dir_all(dir)?;
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ca_ext = [
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ];
    for (name, cn) in [("ca", "quorumlock test CA"), ("other-ca", "another CA")] {
        openssl(
            dir,
            &[&["req", "-x509"], &ec[..], &ca_ext[..]].concat(),
            &[
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.pem"),
                "-days",
                "2",
                "-subj",
                &format!("/CN={cn}"),
            ],
        )?;
    }
    for (name, cn) in [
        ("server", "localhost"),
        ("client", "quorumlock test client"),
    ] {
        openssl(
            dir,
            &[&["req"][..], &ec[..]].concat(),
            &[
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
                "-subj",
                &format!("/CN={cn}"),
            ],
        )?;
    }
    let good = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n";
    let wrong = "subjectAltName=DNS:wrong-host.invalid\nextendedKeyUsage=serverAuth\n";
    let client = "extendedKeyUsage=clientAuth\n";
    for (out, csr, ext, days) in [
        ("server.pem", "server.csr", good, "2"),
        // -1 day: notAfter lies before notBefore (now), so the certificate is expired.
        ("expired.pem", "server.csr", good, "-1"),
        ("wrong-host.pem", "server.csr", wrong, "2"),
        ("client.pem", "client.csr", client, "2"),
    ] {
        let ext_file = format!("{out}.ext");
        std::fs::write(dir.join(&ext_file), ext)?;
        openssl(
            dir,
            &["x509", "-req"],
            &[
                "-in",
                csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-set_serial",
                &format!("{}", crate::run::random_u64() >> 2),
                "-out",
                out,
                "-days",
                days,
                "-extfile",
                &ext_file,
            ],
        )?;
    }
    Ok(Certs {
        dir: dir.to_path_buf(),
    })
}

fn openssl(dir: &Path, head: &[&str], tail: &[&str]) -> io::Result<()> {
    let out = Command::new("openssl")
        .args(head)
        .args(tail)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("openssl: {e} (install it with apt-get install -y openssl)"),
            )
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "openssl {} failed: {}",
            head.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}
