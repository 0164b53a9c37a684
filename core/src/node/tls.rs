//! TLS settings given in a node URL (docs/SECURITY.md): `rediss://host:port/?tls_ca=PATH`
//! names the CA that signs the server's certificate (instead of the system's trust store),
//! `tls_cert=PATH&tls_key=PATH` the client certificate and key for servers that require them
//! (`tls-auth-clients yes`). Values are percent-decoded. A URL fragment is refused, which is
//! how redis-rs's `#insecure` (no certificate checks) is kept out: there is no insecure mode.
//!
//! Error texts name parameters and file paths, never a URL (it may hold a password) and never
//! file contents (a key).

use redis::{ClientTlsConfig, TlsCertificates};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The query parameters this module reads; any other `tls_*` parameter is refused as a typo.
pub(crate) const PARAMS: [&str; 3] = ["tls_ca", "tls_cert", "tls_key"];

/// A node URL with the TLS parameters taken out, and the certificates they named.
pub(crate) struct Split {
    /// The URL for redis-rs: the same text without `tls_*` parameters.
    pub(crate) url: String,
    /// `Some` when the URL named a CA or a client certificate.
    pub(crate) certs: Option<TlsCertificates>,
}

/// Takes the `tls_*` parameters out of `url`, reads the files they name and checks them.
pub(crate) fn split(url: &str) -> Result<Split, String> {
    if url.contains('#') {
        return Err(
            "a node URL takes no #fragment (#insecure, which turns certificate checks off, is refused: quorumlock has no insecure TLS mode); give the server's CA with ?tls_ca=/path/ca.pem, and percent-encode a '#' in a password as %23"
                .to_owned(),
        );
    }
    let Some(q) = url.find('?') else {
        return Ok(Split {
            url: url.to_owned(),
            certs: None,
        });
    };
    let (base, query) = (&url[..q], &url[q + 1..]);
    let mut kept = Vec::new();
    let (mut ca, mut cert, mut key) = (None, None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let name = decode(k)?;
        let slot = match name.as_str() {
            "tls_ca" => &mut ca,
            "tls_cert" => &mut cert,
            "tls_key" => &mut key,
            other if other.starts_with("tls_") => {
                return Err(format!(
                    "unknown URL parameter {other:?}: the TLS parameters are {}",
                    PARAMS.join(", ")
                ));
            }
            _ => {
                kept.push(pair);
                continue;
            }
        };
        let path = decode(v)?;
        if path.is_empty() {
            return Err(format!("{name} needs a file path (got an empty value)"));
        }
        if slot.replace(path).is_some() {
            return Err(format!("{name} is given twice"));
        }
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    if ca.is_none() && cert.is_none() && key.is_none() {
        return Ok(Split { url, certs: None });
    }
    let lower = base.to_ascii_lowercase();
    if !["rediss://", "valkeys://", "rediss+cluster://"]
        .iter()
        .any(|s| lower.starts_with(s))
    {
        return Err(
            "tls_ca, tls_cert and tls_key need a TLS URL (rediss:// or rediss+cluster://)"
                .to_owned(),
        );
    }
    let client_tls = match (cert, key) {
        (Some(cert), Some(key)) => {
            let client_cert = read("tls_cert", &cert)?;
            if CertificateDer::pem_slice_iter(&client_cert)
                .next()
                .is_none()
                || CertificateDer::pem_slice_iter(&client_cert).any(|c| c.is_err())
            {
                return Err(format!(
                    "tls_cert file {cert} holds no PEM certificate (BEGIN CERTIFICATE)"
                ));
            }
            let client_key = read("tls_key", &key)?;
            if PrivateKeyDer::from_pem_slice(&client_key).is_err() {
                // The parser's own error may quote the file; the key must never be shown.
                return Err(format!("tls_key file {key} holds no PEM private key"));
            }
            Some(ClientTlsConfig {
                client_cert,
                client_key,
            })
        }
        (None, None) => None,
        _ => return Err("tls_cert and tls_key go together: give both or neither".to_owned()),
    };
    let root_cert = match ca {
        Some(ca) => {
            let pem = read("tls_ca", &ca)?;
            let certs: Vec<_> = CertificateDer::pem_slice_iter(&pem).collect();
            if certs.is_empty() || certs.iter().any(Result::is_err) {
                return Err(format!(
                    "tls_ca file {ca} holds no PEM certificate (BEGIN CERTIFICATE)"
                ));
            }
            Some(pem)
        }
        None => None,
    };
    Ok(Split {
        url,
        certs: Some(TlsCertificates {
            client_tls,
            root_cert,
        }),
    })
}

/// The largest TLS file read (a PEM bundle of every public CA is about 200 KiB).
const MAX_TLS_FILE: u64 = 1 << 20;

/// Reads a TLS file: a regular file (a device, a pipe or `/proc/kcore` is refused before it is
/// opened, so it can neither block nor exhaust memory) of at most [`MAX_TLS_FILE`] bytes.
fn read(param: &str, path: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| format!("cannot read the {param} file {path}: {e}");
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if !meta.is_file() {
        return Err(format!(
            "the {param} file {path} is not a regular file (a PEM file is expected)"
        ));
    }
    let too_big = || format!("the {param} file {path} is larger than {MAX_TLS_FILE} bytes");
    if meta.len() > MAX_TLS_FILE {
        return Err(too_big());
    }
    let mut out = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_TLS_FILE + 1).read_to_end(&mut out))
        .map_err(cannot)?;
    if out.len() as u64 > MAX_TLS_FILE {
        return Err(too_big());
    }
    Ok(out)
}

