//! Sets the shared library's SONAME to `libquorumlock.so.<major>`, so `make install` can
//! lay out `libquorumlock.so.X.Y.Z` with its `.so.X` and `.so` links.

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".to_owned());
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libquorumlock.so.{major}");
    }
}
