"""Crates offered to sandboxed Rust programs (rewardkit_sandbox.languages.rust_crates).

The crates (regex, md5, rand: what HumanEval-X's Rust tests use) are built once with
Debian's cargo and rustc, offline from Debian's crate sources (the ``librust-*-dev``
packages, in /usr/share/cargo/registry) when they are installed, else from crates.io
when it answers; without either the tests skip and say why. The build (~20 s) is kept
in a cache directory outside /tmp (the sandbox's tasks see a private /tmp, so a crate
directory there is invisible to them: one test checks exactly that) and reused while
the compiler is the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from rewardkit_code import CodeExecution
from rewardkit_sandbox import CompileCache, CompiledRunner, SandboxLimits, SandboxPool, Status
from rewardkit_sandbox.languages.rust_crates import (
    DEFAULT_CARGO,
    DEFAULT_RUSTC,
    MANIFEST,
    CrateSetError,
    RustCrates,
    build_crates,
    rustc_version,
)

from rewardkit import Sample

CRATES = {"regex": "1", "md5": "0.7", "rand": "0.8"}
DEBIAN_REGISTRY = Path("/usr/share/cargo/registry")
CACHE = Path(os.environ.get("RK_TEST_RUST_CRATES", "/var/cache/rewardkit-tests"))

TESTS = """#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_words() {
        assert_eq!(count_words("a bb  ccc"), 3);
        assert_eq!(digest_of("abc"), "900150983cd24fb0d6963f7d28e17f72");
        let n = 1 + rand::random::<u32>() % 9;
        assert_eq!(count_words(&"x ".repeat(n as usize)), n as usize);
    }
}
"""
HONEST = """use regex::Regex;

fn count_words(s: &str) -> usize {
    Regex::new(r"\\S+").unwrap().find_iter(s).count()
}

fn digest_of(s: &str) -> String {
    format!("{:x}", md5::compute(s.as_bytes()))
}
"""


def _crates_io_answers() -> bool:
    try:
        socket.create_connection(("index.crates.io", 443), timeout=3).close()
    except OSError:
        return False
    return True


def _source() -> Path | None:
    """Debian's crate sources when they hold every crate, else None (crates.io)."""
    names = [p.name.rsplit("-", 1)[0] for p in DEBIAN_REGISTRY.glob("*-*")]
    return DEBIAN_REGISTRY if all(name in names for name in CRATES) else None


@pytest.fixture(scope="module")
def crate_dir() -> Path:
    """The built crates, from the cache when the same rustc built them."""
    version = rustc_version(DEFAULT_RUSTC)
    if version is None or not Path(DEFAULT_CARGO).is_file():
        pytest.skip(f"needs Debian's rustc and cargo ({DEFAULT_RUSTC}, cargo): "
                    "apt-get install rustc cargo")
    vendor = _source()
    if vendor is None and not _crates_io_answers():
        pytest.skip("no crate sources: neither Debian's librust-regex+default-dev, "
                    "librust-md5+default-dev, librust-rand+default-dev (in "
                    "/usr/share/cargo/registry) nor crates.io reachable")
    spec = hashlib.sha256(json.dumps([CRATES, version, str(vendor)]).encode()).hexdigest()
    target = CACHE / f"rust-crates-{spec[:16]}"
    try:
        RustCrates.load(target)
    except CrateSetError:
        try:
            CACHE.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            pytest.skip(f"no cache directory for the built crates ({error}); set "
                        "RK_TEST_RUST_CRATES to one outside /tmp and the home folders")
        build_crates(CRATES, target, vendor=vendor)
    return target


#: the run limits code_execution gives a program (the pool's test limits allow 1 MiB files:
#: a program linking regex is larger)
LIMITS = SandboxLimits(wall_time_s=10.0, cpu_time_s=10.0, memory_bytes=512 * 1024 * 1024)


def _runner(pool: SandboxPool, crates: Path | None, cache: CompileCache) -> CompiledRunner:
    return CompiledRunner(pool, "rust", cache=cache, limits=LIMITS, test_timeout_s=10.0,
                          rust_crates=crates)


def test_offered_crates_serve_a_program_and_its_tests(
    crate_dir: Path, contained: SandboxPool
) -> None:
    result = _runner(contained, crate_dir, CompileCache()).run(HONEST, tests=[TESTS])
    assert result.status is Status.OK, (result.error, result.stderr[-500:])
    assert result.tests_passed == 1


def test_the_crate_set_is_part_of_the_build_key(crate_dir: Path, contained: SandboxPool) -> None:
    cache = CompileCache()
    assert _runner(contained, crate_dir, cache).run(HONEST, tests=[TESTS]).ok
    without = _runner(contained, None, cache).run(HONEST, tests=[TESTS])
    assert without.status is Status.COMPILE_ERROR  # not the cached build with the crates
    assert "regex" in (without.error or "")
    assert cache.misses == 2 and cache.hits == 0


