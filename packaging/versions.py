#!/usr/bin/env python3
"""One version everywhere: every file that carries quorumlock's version must carry the one in
[workspace.package] of Cargo.toml. Run by `make test-versions` (part of `make test`): no build,
no network, standard library only.

TABLE lists where versions live. A row's glob may match nothing (a language folder that does not
exist yet is skipped) unless the row is `required`. To add a language, add its rows; a package
manifest that no row covers (MANIFESTS) fails the check, so a new folder cannot be forgotten.

    python3 packaging/versions.py              check the repository (exit 1 on a mismatch)
    python3 packaging/versions.py --self-test  show that the check fails when it should
    python3 packaging/versions.py --print      print the version
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "Cargo.toml"
SOURCE_RE = r'(?ms)^\[workspace\.package\][^\[]*?^version\s*=\s*"([^"]+)"'


@dataclass(frozen=True)
class Row:
    """Files matching `glob` must contain `pattern`; every match's groups, joined with '.', must
    be the version. `every`: all matches, not only the first. `required`: the glob must match.
    `optional`: a matching file need not contain the pattern."""

    glob: str
    pattern: str
    every: bool = False
    required: bool = False
    optional: bool = False


SEMVER = r"(\d+)\.(\d+)\.(\d+(?:-[0-9A-Za-z.-]+)?)"
C_DEFINES = (
    r"(?s)#define QUORUMLOCK_VERSION_MAJOR (\d+)\s+"
    r"#define QUORUMLOCK_VERSION_MINOR (\d+)\s+"
    r"#define QUORUMLOCK_VERSION_PATCH (\d+)"
)
# A literal (no group) only has to be present: members that take the workspace version.
WORKSPACE_MEMBER = r"(?m)^version\.workspace = true$"

TABLE: list[Row] = [
    # Rust: the source of truth, its members, and the lock file.
    Row("Cargo.toml", SOURCE_RE, required=True),
    Row("*/Cargo.toml", WORKSPACE_MEMBER),
    Row("*/*/Cargo.toml", WORKSPACE_MEMBER),
    Row(
        "Cargo.lock",
        r'(?m)^name = "quorumlock(?:-[a-z]+)?"\nversion = "([^"]+)"',
        every=True,
        required=True,
    ),
    # The release notes: the newest released section.
    Row("CHANGELOG.md", r"(?m)^## \[(\d[^\]]*)\]", required=True),
    # Python: maturin takes the version from Cargo; a static one would have to agree.
    Row("python/pyproject.toml", r'(?m)^dynamic = \[[^\]]*"version"', required=True),
    Row("python/pyproject.toml", r'(?m)^version\s*=\s*"([^"]+)"', optional=True),
    # Node: the package, its lock file, the platform packages and the generated loader.
    Row("node/package.json", r'(?m)^  "version": "([^"]+)"', required=True),
    Row("node/package-lock.json", r'(?m)^  "version": "([^"]+)"', required=True),
    Row(
        "node/package-lock.json",
        r'(?s)"packages": \{\s*"": \{\s*"name": "quorumlock",\s*"version": "([^"]+)"',
    ),
    Row("edge/package.json", r'(?m)^  "version": "([^"]+)"'),
    Row("edge/package-lock.json", r'(?m)^  "version": "([^"]+)"'),
    Row("node/npm/*/package.json", r'(?m)^  "version": "([^"]+)"', required=True),
    Row("node/native.js", r"bindingPackageVersion !== '([^']+)'", every=True, required=True),
    Row("node/native.js", r"expected ([^ ]+) but got", every=True),
    # C ABI: header defines (cbindgen's input and output), the documented string, the C test.
    Row("bindings/c/cbindgen.toml", C_DEFINES, required=True),
    Row("include/quorumlock.h", C_DEFINES, required=True),
    Row("include/quorumlock.h", r'The library version \(`"([^"]+)"`\)', required=True),
    Row("bindings/c/src/lib.rs", r'The library version \(`"([^"]+)"`\)', required=True),
    Row("bindings/c/tests/c/basic.c", r'quorumlock_version\(\), "([^"]+)"', required=True),
    # Go: versioned by tag (go/vX.Y.Z); its documented Version() string.
    Row("go/client.go", r'libquorumlock \("([^"]+)"\)'),
    # Languages to come: their usual version files.
    # The gemspec reads lib/quorumlock/version.rb; a literal version would have to agree.
    Row("ruby/*.gemspec", r'\.version\s*=\s*["\']([^"\']+)["\']', optional=True),
    Row("ruby/**/version.rb", r'VERSION\s*=\s*["\']([^"\']+)["\']'),
    Row("php/composer.json", r'(?m)^\s*"version":\s*"([^"]+)"', optional=True),
    Row("perl/Makefile.PL", r"VERSION_FROM\s*=>\s*'lib/Quorumlock.pm'"),
    Row("perl/lib/**/*.pm", r"our \$VERSION\s*=\s*['\"]([^'\"]+)['\"]", every=True),
    Row("csharp/**/*.csproj", r"<(?:Version|PackageVersion)>([^<]+)</", every=True),
    Row("csharp/**/*.nuspec", r"<version>([^<]+)</version>"),
    Row(
        "jvm/**/pom.xml",
        r"<artifactId>quorumlock[^<]*</artifactId>\s*<version>([^<]+)</version>",
        every=True,
    ),
    Row("jvm/**/build.gradle*", r'(?m)^version\s*=\s*["\']([^"\']+)["\']'),
    Row("jvm/**/gradle.properties", r"(?m)^version\s*=\s*(\S+)"),
]

# Package manifests: each one found must be covered by a row above or listed in UNVERSIONED.
MANIFESTS = [
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "*.gemspec",
    "composer.json",
    "Makefile.PL",
    "Build.PL",
    "*.csproj",
    "*.nuspec",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "gradle.properties",
    "go.mod",
    "*.pc.in",
    "*Config.cmake.in",
]
# Manifests that carry no quorumlock version, and why.
UNVERSIONED = {
    "bench/node/package.json": "private benchmark project",
    "go/go.mod": "Go modules are versioned by tag (go/vX.Y.Z)",
    "go/bench/go.mod": "benchmark module",
    "fuzz/Cargo.toml": "fuzz targets, a cargo workspace of their own, never released",
    "fuzz/ffi/Cargo.toml": "the C ABI's sources built for the fuzz targets, never released",
    "workspace-hack/Cargo.toml": "build-time only (cargo-hakari), never released",
    "bindings/c/quorumlock.pc.in": "@VERSION@ filled in by make install",
    "bindings/c/quorumlockConfig.cmake.in": "@VERSION@ filled in by make install",
}


def files(root: Path) -> list[str]:
    """Tracked and new (not ignored) files, relative to root; a walk outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return sorted({p for p in out.splitlines() if (root / p).is_file()})
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", "target", "node_modules", ".venv", "dist"}
        return sorted(
            str(p.relative_to(root))
            for p in root.rglob("*")
            if p.is_file() and not skip & set(p.relative_to(root).parts)
        )


