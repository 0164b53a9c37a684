//! Node URLs as `ClientBuilder::connect` checks them before connecting (`client.rs`
//! `parse_url`, `node/target.rs` `parse_cluster`, redis-rs's URL parser): any text is either
//! accepted or an `InvalidArgument`, and a password never shows in an address, a warning or
//! an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quorumlock::fuzzing;
use quorumlock::{Client, ErrorKind};
use quorumlock_fuzz::Input;

const SECRET: &str = "Zq9s3cretPW";

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let mode = input.u8();
    let text = String::from_utf8_lossy(input.rest()).into_owned();
    if spells_secret(&text) {
        // The fuzzer learns the secret from the comparisons below; in the host it is no leak.
        return;
    }
    let urls: Vec<String> = match mode % 4 {
        0 => vec![text.clone()],
        1 => text.split('\n').take(8).map(str::to_owned).collect(),
        2 => vec![format!("redis://user:{SECRET}@{text}")],
        _ => vec![format!("rediss+cluster://user:{SECRET}@{text}")],
    };
    let _ = fuzzing::parse_cluster(&text);
    let builder = Client::builder().nodes(urls);
    match fuzzing::check(&builder) {
        Ok(checked) => {
            for shown in checked.displays.iter().chain(checked.warnings.iter()) {
                assert!(!shown.contains(SECRET), "credentials shown: {shown}");
            }
            for servers in &checked.servers {
                assert!(!servers.is_empty());
                for s in servers {
                    assert!(!s.contains(SECRET), "credentials shown: {s}");
                }
            }
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
            assert!(
                !e.to_string().contains(SECRET),
                "credentials in an error: {e}"
            );
        }
    }
});

/// Whether `text` can spell the secret itself once parsed: URL parsing drops tabs and line
/// breaks, and Unix socket paths and TLS file names are shown percent-decoded (case is ignored,
/// to be safe). Without this, `redis://Zq9s3<TAB>cretPW` showed the host `Zq9s3cretPW` and
/// failed the check, although the input, not the password, put it there.
fn spells_secret(text: &str) -> bool {
    let plain: String = text
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let once = percent_decode(&plain);
    let twice = percent_decode(&once);
    let secret = SECRET.to_ascii_lowercase();
    [plain, once, twice]
        .iter()
        .any(|t| t.to_ascii_lowercase().contains(&secret))
}

/// `%XX` escapes decoded (others kept), lossy UTF-8.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
