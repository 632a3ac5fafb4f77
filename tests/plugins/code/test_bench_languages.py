"""benchmarks/bench_languages.py --quick, so the per-language benchmark of `make bench`
cannot rot: every correct program of each language passes, every broken variant fails
(by what it does wrong, not by not compiling), the rates are measured, and run_all's
headline parser reads what the script wrote. A language whose toolchain is missing here
is skipped with the script's own reason."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from benchmark_scripts import BENCHMARKS, load

LANGUAGES = ("python", "c", "cpp", "java", "javascript", "go", "rust")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("bench") / "languages.json"
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "bench_languages.py"), "--quick",
                           "--json", str(out)], capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, json.loads(out.read_text())


@pytest.mark.parametrize("language", LANGUAGES)
def test_correct_programs_pass_and_broken_ones_fail(
    quick_run: tuple[str, dict[str, Any]], language: str
) -> None:
    row = quick_run[1]["languages"][language]
    if "toolchain_missing" in row:
        pytest.skip(row["toolchain_missing"])
    correct, broken = row["correct"], row["broken"]
    assert correct["programs"] >= 2 and correct["passed"] == correct["programs"], correct
    assert broken["programs"] >= 2 and broken["passed"] == 0, broken
    assert row["broken_not_compiled"] == [] and row["errors"] == {}, row
    assert row["programs_per_s"] > 0 and row["warm_programs_per_s"] > 0
    assert row["p50_ms"] > 0 and row["warm_p50_ms"] > 0
    if language != "python":  # one build per program; the warm pass is all cache hits
        assert row["builds"]["compiled"] == correct["programs"] + broken["programs"]
        assert row["builds"]["cache_hits"] >= correct["programs"]


def test_the_figures_are_labelled_and_read_by_run_all(
    quick_run: tuple[str, dict[str, Any]],
) -> None:
    stdout, data = quick_run
    assert "not HumanEval-X" in stdout.splitlines()[0] and "not HumanEval-X" in data["label"]
    run_all = load("run_all")
    figures = run_all.languages_headlines(stdout, data)
    assert len(figures) == len(LANGUAGES)
    present = [f for f in figures if "toolchain missing" not in f.label]
    assert present and all(f.met is True and f.unit == "/s" and f.value > 0 for f in present)
    assert any(b.script == "bench_languages.py" for b in run_all.BENCHES)


def test_run_all_runs_humaneval_x_only_on_data_it_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_all = load("run_all")
    monkeypatch.delenv(run_all.HUMANEVAL_X_ENV, raising=False)
    assert run_all.humaneval_x_bench() is None
    monkeypatch.setenv(run_all.HUMANEVAL_X_ENV, "/data/humaneval-x")
    bench = run_all.humaneval_x_bench()
    assert bench.script == "bench_humaneval_x.py" and bench.args[0] == "/data/humaneval-x"
    assert (BENCHMARKS / bench.script).is_file()
    line = "go canonical: 164/164 passed, 3.40 programs/s\ngo exit: 0/164 passed, 4.10 programs/s"
    (figure,) = run_all.humaneval_x_headlines(line, None)
    assert figure.value == 3.4 and "canonical 164/164, exit 0/164" in figure.label