def matches(path: str, glob: str) -> bool:
    """A glob over '/'-separated paths: '*' stays in one folder, '**/' spans any number."""
    rx = re.escape(glob).replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*")
    return re.fullmatch(rx, path) is not None


def check(root: Path) -> tuple[str, list[str], list[str]]:
    """Returns the version, the passed checks and the failures."""
    source = re.search(SOURCE_RE, (root / SOURCE).read_text())
    if not source:
        return "?", [], [f"{SOURCE}: no [workspace.package] version"]
    version = source.group(1)
    all_files = files(root)
    passed: list[str] = []
    failed: list[str] = []
    covered: set[str] = set()
    for row in TABLE:
        hits = [p for p in all_files if matches(p, row.glob) and p not in UNVERSIONED]
        if not hits and row.required:
            failed.append(f"{row.glob}: required, but no such file")
        for path in hits:
            covered.add(path)
            text = (root / path).read_text(errors="replace")
            found = list(re.finditer(row.pattern, text))
            if not found and not row.optional:
                failed.append(f"{path}: no match for {row.pattern!r}")
                continue
            for m in found if row.every else found[:1]:
                got = ".".join(m.groups())
                if m.groups() and got != version:
                    line = text.count("\n", 0, m.start()) + 1
                    failed.append(f"{path}:{line}: {got} (want {version})")
                else:
                    passed.append(path)
    for path in all_files:
        name = path.rsplit("/", 1)[-1]
        if any(fnmatch.fnmatch(name, m) for m in MANIFESTS):
            if path not in covered and path not in UNVERSIONED:
                failed.append(
                    f"{path}: a package manifest no row of TABLE covers (packaging/versions.py)"
                )
    return version, passed, failed


