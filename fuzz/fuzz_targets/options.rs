//! Options by name as every binding sets them (`LockOptions::set`, `ClientSettings::set`,
//! proto/src/config/spec.rs), the choices' `FromStr`, resource names and the checks before
//! anything is sent (`Timing::check`): any input is taken or refused with `InvalidArgument`.
#![no_main]

use std::str::FromStr;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use quorumlock::options::{CLIENT_SETTINGS, LOCK_OPTIONS};
use quorumlock::{
    ClientSettings, ErrorKind, EvictionCheck, KeyFormat, LockOptions, OptionValue, Quarantine,
};
use quorumlock_fuzz::Input;

fn name(input: &mut Input<'_>, table: &[quorumlock::options::OptionSpec]) -> String {
    let i = usize::from(input.u8());
    match table.get(i % (table.len() + 1)) {
        Some(spec) => spec.name.to_owned(),
        None => String::from_utf8_lossy(input.chunk()).into_owned(),
    }
}

fn value(input: &mut Input<'_>) -> OptionValue {
    match input.u8() % 6 {
        0 => OptionValue::Flag(input.u8() & 1 == 1),
        1 => OptionValue::Duration(Duration::new(input.u64(), input.u32() % 1_000_000_000)),
        2 => OptionValue::Millis(input.f64()),
        3 => OptionValue::Seconds(input.f64()),
        4 => OptionValue::Number(input.f64()),
        _ => OptionValue::Text(String::from_utf8_lossy(input.chunk()).into_owned()),
    }
}

fn invalid(e: &quorumlock::Error) {
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(!e.message().is_empty());
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let mut opts = LockOptions::default();
    let mut settings = ClientSettings::default();
    let mut resources: Vec<Vec<u8>> = Vec::new();
    for _ in 0..16 {
        if input.is_empty() {
            break;
        }
        match input.u8() % 5 {
            0 => {
                let n = name(&mut input, LOCK_OPTIONS);
                match opts.set(&n, value(&mut input)) {
                    Ok(()) => assert!(opts.get(&n).is_some(), "{n} set but unknown"),
                    Err(e) => invalid(&e),
                }
            }
            1 => {
                let n = name(&mut input, CLIENT_SETTINGS);
                match settings.set(&n, value(&mut input)) {
                    Ok(()) => assert!(settings.get(&n).is_some(), "{n} set but unknown"),
                    Err(e) => invalid(&e),
                }
            }
            2 => {
                let text = String::from_utf8_lossy(input.chunk()).into_owned();
                for r in [
                    Quarantine::from_str(&text).map(|q| q.to_string()),
                    EvictionCheck::from_str(&text).map(|q| q.to_string()),
                    KeyFormat::from_str(&text).map(|q| q.to_string()),
                ] {
                    match r {
                        Ok(shown) => assert_eq!(shown, text),
                        Err(e) => invalid(&e),
                    }
                }
            }
            3 => resources.push(input.chunk().to_vec()),
            _ => {
                let shown = String::from_utf8_lossy(input.chunk()).into_owned();
                if let Err(e) = quorumlock::options::to_duration(&shown, &value(&mut input)) {
                    invalid(&e);
                }
            }
        }
    }
    if let Err(e) = opts.check() {
        invalid(&e);
    }
    if let Err(e) = settings.check() {
        invalid(&e);
    }
    if let Err(e) = settings.timing().check(&opts, opts.get_ttl()) {
        invalid(&e);
    }
    for spec in LOCK_OPTIONS {
        let _ = opts.get(spec.name);
        let _ = spec.range_text();
        let _ = spec.default_text();
    }
    for spec in CLIENT_SETTINGS {
        let _ = settings.get(spec.name);
    }
    match quorumlock_proto::config::normalize_resources(resources.iter()) {
        Ok(keys) => {
            assert!(!keys.is_empty());
            assert!(
                keys.windows(2).all(|w| w[0] < w[1]),
                "not sorted and unique"
            );
        }
        Err(e) => invalid(&e),
    }
});
