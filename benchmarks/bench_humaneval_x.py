"""HumanEval-X in the local sandbox: every canonical solution of C++, Go, Java, JavaScript
and Rust against its tests, and broken variants of each that must fail.

Data: a local copy of HumanEval-X, checked against ``humaneval_x_sources.toml`` (nothing
of it is committed). Variants: ``canonical`` (must pass), ``exit`` (the canonical
solution that first exits with status 0: ``exit(0)``, ``System.exit(0)``,
``process.exit(0)``, ``os.Exit(0)``, ``std::process::exit(0)``; must fail: it is the
exit-code forgery), ``mutant`` (the first comparison or arithmetic operator of the
solution flipped; should fail, an equivalent mutant may pass), and, only when named,
``empty`` (the function's body left empty, the shortest output there is; must fail:
flowing off a non-void C++ function is undefined behaviour, issue 33). Reports, per
language and variant, how many passed, the programs per second, and the compile cache's
effect (the canonical pass run again: every build a cache hit).

    python benchmarks/bench_humaneval_x.py PATH/humaneval-x [--languages cpp,js] [--limit N]

JavaScript's JS/162 ``require``s the npm package js-md5: it is installed once with npm
into ``--npm-cache`` and offered to the programs as ``node_modules`` (read-only in the
sandbox); without npm (or its registry) that problem fails and the run says why.

Rust's declarations ``use`` the crates rand, regex and md5 (upstream grades in a cargo
project with them): ``--rust-crates DIR`` offers a crate directory built by
``python -m rewardkit_sandbox.languages.rust_crates DIR regex=1 md5=0.7 rand=0.8``
(docs/sandbox.md);
without it those ``use`` lines are dropped and the solutions that need a crate fail.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rewardkit_sandbox import SandboxPool, SandboxResult
from rewardkit_sandbox.languages import CompileCache, CompiledRunner

MANIFEST = Path(__file__).resolve().parent / "humaneval_x_sources.toml"
FOLDERS = {"cpp": "cpp", "go": "go", "java": "java", "javascript": "js", "rust": "rust"}
_EXIT = {
    "cpp": "exit(0);",
    "go": "os.Exit(0)",
    "java": "System.exit(0);",
    "javascript": "process.exit(0);",
    "rust": "std::process::exit(0);",
}
#: npm packages the JavaScript problems require (JS/162: js-md5), pinned
NPM_PACKAGES = ("js-md5@0.7.3",)
_CRATES = re.compile(r"^\s*use\s+(rand|regex|md5)\b.*$", re.MULTILINE)
_OPERATORS = [("<=", ">"), (">=", "<"), ("==", "!="), ("!=", "=="), (" < ", " >= "),
              (" > ", " <= "), (" + ", " - "), (" - ", " + ")]


def load(root: Path) -> dict[str, list[dict[str, str]]]:
    """The problems per language, after checking every file's checksum."""
    source = tomllib.loads(MANIFEST.read_text(encoding="utf-8"))["humaneval_x"]
    problems: dict[str, list[dict[str, str]]] = {}
    for relative, digest in source["files"].items():
        path = root / relative
        if not path.is_file():
            sys.exit(f"{path} not found: give the humaneval-x folder of {source['origin']}")
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != digest:
            sys.exit(f"{path}: sha256 {got[:16]}..., the manifest names {digest[:16]}... "
                     f"(commit {source['commit']})")
        language = next(name for name, folder in FOLDERS.items()
                        if relative.startswith(folder + "/"))
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            problems[language] = [json.loads(line) for line in handle if line.strip()]
    return problems


def program(language: str, problem: dict[str, str], body: str, crates: bool = False) -> str:
    """The candidate program of ``problem`` with solution ``body`` (Rust: the crates'
    ``use`` lines kept only when ``crates`` are offered)."""
    if language == "rust":
        declaration = problem["declaration"]
        return (declaration if crates else _CRATES.sub("", declaration)) + body
    if language == "cpp":  # the declaration's includes, then the prompt
        includes = [line for line in problem["declaration"].splitlines()
                    if line.startswith(("#include", "using namespace"))]
        return "\n".join(includes) + "\n" + problem["prompt"] + body
    return problem["prompt"] + body


def variant(
    language: str, problem: dict[str, str], name: str, crates: bool = False
) -> str | None:
    body = problem["canonical_solution"]
    if name == "exit":
        code = program(language, problem, f"\n    {_EXIT[language]}\n" + body, crates)
        return 'import "os"\n' + code if language == "go" else code
    if name == "empty":  # Java's prompt ends inside class Solution
        return program(language, problem, "    }\n}\n" if language == "java" else "}\n", crates)
    if name == "mutant":
        for old, new in _OPERATORS:
            if old in body:
                return program(language, problem, body.replace(old, new, 1), crates)
        return None
    return program(language, problem, body, crates)


def needs_crate(language: str, problem: dict[str, str]) -> bool:
    return language == "rust" and bool(re.search(r"\b(md5|Regex|rand::|Rng)\b",
                                                 problem["canonical_solution"]))