/// Percent-decodes one query component (`+` stays a plus: these are paths).
fn decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("a bad %-escape in the URL's query")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the URL's query is not UTF-8 after %-decoding".to_owned())
}

/// Refuses a `redis::Client` configured with redis-rs's `#insecure` (no certificate checks).
pub(crate) fn refuse_insecure(client: &redis::Client) -> Result<(), String> {
    match client.get_connection_info().addr() {
        redis::ConnectionAddr::TcpTls { insecure: true, .. } => Err(
            "this redis::Client skips certificate checks (#insecure); quorumlock has no insecure TLS mode"
                .to_owned(),
        ),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_without_tls_parameters_pass_unchanged() {
        let s = split("redis://u:p@h:1/2?protocol=resp3").unwrap();
        assert_eq!(s.url, "redis://u:p@h:1/2?protocol=resp3");
        assert!(s.certs.is_none());
    }

    #[test]
    fn bad_tls_parameters_are_refused_without_the_url() {
        for (url, want) in [
            ("rediss://u:s3cret@h:1/#insecure", "#insecure"),
            (
                "rediss://u:s3cret@h:1/?tls_cafile=/x",
                "unknown URL parameter",
            ),
            ("redis://u:s3cret@h:1/?tls_ca=/x", "need a TLS URL"),
            ("rediss://u:s3cret@h:1/?tls_cert=/x", "go together"),
            ("rediss://u:s3cret@h:1/?tls_ca=", "needs a file path"),
            ("rediss://u:s3cret@h:1/?tls_ca=/a&tls_ca=/b", "twice"),
            ("rediss://u:s3cret@h:1/?tls_ca=%zz", "%-escape"),
            (
                "rediss://u:s3cret@h:1/?tls_ca=/nonexistent/ca.pem",
                "cannot read",
            ),
            (
                "rediss://u:s3cret@h:1/?tls_ca=/dev/zero",
                "not a regular file",
            ),
            ("rediss://u:s3cret@h:1/?tls_ca=/", "not a regular file"),
        ] {
            let e = split(url).err().unwrap_or_default();
            assert!(e.contains(want), "{url}: {e}");
            assert!(!e.contains("s3cret"), "{e}");
        }
    }

    #[test]
    fn tls_files_over_a_mebibyte_are_refused() {
        let dir = std::env::temp_dir().join(format!("ql-tls-big-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("ca.pem");
        std::fs::write(&big, vec![b'A'; (MAX_TLS_FILE + 1) as usize]).unwrap();
        let e = split(&format!("rediss://h:1/?tls_ca={}", big.display()))
            .err()
            .unwrap_or_default();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.contains("larger than 1048576 bytes"), "{e}");
    }

    #[test]
    fn key_files_are_never_quoted() {
        let dir = std::env::temp_dir().join(format!("ql-tls-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = dir.join("key.pem");
        std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nS3CRETKEYBYTES\n").unwrap();
        let cert = dir.join("cert.pem");
        std::fs::write(&cert, "not a certificate S3CRETCERT\n").unwrap();
        let url = format!(
            "rediss://h:1/?tls_cert={}&tls_key={}",
            cert.display(),
            key.display()
        );
        let e = split(&url).err().unwrap_or_default();
        assert!(e.contains("no PEM certificate"), "{e}");
        assert!(!e.contains("S3CRET"), "{e}");
        std::fs::write(&cert, "").unwrap();
        let e = split(&url).err().unwrap_or_default();
        assert!(e.contains("no PEM certificate"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn decoding_keeps_paths() {
        assert_eq!(decode("/a%20b/c+d").unwrap(), "/a b/c+d");
    }
}
