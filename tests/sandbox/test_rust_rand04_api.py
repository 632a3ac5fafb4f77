"""rand 0.4's API for sandboxed Rust programs (``rand=0.4-api``, issue 36).

HumanEval-X's Rust tests were written against rand 0.4 (Rust/50 calls
``rng.gen_range(low, high)``); Debian's crate sources hold rand 0.8 only, whose
``gen_range`` takes one range, so the test program did not compile with the documented
crates. ``rand=0.4-api`` builds the compatibility crate shipped in
``rewardkit_sandbox/languages/rust_compat/rand04`` over rand 0.8 and offers it as ``rand``. Built
offline from Debian's crate sources (skipped, saying why, without them and cargo); the
build is cached outside /tmp as in test_rust_crates.py.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from rewardkit_sandbox import CompileCache, CompiledRunner, SandboxLimits, SandboxPool, Status
from rewardkit_sandbox.languages.rust_crates import (
    DEFAULT_CARGO,
    DEFAULT_RUSTC,
    CrateSetError,
    RustCrates,
    build_crates,
    rustc_version,
)

CRATES = {"rand": "0.4-api"}
DEBIAN_REGISTRY = Path("/usr/share/cargo/registry")
CACHE = Path(os.environ.get("RK_TEST_RUST_CRATES", "/var/cache/rewardkit-tests"))
SHIM = (Path(__file__).resolve().parents[2]
        / "sandbox/rewardkit_sandbox/languages/rust_compat/rand04")
LIMITS = SandboxLimits(wall_time_s=10.0, cpu_time_s=10.0, memory_bytes=512 * 1024 * 1024)

#: a program and tests in the shape of HumanEval-X's Rust/50 (rand 0.4 calls)
PROGRAM = """use rand::Rng;

fn shift(s: &str, by: u8) -> String {
    s.bytes().map(|b| {
        let base = if b.is_ascii_lowercase() { b'a' } else { b'A' };
        (base + (b - base + by) % 26) as char
    }).collect()
}
"""
TESTS = """#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut rng = rand::thread_rng();
        for _ in 0..50 {
            let n: i32 = rng.gen();
            let len = 5 + (n % 5).abs() as usize;
            let word: String = (0..len).map(|_| match rng.gen_range(0, 2) {
                0 => rng.gen_range(b'a', b'z' + 1) as char,
                _ => rng.gen_range(b'A', b'Z' + 1) as char,
            }).collect();
            assert_eq!(shift(&shift(&word, 5), 21), word);
        }
        let mut items = vec![1, 2, 3, 4];
        rng.shuffle(&mut items);
        items.sort();
        assert_eq!(items, vec![1, 2, 3, 4]);
        assert!(rng.choose(&items).is_some());
        assert!(rng.gen_weighted_bool(1));
    }
}
"""


@pytest.fixture(scope="module")
def crate_dir() -> Path:
    version = rustc_version(DEFAULT_RUSTC)
    if version is None or not Path(DEFAULT_CARGO).is_file():
        pytest.skip(f"needs Debian's rustc and cargo ({DEFAULT_RUSTC}, cargo)")
    if not any(DEBIAN_REGISTRY.glob("rand-0.8.*")):
        pytest.skip("needs Debian's rand 0.8 sources: apt-get install librust-rand+default-dev")
    shim = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(SHIM.rglob("*"))
                                   if p.is_file())).hexdigest()
    spec = hashlib.sha256(json.dumps([CRATES, version, shim]).encode()).hexdigest()
    target = CACHE / f"rust-crates-{spec[:16]}"
    try:
        RustCrates.load(target)
    except CrateSetError:
        try:
            CACHE.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            pytest.skip(f"no cache directory for the built crates ({error}); set "
                        "RK_TEST_RUST_CRATES")
        build_crates(CRATES, target, vendor=DEBIAN_REGISTRY)
    return target


def _run(pool: SandboxPool, crates: Path) -> object:
    runner = CompiledRunner(pool, "rust", cache=CompileCache(), limits=LIMITS,
                            test_timeout_s=10.0, rust_crates=crates)
    return runner.run(PROGRAM, tests=[TESTS])


def test_rand_04_calls_compile_and_pass_with_the_compat_crate(
    crate_dir: Path, contained: SandboxPool
) -> None:
    assert RustCrates.load(crate_dir).externs.keys() == {"rand"}
    result = _run(contained, crate_dir)
    assert result.status is Status.OK, (result.error, result.stderr[-500:])
    assert result.tests_passed == 1


def test_rand_04_calls_do_not_compile_against_rand_08(contained: SandboxPool) -> None:
    """What Rust/50 met with the documented crates: rand 0.8's gen_range takes a range."""
    version = rustc_version(DEFAULT_RUSTC)
    if version is None or not any(DEBIAN_REGISTRY.glob("rand-0.8.*")):
        pytest.skip("needs Debian's rustc, cargo and rand 0.8 sources")
    spec = hashlib.sha256(json.dumps([{"rand": "0.8"}, version]).encode()).hexdigest()
    plain = CACHE / f"rust-crates-{spec[:16]}"
    try:
        RustCrates.load(plain)
    except CrateSetError:
        build_crates({"rand": "0.8"}, plain, vendor=DEBIAN_REGISTRY)
    result = _run(contained, plain)
    assert result.status is Status.COMPILE_ERROR
    assert "gen_range" in (result.error or "") + result.stderr
