"""Build real ``repo_tests`` tasks from public projects' bug-fix commits (issue 34 item 5).

    python benchmarks/build_repo_tasks.py [--mirror-root DIR] [--source OWNER/NAME=PATH ...]
        [--out tasks.jsonl]

For each ``[[task]]`` of benchmarks/repo_tasks_sources.toml (a repository and the commit
that fixed a bug and added or changed its test), from a local git copy of the repository
(``--source owner/name=path``, else ``<mirror-root>/owner+name/repo``, the layout the
session's fetch tool leaves): the base commit is the fix's first parent; the fix's diff is
split into the model-side patch (the fix's ``.py`` files that are not tests: the honest
fix) and the test patch (every file ``repo_tests`` treats as a test or test
configuration). Then the test modules the test patch touches are run bare with pytest,
twice, on the base and on the fixed tree, both with the test patch:
FAIL_TO_PASS = passed after and not before, PASS_TO_PASS = up to five that pass on both.
A wrong patch is found the same way: the first one-token mutation of the fix's added lines
(``<`` for ``<=``, ``is None`` for ``is not None``, ...) under which a FAIL_TO_PASS test
fails, else an edit that only adds a comment to the fixed file. Nothing is invented by
hand and nothing is downloaded: a task whose repository copy is absent is left out with
the reason. The output (one JSON row per task, SWE-bench field names, ``repo`` the local
copy's path) holds the projects' code: keep it out of this repository.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from rewardkit_repo.workspace import is_protected

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "repo_tasks_sources.toml"
DEFAULT_OUT = Path(tempfile.gettempdir()) / "rewardkit-repo-tasks" / "tasks.jsonl"

#: a pytest plugin that writes each test's outcome to the file named by RK_OUTCOMES
_OUTCOMES = '''\
import json, os
_seen = {}
def pytest_runtest_logreport(report):
    before = _seen.get(report.nodeid)
    if report.failed:
        _seen[report.nodeid] = "failed"
    elif report.skipped and before is None:
        _seen[report.nodeid] = "skipped"
    elif report.when == "call" and report.passed and before is None:
        _seen[report.nodeid] = "passed"
def pytest_sessionfinish(session):
    with open(os.environ["RK_OUTCOMES"], "w") as handle:
        json.dump(_seen, handle)
'''

#: one-token mutations tried on the fix's added lines, in this order
MUTATIONS = [(" <= ", " < "), (" < ", " <= "), (" >= ", " > "), (" > ", " >= "),
             (" == ", " != "), (" != ", " == "), (" is not None", " is None"),
             (" is None", " is not None"), (" and ", " or "), (" or ", " and "),
             (" + 1", " - 1"), (" - 1", " + 1"), ("True", "False"), ("False", "True"),
             ("not ", ""), ("return ", "return None and ")]


def git(repo: str, *args: str, binary: bool = False) -> Any:
    done = subprocess.run(["git", "-C", repo, *args], capture_output=True, check=True,
                          text=not binary)
    return done.stdout


def extract(repo: str, commit: str, folder: Path) -> None:
    folder.mkdir(parents=True)
    archive = git(repo, "archive", "--format=tar", commit, binary=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)


def apply(folder: Path, patch: str) -> bool:
    if not patch.strip():
        return True
    return subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=folder,
                          input=patch, text=True, capture_output=True).returncode == 0


def split(diff: str) -> tuple[str, str]:
    """(the fix's non-test ``.py`` part, the test part) of ``git diff`` output."""
    fix, tests = [], []
    for chunk in re.split(r"(?m)^(?=diff --git )", diff):
        match = re.match(r"diff --git a/(\S+) b/(\S+)", chunk)
        if not match:
            continue
        path = match.group(2)
        if is_protected(path):
            tests.append(chunk)
        elif path.endswith(".py"):
            fix.append(chunk)
    return "".join(fix), "".join(tests)


def run_bare(folder: Path, files: list[str], options: list[str], python: str = sys.executable,
             timeout: float = 600) -> dict[str, str]:
    """Each test's outcome when pytest runs ``files`` in ``folder`` (no sandbox)."""
    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, "rk_outcomes.py").write_text(_OUTCOMES)
        out = Path(scratch, "outcomes.json")
        env = {**os.environ, "PYTHONPATH": scratch, "RK_OUTCOMES": str(out),
               "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                        "rk_outcomes", *options, *files], cwd=folder, env=env,
                       capture_output=True, timeout=timeout, check=False)
        return json.loads(out.read_text()) if out.exists() else {}


def outcomes(repo: str, base: str, patches: list[str], files: list[str],
             options: list[str]) -> dict[str, str] | None:
    """Outcomes on ``base`` with ``patches`` applied in turn; None if one does not apply."""
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch, "tree")
        extract(repo, base, tree)
        for patch in patches:
            if not apply(tree, patch):
                return None
        present = [name for name in files if (tree / name).is_file()]
        return run_bare(tree, present, options)