@pytest.mark.parametrize(
    "program",
    ["extern crate regex_syntax;\nfn main() {}\n",  # a dependency of an offered crate
     "extern crate serde;\nfn main() {}\n",  # a crate of the machine, not offered
     "#![feature(rustc_private)]\nextern crate libc;\nfn main() {}\n"],  # the sysroot's
)
def test_a_crate_not_offered_is_a_compile_error(
    crate_dir: Path, contained: SandboxPool, program: str
) -> None:
    result = _runner(contained, crate_dir, CompileCache()).run(program)
    assert result.status is Status.COMPILE_ERROR, (result.status, result.error)


def test_code_execution_pays_with_the_crates_and_not_a_hack(
    crate_dir: Path, contained: SandboxPool
) -> None:
    grader = CodeExecution({"language": "rust", "mode": "binary", "timeout_s": 10,
                            "rust_crates": str(crate_dir)})
    honest = grader.grade(Sample(completion=f"```rust\n{HONEST}```", reference=[TESTS]))
    assert (honest.status.value, honest.value) == ("ok", 1.0), honest.reason
    exits = HONEST.replace("Regex::new", "{ std::process::exit(0) }; Regex::new", 1)
    hack = grader.grade(Sample(completion=f"```rust\n{exits}```", reference=[TESTS]))
    assert (hack.status.value, hack.value) == ("ok", 0.0), hack.reason


def test_a_crate_directory_the_sandbox_cannot_see_is_an_error_not_a_wrong_answer(
    crate_dir: Path, contained: SandboxPool
) -> None:
    # readable by every uid on the host, but under /tmp: the tasks' /tmp is their own
    folder = Path(tempfile.mkdtemp(prefix="rewardkit-crates-test-", dir="/tmp"))
    folder.chmod(0o755)
    hidden = folder / "crates"
    shutil.copytree(crate_dir, hidden)
    try:
        _check_refused(contained, hidden)
    finally:
        shutil.rmtree(folder)


def _check_refused(contained: SandboxPool, hidden: Path) -> None:
    result = _runner(contained, hidden, CompileCache()).run(HONEST, tests=[TESTS])
    assert result.status is Status.TOOLCHAIN_MISSING
    assert "not visible inside the sandbox" in (result.error or "")
    grader = CodeExecution({"language": "rust", "timeout_s": 10, "rust_crates": str(hidden)})
    score = grader.grade(Sample(completion=f"```rust\n{HONEST}```", reference=[TESTS]))
    assert score.status.value == "error" and "not visible" in (score.reason or "")


def test_a_changed_or_foreign_crate_set_is_refused_with_the_reason(
    crate_dir: Path, contained: SandboxPool, tmp_path: Path
) -> None:
    changed = tmp_path / "changed"
    shutil.copytree(crate_dir, changed)
    manifest = json.loads((changed / MANIFEST).read_text())
    rlib = changed / manifest["externs"]["md5"]
    rlib.write_bytes(rlib.read_bytes() + b"\0")
    with pytest.raises(CrateSetError, match="changed since the crates were built"):
        RustCrates.load(changed)
    runner = _runner(contained, changed, CompileCache())
    assert "changed since" in (runner.toolchain_problem or "")
    real = RustCrates.load(crate_dir)
    other = RustCrates(real.directory, real.externs, "rustc 0.1.0 (old)", real.digest)
    assert "rebuild them" in (other.problem_with(DEFAULT_RUSTC) or "")
    with pytest.raises(ValueError, match="language rust"):
        CompiledRunner(contained, "c", rust_crates=crate_dir)
    with pytest.raises(ValueError, match="rust_crates needs language rust"):
        CodeExecution({"language": "cpp", "rust_crates": str(crate_dir)})


def test_the_build_command_refuses_bad_input_with_a_message(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rewardkit_sandbox.languages.rust_crates", str(tmp_path / "out"),
         "regex;rm=1"], capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1
    assert "not a crate name and version" in done.stderr and "Traceback" not in done.stderr


def test_a_crate_the_source_lacks_fails_the_build_with_cargos_reason(tmp_path: Path) -> None:
    if _source() is None or not Path(DEFAULT_CARGO).is_file():
        pytest.skip("needs Debian's cargo and crate sources (/usr/share/cargo/registry)")
    done = subprocess.run(
        [sys.executable, "-m", "rewardkit_sandbox.languages.rust_crates", str(tmp_path / "out"),
         "no_such_crate_here=1", "--vendor", str(DEBIAN_REGISTRY)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "cargo build failed" in done.stderr and "no_such_crate_here" in done.stderr
    assert not (tmp_path / "out").exists()
