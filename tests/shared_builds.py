#!/usr/bin/env python3
"""Check that make test's cargo invocations share their third-party crates (`make check-builds`).

`make test` builds the workspace's tests, then each binding on its own (`cargo build -p ...`).
A third-party crate compiled with other features, or over other dependencies, than in the
workspace test build is compiled a second time: on 2 cores, a split tokio/redis/rustls/ring
stack costs minutes. workspace-hack/ (cargo-hakari) keeps one feature set per crate; this script
fails when a binding's build splits a crate again, and names the crates.

It reads cargo's unit graph (`--unit-graph`, a nightly flag that stable cargo gives to its own
test suite through __CARGO_TEST_CHANNEL_OVERRIDE_DO_NOT_USE_THIS). A unit's identity is what
cargo hashes into its artifact name: package, target, mode, features, platform, the profile's
settings, and its dependencies' identities. The script also checks itself: a build of the Node
addon with an explicit --target (what `napi build` does) must be reported as split.
"""

import json
import os
import subprocess
import sys

WORKSPACE_TESTS = ["test", "--workspace", "--exclude", "quorumlock-sim", "--no-run"]
# The separate builds of make test (mk/*.mk), each checked against the workspace test build.
BUILDS = {
    "harness (make harness)": ["build", "-p", "quorumlock-harness"],
    "C library and CLI (make install)": ["build", "-p", "quorumlock-ffi", "-p", "quorumlock-cli"],
    "JVM native library (test-jvm)": ["build", "-p", "quorumlock-uniffi"],
    "Node addon (test-node)": ["build", "-p", "quorumlock-node"],
    "Python extension (maturin develop)": ["rustc", "-p", "quorumlock-python", "--lib"],
}
# Must be flagged: napi build's --target moves every crate to a folder of its own.
BROKEN = ["build", "-p", "quorumlock-node", "--target", "x86_64-unknown-linux-gnu"]


def units(args):
    """Identity of every unit cargo would build for `cargo <args>`."""
    env = dict(os.environ, __CARGO_TEST_CHANNEL_OVERRIDE_DO_NOT_USE_THIS="nightly")
    cmd = ["cargo", *args, "--locked", "--unit-graph", "-Z", "unstable-options"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"shared_builds: `{' '.join(cmd)}` failed:\n{done.stderr}")
    graph = json.loads(done.stdout)["units"]
    memo = {}

    def identity(i):
        if i not in memo:
            u = graph[i]
            profile = {k: v for k, v in u["profile"].items() if k != "name"}
            memo[i] = (
                u["pkg_id"],
                tuple(u["target"]["kind"]),
                u["mode"],
                tuple(sorted(u["features"])),
                u["platform"],
                json.dumps(profile, sort_keys=True),
                tuple(sorted(identity(d["index"]) for d in u["dependencies"])),
            )
        return memo[i]

    return {identity(i) for i in range(len(graph))}


def split(base, other):
    """Third-party crates that `other` builds differently from `base`: {name@version}."""
    seen = {(u[0], u[1], u[2]) for u in base}
    return sorted(
        u[0].split("#")[-1]
        for u in other - base
        if u[0].startswith("registry+") and (u[0], u[1], u[2]) in seen
    )


def main():
    base = units(WORKSPACE_TESTS)
    failed = False
    for name, args in BUILDS.items():
        crates = split(base, units(args))
        status = "shares every third-party crate" if not crates else "SPLITS " + " ".join(crates)
        print(f"check-builds: {name}: {status}")
        failed |= bool(crates)
    if not split(base, units(BROKEN)):
        sys.exit("check-builds: the checker missed the split of a --target build (broken variant)")
    print("check-builds: the broken variant (an explicit --target build) is flagged as split")
    if failed:
        sys.exit(
            "check-builds: a build compiles third-party crates again: run `cargo hakari generate`"
            " (workspace-hack/Cargo.toml says how) or align the features in Cargo.toml"
        )


if __name__ == "__main__":
    main()