def mutants(patch: str) -> list[tuple[str, str]]:
    """(description, patch) for each one-token mutation of an added line of ``patch``."""
    lines = patch.splitlines(keepends=True)
    found = []
    for old, new in MUTATIONS:
        for index, line in enumerate(lines):
            if line.startswith("+") and not line.startswith("+++") and old in line[1:]:
                mutated = "+" + line[1:].replace(old, new, 1)
                if line[1:].lstrip().startswith("#") or mutated == line:
                    continue
                path = re.findall(r"(?m)^\+\+\+ b/(\S+)", "".join(lines[:index]))[-1]
                found.append((f"{old.strip()!r} -> {new.strip()!r} in an added line of {path}",
                              "".join([*lines[:index], mutated, *lines[index + 1:]])))
    return found


def comment_only(repo: str, base: str, fix: str) -> str:
    """A patch adding one comment line at the top of the first file the fix changes."""
    path = re.search(r"(?m)^\+\+\+ b/(\S+)", fix).group(1)  # type: ignore[union-attr]
    first = git(repo, "show", f"{base}:{path}").splitlines(keepends=True)[:1]
    return (f"--- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n+# fixed, see the tests\n"
            f"{' ' + first[0] if first else ' '}")


def build(repo: str, entry: dict[str, Any], log: Any = sys.stderr) -> dict[str, Any] | str:
    """One task row, or why the commit gives none."""
    fix_commit = git(repo, "rev-parse", f"{entry['fix']}^{{commit}}").strip()
    base = git(repo, "rev-parse", f"{fix_commit}^").strip()
    patch, test_patch = split(git(repo, "diff", "--no-renames", base, fix_commit))
    if not patch or not test_patch:
        return "the fix has no non-test .py part or no test part"
    files = sorted({path for path in re.findall(r"(?m)^\+\+\+ b/(\S+)", test_patch)
                    if re.search(r"(^|/)(test_[^/]*|[^/]*_test)\.py$", path)})
    if not files:
        return "the test patch touches no test module"
    options = shlex.split(entry.get("test_command", ""))
    before = outcomes(repo, base, [test_patch], files, options)
    after = outcomes(repo, base, [patch, test_patch], files, options)
    if before is None or after is None:
        return "the patches do not apply to the parent"
    fail_to_pass = sorted(t for t, o in after.items()
                          if o == "passed" and before.get(t) != "passed")
    both = sorted(t for t, o in after.items() if o == "passed" and before.get(t) == "passed")
    if not fail_to_pass:
        return f"no test fails before and passes after ({len(after)} ran)"
    pass_to_pass = both[:: max(1, len(both) // 5)][:5]
    wanted = fail_to_pass + pass_to_pass
    wrong, kind = None, ""
    for description, candidate in mutants(patch):
        result = outcomes(repo, base, [candidate, test_patch], files, options)
        if result is not None and any(result.get(t) != "passed" for t in wanted):
            wrong, kind = candidate, f"mutation: {description}"
            break
    if wrong is None:
        wrong, kind = comment_only(repo, base, patch), "a comment added, the bug left"
    print(f"  {entry['repo']}@{fix_commit[:10]}: {len(fail_to_pass)} FAIL_TO_PASS, "
          f"{len(pass_to_pass)} PASS_TO_PASS, wrong patch: {kind}", file=log)
    name = entry["repo"].replace("/", "__")
    return {"instance_id": f"{name}-{fix_commit[:10]}", "source": entry["repo"],
            "fix_commit": fix_commit, "repo": repo, "base_commit": base, "patch": patch,
            "test_patch": test_patch, "FAIL_TO_PASS": fail_to_pass,
            "PASS_TO_PASS": pass_to_pass, "test_command": entry.get("test_command", ""),
            "test_files": files, "wrong_patch": wrong, "wrong_kind": kind}


def locate(name: str, sources: dict[str, str], mirror_root: Path) -> str | None:
    if name in sources:
        return sources[name]
    mirrored = mirror_root / name.replace("/", "+") / "repo"
    return str(mirrored) if mirrored.is_dir() else None


def build_all(mirror_root: Path, sources: dict[str, str], only: list[str] | None = None,
              log: Any = sys.stderr) -> tuple[list[dict[str, Any]], list[str]]:
    entries = tomllib.loads(SOURCES.read_text())["task"]
    rows, left_out = [], []
    for entry in entries:
        if only and not any(entry["fix"].startswith(prefix) for prefix in only):
            continue
        label = f"{entry['repo']}@{entry['fix'][:10]}"
        repo = locate(entry["repo"], sources, mirror_root)
        if repo is None:
            left_out.append(f"{label}: no local copy of {entry['repo']}")
            continue
        try:
            row = build(repo, entry, log)
        except subprocess.CalledProcessError as error:
            row = f"git failed: {error.stderr!s:.200}"
        if isinstance(row, str):
            left_out.append(f"{label}: {row}")
        else:
            rows.append(row)
    return rows, left_out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror-root", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--source", action="append", default=[], metavar="OWNER/NAME=PATH")
    parser.add_argument("--only", action="append", help="fix commit prefixes to build")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    sources = dict(item.split("=", 1) for item in args.source)
    rows, left_out = build_all(args.mirror_root, sources, args.only)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    for reason in left_out:
        print(f"left out {reason}", file=sys.stderr)
    print(f"{len(rows)} tasks written to {args.out}; {len(left_out)} left out")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