DEFINES_123 = (
    "#define QUORUMLOCK_VERSION_MAJOR 1\n"
    "#define QUORUMLOCK_VERSION_MINOR 2\n"
    "#define QUORUMLOCK_VERSION_PATCH 3\n"
)


def self_test() -> int:
    """Builds small trees and checks that the checker fails on each kind of mistake."""
    good = {
        "Cargo.toml": '[workspace]\n[workspace.package]\nversion = "1.2.3"\n',
        "core/Cargo.toml": "[package]\nversion.workspace = true\n",
        "Cargo.lock": (
            'name = "quorumlock"\nversion = "1.2.3"\n\nname = "quorumlock-cli"\nversion = "1.2.3"\n'
        ),
        "CHANGELOG.md": "## [Unreleased]\n\n## [1.2.3] - 2026-12-03\n",
        "python/pyproject.toml": 'dynamic = ["version"]\n',
        "node/package.json": '{\n  "version": "1.2.3"\n}\n',
        "node/package-lock.json": (
            '{\n  "version": "1.2.3",\n  "packages": {\n    "": {\n'
            '      "name": "quorumlock",\n      "version": "1.2.3"\n}}}\n'
        ),
        "node/npm/linux-x64-gnu/package.json": '{\n  "version": "1.2.3"\n}\n',
        "node/native.js": (
            "bindingPackageVersion !== '1.2.3'\nbindingPackageVersion !== '1.2.3'\n"
            "expected 1.2.3 but got\n"
        ),
        "bindings/c/cbindgen.toml": DEFINES_123,
        "include/quorumlock.h": DEFINES_123 + '// The library version (`"1.2.3"`)\n',
        "bindings/c/src/lib.rs": '/// The library version (`"1.2.3"`)\n',
        "bindings/c/tests/c/basic.c": 'quorumlock_version(), "1.2.3"',
        "ruby/quorumlock.gemspec": 's.version = "1.2.3"\n',
    }
    bad = {
        "a stale package.json": ("node/package.json", '{\n  "version": "1.2.2"\n}\n'),
        "one stale lock entry": (
            "Cargo.lock",
            good["Cargo.lock"].replace('1.2.3"\n', '1.2.2"\n', 2),
        ),
        "the second stale loader check": (
            "node/native.js",
            good["node/native.js"].replace("'1.2.3'\n", "'1.2.2'\n", 2),
        ),
        "a stale C minor": (
            "include/quorumlock.h",
            good["include/quorumlock.h"].replace("MINOR 2", "MINOR 1"),
        ),
        "a changelog without the release": ("CHANGELOG.md", "## [Unreleased]\n\n## [1.2.2]\n"),
        "a member with its own version": ("core/Cargo.toml", '[package]\nversion = "1.2.3"\n'),
        "a static Python version": (
            "python/pyproject.toml",
            'dynamic = ["version"]\nversion = "1.2.2"\n',
        ),
        "a stale future gemspec": ("ruby/quorumlock.gemspec", 's.version = "1.2.2"\n'),
        "a new manifest nobody covers": ("swift/package.json", "{}"),
        "an uncovered gradle file": ("kotlin/build.gradle.kts", 'version = "1.2.3"\n'),
    }
    results = []
    with tempfile.TemporaryDirectory() as tmp:

        def tree(overrides: dict[str, str]) -> Path:
            root = Path(tmp) / str(len(results))
            for path, text in {**good, **overrides}.items():
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
            return root

        _, _, failed = check(tree({}))
        results.append(("a consistent tree passes", not failed, failed))
        for name, (path, text) in bad.items():
            _, _, failed = check(tree({path: text}))
            results.append((f"{name} fails", bool(failed), failed))
        missing = tree({})
        (missing / "include/quorumlock.h").unlink()
        _, _, failed = check(missing)
        results.append(("a missing required file fails", bool(failed), failed))
    for name, ok, detail in results:
        print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail}"))
    bad_count = sum(not ok for _, ok, _ in results)
    print(f"versions self-test: {len(results) - bad_count} passed, {bad_count} failed")
    return 1 if bad_count else 0


def main() -> int:
    if "--self-test" in sys.argv:
        return self_test()
    version, passed, failed = check(ROOT)
    if "--print" in sys.argv:
        print(version)
        return 0 if not failed else 1
    for f in failed:
        print(f"version mismatch: {f}")
    files_seen = len(set(passed))
    print(f"versions ({version}, {files_seen} files): {len(passed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
