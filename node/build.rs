//! Links the addon for Node-API (napi-build).

fn main() {
    napi_build::setup();
}
