"""repo_tests' Go runner: what sending the workspace and the Go build cache seed to the
sandboxed driver as base64 inside JSON costs on a Go module of real size.

    python benchmarks/bench_repo_go_header.py [--package image/png] [--rows 4]

Builds a git repository, in a temporary folder removed after, from the Go toolchain's own
package ``--package`` (``GOROOT/src/<package>`` with its testdata, as module
``example.com/<package>``: a real library's sources and tests, standard library only;
the Go version is printed), and scores ``--rows`` rows of ``repo_tests`` with ``runner:
go`` (a patch that adds a notes file, two of the package's tests wanted), timing each
row. Then, on the header of one more row, it times what the encoding adds: base64 of the
workspace's files (once per process and base tree: the files a row leaves are cached),
base64 of the Go build cache seed (every row), ``json.dumps`` of the header, and on the
driver's side ``json.loads`` plus ``b64decode`` of every file; against the same files
sent raw (a length header and the bytes, joined once and split once). Prints each part
in milliseconds and as a share of a row's median wall time. The machine's load average is
printed beside the figures.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "plugins" / "repo"))

from tiny_repo import git

from rewardkit import Sample

#: packages whose sources and tests import no ``internal/`` package (a module copy builds)
TESTS = {"image/png": ["TestReader", "TestWriter"], "go/parser": ["TestParseFile", "TestValid"],
         "bufio": ["TestReader", "TestWriter"]}


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def best(fn: object, repeat: int = 5) -> float:
    """Best of ``repeat`` wall seconds of ``fn()``."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="image/png", choices=sorted(TESTS))
    parser.add_argument("--rows", type=int, default=4)
    args = parser.parse_args()
    from rewardkit_repo import RepoTests, go_runner, workspace
    from rewardkit_repo.workspace import prepare

    goroot = go_runner.goroot()
    source = Path(goroot, "src", args.package)
    if not (Path(goroot, "bin", "go").is_file() and source.is_dir()):
        print(f"error: no Go toolchain with the sources of {args.package} at {goroot} "
              "(set REWARDKIT_GOROOT)", file=sys.stderr)
        return 2
    version = subprocess.run([f"{goroot}/bin/go", "version"], capture_output=True,
                             text=True, check=False).stdout.strip()
    temp = Path(tempfile.mkdtemp(prefix="bench-repo-go-"))
    try:
        repo = temp / "repo"
        shutil.copytree(source, repo)
        (repo / "go.mod").write_text(f"module example.com/{args.package}\n\ngo 1.19\n")
        git(repo, "init", "-q")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "base")
        commit = git(repo, "rev-parse", "HEAD")
        (repo / "NOTES").write_text("notes\n")
        git(repo, "add", "NOTES")
        patch = git(repo, "diff", "--cached", "HEAD", raw=True)
        git(repo, "reset", "-q", "--hard", "HEAD")
        reference = {"repo": str(repo), "base_commit": commit, "test_patch": "",
                     "FAIL_TO_PASS": TESTS[args.package], "PASS_TO_PASS": []}
        reward = RepoTests({"runner": "go", "time_budget_s": 300})
        tracked = git(repo, "ls-files").splitlines()
        print(f"{version}; module example.com/{args.package}: {len(tracked)} files, "
              f"{sum((repo / name).stat().st_size for name in tracked):,} bytes")
        print(f"load average before: {load()}")
        walls = []
        for index in range(args.rows):
            t0 = time.perf_counter()
            score = reward.score(Sample(prompt="", completion=patch, reference=reference))
            walls.append(time.perf_counter() - t0)
            print(f"  row {index}: {walls[-1]:.2f} s, {score.value} ({score.reason})")
        row = statistics.median(walls[1:] if len(walls) > 1 else walls)

        prepared = prepare(str(repo), commit, patch, "", go_runner.is_protected)
        assert not isinstance(prepared, str)
        try:
            header = go_runner.build_header(prepared, TESTS[args.package], 300)
            names = list(header["files"])
            raw = {name: Path(prepared.folder, name).read_bytes() for name in names}
        finally:
            prepared.close()
        from rewardkit_code.sandboxes import shared_sandbox_pool
        from rewardkit_sandbox.languages import go_cache_seed

        seed = go_cache_seed(shared_sandbox_pool(None, (goroot,)),
                             os.path.join(goroot, "bin", "go"))
        go_runner._seeded(shared_sandbox_pool(None, (goroot,)), header)
        text = json.dumps(header)

        def files_b64() -> None:
            for data in raw.values():
                base64.b64encode(data).decode()

        def seed_b64() -> None:
            {name: base64.b64encode(data).decode() for name, data in seed.items()}

        def driver_side() -> None:
            got = json.loads(text)
            for _, data in got["files"].values():
                base64.b64decode(data)
            for data in got["gocache"].values():
                base64.b64decode(data)

        every = {**raw, **{"gocache/" + k: v for k, v in seed.items()}}

        def raw_both() -> None:  # a length header and the bytes: joined, then split
            blob = b"".join(every.values())
            lengths = json.dumps([len(v) for v in every.values()])
            sizes, offset = json.loads(lengths), 0
            for size in sizes:
                blob[offset:offset + size]
                offset += size

        data_bytes = sum(map(len, raw.values()))
        seed_bytes = sum(map(len, seed.values()))
        parts = {"base64 of the workspace's files (once per base tree)": best(files_b64),
                 "base64 of the seed (every row)": best(seed_b64),
                 "json.dumps of the header (every row)": best(lambda: json.dumps(header)),
                 "driver: json.loads + b64decode of every file (every row)": best(driver_side),
                 "the same bytes raw: join + length header + split (every row)": best(raw_both)}
        print(f"header: {len(names)} files, {data_bytes:,} bytes; seed: {len(seed)} files, "
              f"{seed_bytes:,} bytes; JSON header {len(text):,} bytes "
              f"({len(text) / (data_bytes + seed_bytes):.2f}x the raw bytes)")
        print(f"row wall time, median of rows 1..{args.rows - 1}: {row:.2f} s")
        for name, seconds in parts.items():
            print(f"  {name:<62}{seconds * 1000:8.2f} ms  {seconds / row:7.2%} of a row")
        every_row = sum(v for k, v in parts.items() if "every row" in k and "raw" not in k)
        raw_s = parts["the same bytes raw: join + length header + split (every row)"]
        print(f"  encoding paid every row, together: {every_row * 1000:.2f} ms "
              f"({every_row / row:.2%} of a row); raw instead: {raw_s * 1000:.2f} ms")
        print(f"load average after: {load()}")
        print(f"process cache stats: {workspace.stats}")
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
