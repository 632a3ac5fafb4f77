"""Crates for sandboxed Rust programs: a directory of prebuilt rlibs the user offers.

A lone ``rustc`` has only the standard library; datasets such as HumanEval-X grade
Rust in a cargo project with crates (``regex``, ``md5``, ``rand``). The sandbox cannot
download anything (no network), so the crates are built once, outside it, with cargo
and the same ``rustc`` the sandbox runs (an rlib only links with the compiler version
that made it), into a directory every slot uid can read::

    python -m rewardkit_sandbox.languages.rust_crates /opt/rewardkit/rust-crates \\
        regex=1 md5=0.7 rand=0.8 --vendor /usr/share/cargo/registry

``--vendor`` builds offline from a directory of crate sources (Debian's
``librust-*-dev`` packages put theirs in ``/usr/share/cargo/registry``; ``cargo
vendor`` makes one); without it cargo fetches from crates.io, through the user's cargo
home (its registry cache and config). The directory holds the
crates' rlibs and their dependencies' and a manifest (``rewardkit-crates.json``: the
crate names, the compiler's ``rustc -vV``, a digest of every file).

``CompiledRunner(pool, "rust", rust_crates=DIR)`` then compiles every program with
``-L dependency=DIR`` and ``--extern NAME=DIR/libNAME-....rlib`` for each offered crate.
The crates are trusted (the user chose them); the candidate can only name them: a crate
that was not offered, even one of the offered crates' own dependencies (``-L
dependency=`` serves those to the offered crates alone), is a compile error.

``rand=0.4-api`` offers, as ``rand``, a small crate shipped here (``rust_compat/rand04``)
that gives rand 0.4's ``Rng`` methods (``gen_range(low, high)``) over rand 0.8: code
written against rand 0.4 (HumanEval-X's Rust tests) builds offline from Debian's crate
sources, which hold rand 0.8 only (:data:`COMPAT_CRATES`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "rewardkit-crates.json"
_CRATE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
#: what the sandbox runs (its task PATH finds /usr/bin/rustc; docs/sandbox.md), and the
#: cargo of the same toolchain (Debian's ``cargo``), not a rustup one earlier on PATH
DEFAULT_RUSTC = "/usr/bin/rustc"
DEFAULT_CARGO = shutil.which("cargo", path="/usr/local/bin:/usr/bin:/bin") or "cargo"
#: ``NAME=REQUIREMENT`` pairs that build a compatibility crate shipped with the sandbox
#: instead of a registry version: -> (its folder under ``rust_compat``, its package name)
COMPAT_CRATES = {("rand", "0.4-api"): ("rand04", "rewardkit-rand04-compat")}
_COMPAT_ROOT = Path(__file__).with_name("rust_compat")


class CrateSetError(ValueError):
    """A crate directory that cannot be used (missing, unreadable, another compiler's)."""


@dataclass(frozen=True)
class RustCrates:
    """An offered crate set: ``externs`` maps each crate name (as code ``use``s it) to
    its rlib in ``directory``; ``rustc`` is the ``rustc -vV`` that built them; ``digest``
    covers every file (the compile cache's key includes it)."""

    directory: str
    externs: dict[str, str]
    rustc: str
    digest: str

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> RustCrates:
        """The crate set in ``directory`` (its manifest checked against its files)."""
        root = os.path.realpath(directory)
        try:
            manifest = json.loads(Path(root, MANIFEST).read_text(encoding="utf-8"))
            externs = {str(k): str(v) for k, v in manifest["externs"].items()}
            files, rustc = dict(manifest["files"]), str(manifest["rustc"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise CrateSetError(
                f"{root} is not a crate directory ({MANIFEST}: {error}); build one with "
                "`python -m rewardkit_sandbox.languages.rust_crates`"
            ) from None
        if not set(externs.values()) <= set(files):
            raise CrateSetError(f"{root}/{MANIFEST}: an extern names a file it does not list")
        for name, digest in files.items():
            path = Path(root, name)
            if "/" in name or not path.is_file() or _file_digest(path) != digest:
                raise CrateSetError(f"{path}: missing or changed since the crates were built")
        problem = _unreadable_by_others(root, sorted(files))
        if problem:
            raise CrateSetError(problem)
        digest = hashlib.sha256(json.dumps([externs, files, rustc]).encode()).hexdigest()
        return cls(root, externs, rustc, digest)

    def rustc_flags(self) -> list[str]:
        """The flags that offer these crates (and only these) to a compile."""
        flags = ["-L", f"dependency={self.directory}"]
        for name, file in sorted(self.externs.items()):
            flags += ["--extern", f"{name}={self.directory}/{file}"]
        return flags

    def problem_with(self, rustc: str) -> str | None:
        """Why the compiler at ``rustc`` cannot link these crates, or None."""
        found = rustc_version(rustc)
        if found != self.rustc:
            first = (found or "unknown").splitlines()[0] if found else "no answer"
            built = self.rustc.splitlines()[0] if self.rustc else "unknown"
            return (
                f"the crates in {self.directory} were built by {built}, the sandbox's "
                f"{rustc} is {first}: rebuild them with that rustc"
            )
        return None


def crates_at(directory: str | os.PathLike[str]) -> RustCrates:
    """``RustCrates.load(directory)``, made once per state of its files (runners are made
    per sample; hashing the rlibs each time would cost more than a compile)."""
    root = os.path.realpath(directory)
    try:
        names = sorted(os.listdir(root))
        stamps = tuple((n, os.stat(os.path.join(root, n)).st_mtime_ns) for n in names)
    except OSError as error:
        raise CrateSetError(f"crate directory {root}: {error}") from None
    key = (root, stamps)
    if key not in _loaded:
        _loaded[key] = RustCrates.load(root)
    return _loaded[key]


_loaded: dict[tuple[str, tuple[tuple[str, int], ...]], RustCrates] = {}


def rustc_version(rustc: str) -> str | None:
    """``rustc -vV`` of ``rustc`` (None when it does not answer), cached by its mtime."""
    try:
        stamp = os.stat(rustc).st_mtime_ns
    except OSError:
        return None
    key = (rustc, stamp)
    if key not in _versions:
        try:
            out = subprocess.run([rustc, "-vV"], capture_output=True, text=True, timeout=60)
            _versions[key] = out.stdout.strip() if out.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            _versions[key] = None
    return _versions[key]


_versions: dict[tuple[str, int], str | None] = {}


def build_crates(
    crates: Mapping[str, str],
    out: str | os.PathLike[str],
    *,
    vendor: str | os.PathLike[str] | None = None,
    cargo: str = DEFAULT_CARGO,
    rustc: str = DEFAULT_RUSTC,
) -> RustCrates:
    """Build ``crates`` (name -> cargo version requirement) with ``cargo`` and ``rustc``
    into ``out`` (replaced), readable by every uid; return the loaded set. Offline from
    ``vendor`` (a directory source) when given. ``CrateSetError`` says why a build failed."""
    for name, requirement in crates.items():
        if not _CRATE_NAME.match(name) or not re.match(r"^[\w.*^~<>=, -]+$", requirement):
            raise CrateSetError(f"crate {name!r} = {requirement!r}: not a crate name and version")
    packages = {COMPAT_CRATES[(name, req)][1] if (name, req) in COMPAT_CRATES else name: name
                for name, req in crates.items()}
    with tempfile.TemporaryDirectory(prefix="rewardkit-crates-") as work:
        messages = _cargo_build(Path(work), crates, vendor, cargo, rustc)
        externs, produced, found = _artifacts(messages, set(packages))
        missing = sorted(name for package, name in packages.items() if package not in found)
        if missing:
            raise CrateSetError(f"cargo built no library for {', '.join(missing)}")
        manifest = {"crates": dict(crates), "externs": externs, "rustc": rustc_version(rustc) or ""}
        _install(produced, manifest, Path(out))
    return RustCrates.load(out)


def _install(produced: Sequence[Path], manifest: Mapping[str, object], target: Path) -> None:
    """Copy the libraries and write the manifest into a fresh folder beside ``target``,
    then put it in ``target``'s place (nothing half-written is ever ``target``)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".crates-", dir=target.parent))
    try:
        files = {}
        for path in produced:
            shutil.copyfile(path, staging / path.name)
            os.chmod(staging / path.name, 0o644)
            files[path.name] = _file_digest(staging / path.name)
        text = json.dumps({**manifest, "files": files}, indent=1) + "\n"
        (staging / MANIFEST).write_text(text, encoding="utf-8")
        os.chmod(staging / MANIFEST, 0o644)
        os.chmod(staging, 0o755)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _cargo_build(
    work: Path, crates: Mapping[str, str], vendor: str | os.PathLike[str] | None,
    cargo: str, rustc: str,
) -> list[dict[str, object]]:
    """cargo's JSON messages of a release build of a library that depends on ``crates``
    (a compatibility crate copied into ``work`` and named by path)."""
    dependencies = ""
    for name, requirement in crates.items():
        if (name, requirement) in COMPAT_CRATES:
            folder, package = COMPAT_CRATES[(name, requirement)]
            shutil.copytree(_COMPAT_ROOT / folder, work / "compat" / folder)
            dependencies += f'{name} = {{ package = "{package}", path = "compat/{folder}" }}\n'
        else:
            dependencies += f'{name} = "{requirement}"\n'
    (work / "src").mkdir()
    (work / "src" / "lib.rs").write_text("")
    (work / "Cargo.toml").write_text(
        '[package]\nname = "rewardkit-crates"\nversion = "0.0.0"\nedition = "2021"\n\n'
        f"[dependencies]\n{dependencies}"
    )
    command = [cargo, "build", "--release", "--message-format=json"]
    env = {**os.environ, "RUSTC": rustc, "CARGO_TARGET_DIR": str(work / "target")}
    if vendor is not None:  # a cargo home of its own: no user config redirects the source
        env["CARGO_HOME"] = str(work / "cargo-home")
        (work / ".cargo").mkdir()
        (work / ".cargo" / "config.toml").write_text(
            '[source.crates-io]\nreplace-with = "vendored"\n\n'
            f"[source.vendored]\ndirectory = {json.dumps(os.path.realpath(vendor))}\n"
        )
        command.append("--offline")
    try:
        done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True,
                              timeout=1800)
    except (OSError, subprocess.SubprocessError) as error:
        raise CrateSetError(f"could not run {cargo}: {error}") from None
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-12:])
        raise CrateSetError(f"cargo build failed (exit {done.returncode}):\n{tail}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _artifacts(
    messages: Sequence[dict[str, object]], wanted: set[str]
) -> tuple[dict[str, str], list[Path], set[str]]:
    """(extern name -> library file of each wanted crate, every library file built, the
    wanted packages found)."""
    externs: dict[str, str] = {}
    produced: list[Path] = []
    found: set[str] = set()
    for message in messages:
        target = message.get("target")
        if message.get("reason") != "compiler-artifact" or not isinstance(target, dict):
            continue
        kinds = target.get("kind") or []
        if not {"lib", "rlib", "proc-macro"} & set(kinds):
            continue
        package = _package_name(str(message.get("package_id", "")))
        if package == "rewardkit-crates":
            continue
        libraries = [Path(str(f)) for f in message.get("filenames") or []  # type: ignore[attr-defined]
                     if str(f).endswith((".rlib", ".so"))]
        produced += libraries
        if package in wanted and libraries:
            externs[str(target["name"]).replace("-", "_")] = libraries[0].name
            found.add(package)
    return externs, produced, found


def _package_name(package_id: str) -> str:
    """The package of a cargo package id: ``name version (source)`` (cargo < 1.77) or
    ``source#name@version``."""
    if "#" in package_id:
        tail = package_id.rsplit("#", 1)[1]
        return tail.split("@", 1)[0] if "@" in tail else tail.rsplit("/", 1)[-1]
    return package_id.split(" ", 1)[0]


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _unreadable_by_others(root: str, files: Sequence[str]) -> str | None:
    """Why a slot uid (not the owner, not in its group) cannot read the crates, or None."""
    here = root
    while True:
        if not os.stat(here).st_mode & stat.S_IXOTH:
            return f"{here} is not searchable by other users (the sandbox's slot uids)"
        if here == "/":
            break
        here = os.path.dirname(here)
    for name in files:
        if not os.stat(os.path.join(root, name)).st_mode & stat.S_IROTH:
            return f"{root}/{name} is not readable by other users (the sandbox's slot uids)"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rewardkit_sandbox.languages.rust_crates OUT NAME=VERSION... [--vendor DIR]``."""
    parser = argparse.ArgumentParser(
        prog="python -m rewardkit_sandbox.languages.rust_crates",
        description="Build crates for sandboxed Rust programs into OUT (see docs/sandbox.md)",
    )
    parser.add_argument("out", help="the crate directory (outside /tmp, home and the repo)")
    parser.add_argument("crates", nargs="+", metavar="NAME=VERSION",
                        help="a crate and its cargo version requirement, e.g. regex=1")
    parser.add_argument("--vendor", default=None,
                        help="build offline from this directory of crate sources")
    parser.add_argument("--cargo", default=DEFAULT_CARGO, help="the cargo to build with")
    parser.add_argument("--rustc", default=DEFAULT_RUSTC, help="the sandbox's rustc")
    args = parser.parse_args(argv)
    crates = dict(item.partition("=")[::2] for item in args.crates)
    crates = {name: requirement or "*" for name, requirement in crates.items()}
    try:
        built = build_crates(crates, args.out, vendor=args.vendor, cargo=args.cargo,
                             rustc=args.rustc)
    except CrateSetError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    names = ", ".join(sorted(built.externs))
    print(f"{built.directory}: {names} ({len(built.externs)} crates offered)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
