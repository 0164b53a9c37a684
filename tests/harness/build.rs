//! Builds the vendored clock-skew shim (`tests/faults/skewclock/`) into `OUT_DIR` and exports
//! its path as `QL_SKEWCLOCK_SO` (`docs/TESTING.md` §2.1).

use std::path::PathBuf;

fn main() {
    let src = PathBuf::from("../faults/skewclock/skewclock.c");
    println!("cargo:rerun-if-changed={}", src.display());
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        println!("cargo:warning=OUT_DIR not set; clock-skew shim not built");
        return;
    };
    let so = out.join("libskewclock.so");
    let compiler = cc::Build::new().opt_level(2).get_compiler();
    let status = compiler
        .to_command()
        .args(["-Wall", "-Wextra", "-fPIC", "-shared", "-pthread", "-o"])
        .arg(&so)
        .arg(&src)
        .status();
    match status {
        Ok(s) if s.success() => println!("cargo:rustc-env=QL_SKEWCLOCK_SO={}", so.display()),
        other => {
            // The harness still works without it; skew() then returns a clear error.
            println!("cargo:warning=building the clock-skew shim failed: {other:?}");
            println!("cargo:rustc-env=QL_SKEWCLOCK_SO=");
        }
    }
}
