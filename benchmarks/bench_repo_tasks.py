"""repo_tests on real bug-fix tasks: what it pays, and its speed beside bare pytest.

    python benchmarks/bench_repo_tasks.py [--tasks tasks.jsonl] [--group 16] [--json]

The tasks come from benchmarks/build_repo_tasks.py (built first when ``--tasks`` is not
given, from local copies of the repositories named in benchmarks/repo_tasks_sources.toml:
see there; nothing is downloaded). Per task, three patches are scored by ``repo_tests``
(sandbox on, defaults): the honest fix (the project's own), the base tree (a patch that
only adds a notes file, so the tests really run on the unfixed code; an empty completion
is scored too) and the builder's wrong patch; the honest fix must be paid 1.0 and the
others 0.

Speed: per task one GRPO group of ``--group`` rows (the three patches in turn). Each row
is scored by ``repo_tests`` (private copy from the cached base, patch, tests put back,
sandboxed pytest, verdict from the reporter's pipe) and, right after it, the floor: the
same test ids run bare with ``python -m pytest`` in a tree already patched, no sandbox,
no copy; and the same again started the way the sandbox starts pytest (``python -I -S``,
no site start-up: the stricter floor). All run one at a time in this process,
interleaved row by row, so the machine's load falls on each alike; the load average is
printed beside the figures. The ratio is repo_tests seconds / floor seconds over all rows
(goal: at most 1.5).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_repo_tasks import DEFAULT_OUT, apply, build_all, extract
from rewardkit_repo import RepoTests
from rewardkit_repo import workspace as repo_workspace
from rewardkit_repo.repo_tests import _PYTEST_PATH as PYTEST_PATH

from rewardkit import Sample

NOOP = "--- /dev/null\n+++ b/REWARDKIT_NOTES.txt\n@@ -0,0 +1 @@\n+nothing changed\n"


def load_tasks(path: Path | None, mirror_root: Path) -> list[dict[str, Any]]:
    if path is not None:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows, left_out = build_all(mirror_root, {})
    for reason in left_out:
        print(f"left out {reason}", file=sys.stderr)
    DEFAULT_OUT.parent.mkdir(parents=True, exist_ok=True)
    DEFAULT_OUT.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


def reference(task: dict[str, Any]) -> dict[str, Any]:
    keys = ("instance_id", "repo", "base_commit", "test_patch", "FAIL_TO_PASS",
            "PASS_TO_PASS", "test_command")
    return {key: task[key] for key in keys}


def patches(task: dict[str, Any]) -> dict[str, str]:
    return {"honest": task["patch"], "base": NOOP, "wrong": task["wrong_patch"]}


def floor_run(tree: Path, task: dict[str, Any], isolated: bool = False) -> float:
    """Seconds of bare pytest on the wanted tests in ``tree`` (already patched): the same
    ids ``repo_tests`` keeps after collecting their files. ``isolated``: started the way
    the sandbox starts it (``python -I -S``, pytest's folder on the path, no site), which
    takes the interpreter's site start-up out of the comparison."""
    ids = [*task["FAIL_TO_PASS"], *task["PASS_TO_PASS"]]
    options = ["-q", "-p", "no:cacheprovider", *shlex.split(task["test_command"]), *ids]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    if isolated:
        boot = (f"import sys; sys.path[:0] = [{str(tree)!r}, {PYTEST_PATH!r}]; import pytest; "
                f"sys.exit(pytest.main({options!r}))")
        command = [os.path.realpath(sys.executable), "-I", "-S", "-c", boot]
    else:
        command = [sys.executable, "-m", "pytest", *options]
    started = time.perf_counter()
    subprocess.run(command, cwd=tree, env=env, capture_output=True, check=False, timeout=600)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, help="JSONL from build_repo_tasks.py")
    parser.add_argument("--mirror-root", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--group", type=int, default=16, help="rows per task in the speed run")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tasks = load_tasks(args.tasks, args.mirror_root)
    if not tasks:
        print("no tasks: fetch the repositories of benchmarks/repo_tasks_sources.toml")
        return 1
    reward = RepoTests()
    load_before = os.getloadavg()
    table = []
    for task in tasks:
        ref = reference(task)
        row: dict[str, Any] = {"task": task["instance_id"], "fix_commit": task["fix_commit"],
                               "F2P": len(task["FAIL_TO_PASS"]),
                               "P2P": len(task["PASS_TO_PASS"]), "wrong_kind": task["wrong_kind"]}
        for name, patch in [*patches(task).items(), ("empty", "")]:
            score = reward.score(Sample(prompt="fix the bug", completion=patch, reference=ref))
            row[name] = score.value if score.status == "ok" else str(score.status)
            row[f"{name}_reason"] = score.reason[:80]
        table.append(row)
        print(f"{row['task']:<48} honest {row['honest']}  base {row['base']}  "
              f"wrong {row['wrong']}  empty {row['empty']}", file=sys.stderr)
    speed = []
    before = dict(repo_workspace.stats)
    with tempfile.TemporaryDirectory() as scratch:
        for task in tasks:
            ref, kinds = reference(task), patches(task)
            trees = {}
            for name, patch in kinds.items():
                tree = Path(scratch, task["instance_id"], name)
                extract(task["repo"], task["base_commit"], tree)
                assert apply(tree, patch) and apply(tree, task["test_patch"])
                trees[name] = tree
            order = [list(kinds)[index % len(kinds)] for index in range(args.group)]
            rk = fl = iso = 0.0
            for name in order:
                started = time.perf_counter()
                reward.score(Sample(prompt="fix the bug", completion=kinds[name], reference=ref))
                rk += time.perf_counter() - started
                fl += floor_run(trees[name], task)
                iso += floor_run(trees[name], task, isolated=True)
            speed.append({"task": task["instance_id"], "rows": args.group,
                          "repo_tests_s": round(rk, 2), "floor_s": round(fl, 2),
                          "floor_isolated_s": round(iso, 2), "ratio": round(rk / fl, 2),
                          "ratio_isolated": round(rk / iso, 2)})
            print(f"{task['instance_id']:<48} repo_tests {rk:6.2f} s  bare pytest {fl:6.2f} s"
                  f"  -I -S {iso:6.2f} s  ratio {rk / fl:.2f} / {rk / iso:.2f}", file=sys.stderr)
    load_after = os.getloadavg()
    rk_total = sum(item["repo_tests_s"] for item in speed)
    fl_total = sum(item["floor_s"] for item in speed)
    iso_total = sum(item["floor_isolated_s"] for item in speed)
    rows = args.group * len(tasks)
    cache = {key: repo_workspace.stats[key] - before[key] for key in before}
    summary = {
        "tasks": len(tasks),
        "honest_paid": sum(row["honest"] == 1.0 for row in table),
        "base_paid": sum(row["base"] not in (0.0,) for row in table),
        "wrong_paid": sum(row["wrong"] not in (0.0,) for row in table),
        "rows_timed": rows,
        "repo_tests_rows_per_s": round(rows / rk_total, 2),
        "floor_rows_per_s": round(rows / fl_total, 2),
        "floor_isolated_rows_per_s": round(rows / iso_total, 2),
        "ratio": round(rk_total / fl_total, 2),
        "ratio_isolated": round(rk_total / iso_total, 2),
        "goal_ratio": 1.5,
        "cache": cache,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps({"table": table, "speed": speed, "summary": summary}, indent=1))
        return 0
    print(f"{'task':<48} {'F2P':>3} {'P2P':>3} {'honest':>6} {'base':>5} {'wrong':>5}  wrong patch")
    for row in table:
        print(f"{row['task']:<48} {row['F2P']:>3} {row['P2P']:>3} {row['honest']!s:>6} "
              f"{row['base']!s:>5} {row['wrong']!s:>5}  {row['wrong_kind'][:60]}")
    print()
    print(f"{'task':<48} {'rows':>4} {'repo_tests s':>12} {'bare pytest s':>13} "
          f"{'-I -S s':>7} {'ratio':>5} {'ratio -I -S':>11}")
    for item in speed:
        print(f"{item['task']:<48} {item['rows']:>4} {item['repo_tests_s']:>12} "
              f"{item['floor_s']:>13} {item['floor_isolated_s']:>7} {item['ratio']:>5} "
              f"{item['ratio_isolated']:>11}")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
