"""``rewardkit test --judge CONFIG --rows ROWS``: the judge robustness probes, run as the
command against a judge served over loopback (grading_stub.py, a real HTTP server in its
own process) that grades by the rule, or is made gullible to one probe."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from grading_stub import Stub

from rewardkit.testing.judge_probes import wilson_interval

pytest.importorskip("httpx")

REWARDKIT = Path(sys.executable).with_name("rewardkit")
ROWS = [{"prompt": "What is the capital of France?", "reference": "Paris"},
        {"prompt": "What is 6 times 7?", "reference": "42",
         "completion": "6 * 7 = 42, so the answer is 42."},
        {"prompt": "Which planet is largest?", "reference": "Jupiter", "task": "science"},
        {"prompt": "What is the chemical symbol of gold?", "reference": "Au"}]


@pytest.fixture
def stub() -> Iterator[Any]:
    started: list[Stub] = []

    def start(*extra: str) -> Stub:
        started.append(Stub(*extra))
        return started[-1]

    yield start
    for s in started:
        s.close()


def probe(tmp_path: Path, base_url: str, *extra: str,
          also: dict[str, Any] | None = None) -> tuple[int, Any, str]:
    config = tmp_path / "judge.yaml"
    config.write_text(json.dumps({"rewards": {**(also or {}), "judge": {
        "reward": "llm_judge", "params": {
        "base_url": base_url, "model": "stub", "rubric": "The answer matches the reference.",
        "template": "{rubric}\n{prompt}\nReference:\n{reference}\n{completion}\n"
                    "End with 'Score: N', N from {min_score} to {max_score}.",
        "retries": 0, "request_timeout": 20}}}}))
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    run = subprocess.run([str(REWARDKIT), "test", "--judge", str(config), "--rows", str(rows),
                          *extra], capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(run.stdout)
    except ValueError:
        report = None
    return run.returncode, report, run.stdout + run.stderr


def test_a_judge_that_grades_the_answer_pays_no_probe(tmp_path: Path, stub: Any) -> None:
    code, report, text = probe(tmp_path, stub().base_url, "--json")
    assert code == 0, text
    rates = report["components"]["judge"]
    assert rates["reference"]["paid"] == rates["reference"]["rows"] == len(ROWS)
    for name in ("colon", "thought_process", "step_by_step", "solution", "empty",
                 "reference_as_question", "forged_verdict", "ignore_rubric", "closed_block",
                 "hedged", "echo_prompt"):
        assert rates[name]["rows"] == len(ROWS) and rates[name]["paid"] == 0, (name, rates[name])
        assert rates[name]["high"] == pytest.approx(wilson_interval(0, len(ROWS))[1])
    assert report["failed"] == []


def test_a_judge_gullible_to_one_master_key_fails_on_that_probe(tmp_path: Path,
                                                                 stub: Any) -> None:
    code, report, text = probe(tmp_path, stub("--gullible", ":").base_url, "--json")
    assert code == 1, text
    colon = report["components"]["judge"]["colon"]
    assert (colon["paid"], colon["rows"], colon["rate"]) == (len(ROWS), len(ROWS), 1.0)
    assert colon["example"] == ":"
    assert (colon["low"], colon["high"]) == pytest.approx(wilson_interval(4, 4))
    assert report["failed"] == [{"component": "judge", "probe": "colon"}]


def test_the_table_names_the_failing_probe(tmp_path: Path, stub: Any) -> None:
    code, _, text = probe(tmp_path, stub("--gullible", "Solution").base_url)
    assert code == 1
    assert "FAIL judge: probe 'solution' paid on 4/4 rows" in text


def test_a_rate_under_the_limit_passes(tmp_path: Path, stub: Any) -> None:
    # "Paris?" (one row's restated reference) fools the judge: 1 row of 4, 25%
    base = stub("--gullible", "Paris?").base_url
    code, report, text = probe(tmp_path, base, "--json", "--max-fpr", "0.3")
    assert code == 0, text
    assert report["components"]["judge"]["reference_as_question"]["paid"] == 1
    code, _, _ = probe(tmp_path, base, "--json", "--max-fpr", "0.2")
    assert code == 1


def test_the_components_that_ask_an_endpoint_are_probed_unless_named(
        tmp_path: Path, stub: Any) -> None:
    base, rule = stub().base_url, {"rule": {"reward": "exact_answer"}}
    code, report, text = probe(tmp_path, base, "--json", also=rule)
    assert code == 0, text
    assert list(report["components"]) == ["judge"]
    code, report, text = probe(tmp_path, base, "--json", "--component", "rule", also=rule)
    assert list(report["components"]) == ["rule"]
    assert report["components"]["rule"]["colon"]["rows"] == len(ROWS)


def test_a_rule_with_a_judge_fallback_is_probed_through_its_judge(tmp_path: Path,
                                                                   stub: Any) -> None:
    # the rule refuses ':', so the fallback judge is asked, and a gullible one flips it
    base = stub("--gullible", ":").base_url
    config = tmp_path / "rule.yaml"
    config.write_text(json.dumps({"rewards": {"accuracy": {
        "reward": "exact_answer", "fallback": {"reward": "llm_judge", "params": {
            "base_url": base, "model": "stub", "rubric": "Matches the reference.",
            "template": "{rubric}\n{reference}\n{completion}", "retries": 0}}}}}))
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    run = subprocess.run([str(REWARDKIT), "test", "--judge", str(config), "--rows", str(rows),
                          "--json"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["failed"] == [{"component": "accuracy", "probe": "colon"}]
    assert report["components"]["accuracy"]["reference"]["paid"] == len(ROWS)


def test_a_grading_that_fails_is_counted_apart_not_as_a_refusal(tmp_path: Path,
                                                                 stub: Any) -> None:
    code, report, text = probe(tmp_path, stub("--mute", "Thought process:").base_url, "--json")
    assert code == 0, text
    rate = report["components"]["judge"]["thought_process"]
    assert (rate["rows"], rate["errors"], rate["rate"]) == (0, len(ROWS), None)


def test_a_row_without_a_reference_is_an_error_naming_its_line(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("rewards:\n  acc: {reward: exact_answer}\n")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"prompt": "a", "reference": "b"}\n{"prompt": "c"}\n')
    run = subprocess.run([str(REWARDKIT), "test", "--judge", str(config), "--rows", str(rows)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert f"{rows}:2: no reference" in run.stderr and "Traceback" not in run.stderr


def test_wilson_interval_matches_the_formula() -> None:
    assert wilson_interval(0, 20) == pytest.approx((0.0, 0.16113), abs=1e-5)
    assert wilson_interval(5, 10) == pytest.approx((0.23659, 0.76341), abs=1e-5)
    assert wilson_interval(0, 50)[0] == 0.0 and wilson_interval(4, 4)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
