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
    if text.contains(SECRET) {
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