def npm_modules(cache: Path) -> Path | None:
    """``cache/node_modules`` holding :data:`NPM_PACKAGES`, installed with npm the first
    time; None (after saying why) when npm is missing or cannot install them."""
    modules = cache / "node_modules"
    names = [spec.rsplit("@", 1)[0] for spec in NPM_PACKAGES]
    if all((modules / name).is_dir() for name in names):
        return modules
    npm = shutil.which("npm")
    if npm is None:
        print("npm not found: JavaScript problems needing npm packages will fail")
        return None
    cache.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund",
                           "--no-save", *NPM_PACKAGES], capture_output=True, text=True,
                          timeout=600, check=False)
    if done.returncode != 0:
        print(f"npm install {' '.join(NPM_PACKAGES)} failed: {done.stderr.strip()[-300:]}")
        return None
    return modules


def run_all(
    runner: CompiledRunner, jobs: list[tuple[str, str]], slots: int
) -> tuple[list[SandboxResult], float]:
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=slots) as executor:
        results = list(executor.map(lambda job: runner.run(job[0], tests=[job[1]]), jobs))
    return results, time.monotonic() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the humaneval-x folder of a local copy")
    parser.add_argument("--languages", default=",".join(FOLDERS))
    parser.add_argument("--variants", default="canonical,exit,mutant")
    parser.add_argument("--limit", type=int, default=None, help="first N problems only")
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--uid-base", type=int, default=None,
                        help="first slot uid (default: a free range the pool claims, so two "
                        "runs at once never share uids)")
    parser.add_argument("--rust-crates", default=None,
                        help="a crate directory (rewardkit_sandbox.languages.rust_crates) for Rust")
    parser.add_argument("--flags", default=None,
                        help="compiler flags instead of the language's defaults, split as a shell "
                        "would ('' for none: e.g. Go unstripped, as before -ldflags=-s -w)")
    parser.add_argument("--npm-cache", type=Path,
                        default=Path.home() / ".cache" / "rewardkit" / "humaneval-x-npm",
                        help="where the npm packages of the JavaScript problems are installed")
    args = parser.parse_args(argv)
    problems = load(args.root)
    figures: dict[str, object] = {}
    modules = npm_modules(args.npm_cache) if "javascript" in args.languages else None
    imports = [str(modules)] if modules else []
    with SandboxPool(size=args.slots, uid_base=args.uid_base, import_paths=imports) as pool:
        for language in args.languages.split(","):
            chosen = problems[language][: args.limit]
            cache = CompileCache()
            crates = args.rust_crates if language == "rust" else None
            offered = {"node_modules": modules} if language == "javascript" else {}
            runner = CompiledRunner(pool, language, test_timeout_s=20.0, cache=cache,
                                    rust_crates=crates, **offered,
                                    flags=None if args.flags is None else shlex.split(args.flags))
            if runner.toolchain_problem:
                print(f"{language}: {runner.toolchain_problem}")
                continue
            row: dict[str, object] = {"problems": len(chosen)}
            if offered:
                row["npm_packages"] = list(NPM_PACKAGES) if modules else []
            if runner.rust_crates is not None:
                row["rust_crates"] = sorted(runner.rust_crates.externs)
            for name in args.variants.split(","):
                made = [(variant(language, p, name, crates is not None), p) for p in chosen]
                jobs = [(code, p.get("test_setup", "") + p["test"]) for code, p in made
                        if code is not None]
                kept = [p for code, p in made if code is not None]
                results, seconds = run_all(runner, jobs, args.slots)
                passed = [p["task_id"] for p, r in zip(kept, results, strict=True) if r.ok]
                failed = [(p["task_id"], r) for p, r in zip(kept, results, strict=True)
                          if not r.ok]
                row[name] = {"programs": len(jobs), "passed": len(passed),
                             "programs_per_s": round(len(jobs) / seconds, 2)}
                if name == "canonical":
                    crate = [task for task, _ in failed
                             if needs_crate(language, next(p for p in chosen
                                                           if p["task_id"] == task))]
                    row[name]["needs_crate"] = crate  # type: ignore[index]
                    row[name]["failed"] = {  # type: ignore[index]
                        task: f"{r.status}: {(r.error or '')[:160]}" for task, r in failed
                        if task not in crate}
                    _, warm = run_all(runner, jobs, args.slots)
                    row["cached_rerun_programs_per_s"] = round(len(jobs) / warm, 2)
                else:
                    row[name]["passed_ids"] = passed  # type: ignore[index]
                print(f"{language} {name}: {len(passed)}/{len(jobs)} passed, "
                      f"{len(jobs) / seconds:.2f} programs/s", flush=True)
            builds = len(cache._builds)  # what the cache holds: compiler logs and artifacts
            row["cache"] = {"hits": cache.hits, "misses": cache.misses, "builds": builds,
                            "bytes": cache._bytes,
                            "mb_per_build": round(cache._bytes / max(builds, 1) / 1e6, 2)}
            figures[language] = row
            print(json.dumps({language: row}, indent=1), flush=True)
    if args.json:  # the languages run replace theirs; the others are kept
        earlier = args.json.read_text() if args.json.is_file() else ""
        kept = json.loads(earlier) if earlier.strip() else {}  # an empty file: nothing kept
        args.json.write_text(json.dumps({**kept, **figures}, indent=1) + "\n")


if __name__ == "__main__":
    main()
