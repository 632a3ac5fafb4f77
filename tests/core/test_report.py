"""`rewardkit report`: the figures of the page and the page itself (no network, the
sections a reader needs). The page in a real browser: test_report_browser.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scored_run import write_scored_run

from rewardkit.report import build_report, read_curves
from rewardkit.report.analysis import histogram, pearson, read_scored, summarise
from rewardkit.report.hacking import ComponentRoles, flag_samples, repetition


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rewardkit.cli", *args], capture_output=True,
                          text=True, timeout=120)


def row(prompt: str, total: float | None, **values: float | None) -> dict:
    return {"prompt": prompt, "completion": "c", "reward": total,
            "components": {k: {"value": v, "status": "ok" if v is not None else "error",
                               "reason": ""} for k, v in values.items()}}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_scored_run(tmp_path_factory.mktemp("run"))


def test_share_of_groups_without_variance_counts_groups_of_equal_totals():
    rows = [row("a", 1.0, f=1.0, acc=1.0), row("a", 1.0, f=1.0, acc=0.0),   # total flat
            row("b", 1.0, f=1.0, acc=1.0), row("b", 0.0, f=0.0, acc=0.0),   # signal
            row("c", 0.5, f=1.0, acc=None), row("c", 0.5, f=1.0, acc=None)]  # flat, acc unscored
    summary = summarise(rows)
    assert summary.zero_variance_groups == 2 and summary.zero_variance_share == pytest.approx(2 / 3)
    assert summary.components["f"].zero_variance_groups == 2
    assert summary.components["f"].groups_scored == 3
    # a group where the component scored fewer than two samples is not counted for it
    assert summary.components["acc"].groups_scored == 2
    assert summary.components["acc"].zero_variance_groups == 0


def test_status_counts_and_correlation():
    rows = [row("p", 1.0, x=float(i), y=2.0 * i, z=-float(i)) for i in range(5)]
    rows.append(row("p", None, x=None, y=1.0, z=0.0))
    summary = summarise(rows)
    assert summary.components["x"].counts == {"ok": 5, "skipped": 0, "error": 1, "timeout": 0}
    assert summary.correlation["x"]["y"] == pytest.approx(1.0)
    assert summary.correlation["x"]["z"] == pytest.approx(-1.0)
    assert summary.null_totals == 1


def test_pearson_is_none_for_a_constant_side_or_too_few_pairs():
    assert pearson([1, 1, 1], [1, 2, 3]) is None
    assert pearson([1, 2], [1, 2]) is None
    assert pearson([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)


def test_histogram_bins_few_distinct_values_by_value_and_many_by_range():
    assert histogram([0.0, 1.0, 1.0, 0.5]) == [(0.0, 0.0, 1), (0.5, 0.5, 1), (1.0, 1.0, 2)]
    bins = histogram([i / 100 for i in range(100)], bins=10)
    assert len(bins) == 10 and sum(c for _, _, c in bins) == 100


def test_repetition_share_of_repeated_trigrams():
    assert repetition("one two three four five six seven eight nine ten " * 2) < 0.5
    assert repetition("I add them again. " * 40) > 0.9
    assert repetition("short text") == 0.0
    assert repetition("我觉得答案是七" * 20) > 0.8  # no word spaces: character 3-grams


def test_hacking_flags(run: tuple[Path, Path]):
    rows, _ = read_scored(run[1])
    roles = ComponentRoles.guess(["format", "accuracy", "number"],
                                 {"format": "soft_format", "accuracy": "exact_answer",
                                  "number": "answer_is_number"})
    assert roles == ComponentRoles(("format", "number"), ("accuracy",))
    flags = flag_samples(rows, roles)
    by_completion = {r["completion"]: f for r, f in zip(rows, flags, strict=True)}
    assert by_completion["<think>1+3</think>\n<answer>5</answer>"] == ["format_paid_answer_wrong"]
    assert by_completion["<think>1+3</think>\n<answer>4</answer>"] == []
    rambling = [f for r, f in zip(rows, flags, strict=True) if "again" in r["completion"]]
    assert rambling and all({"long_high_reward", "repetitive_high_reward"} <= set(f)
                            for f in rambling)
    # no reference: accuracy errored, so nothing says the answer is wrong
    errored = [f for r, f in zip(rows, flags, strict=True) if r["prompt"] == "add 9 and 3"]
    assert errored == [[], []]


def test_report_command_writes_an_offline_page_with_every_section(run: tuple[Path, Path],
                                                                  tmp_path: Path):
    config, scored = run
    out = tmp_path / "page.html"
    proc = cli("report", str(scored), "-o", str(out), "--config", str(config), "--steps", "100")
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out} (38 samples, 3 components)" in proc.stdout
    page = out.read_text()
    for anchor in ("overview", "components", "signal", "correlation", "training", "hacking",
                   "samples"):
        assert f"id='{anchor}'" in page
    # nothing is loaded from anywhere: no src/href to another document, a CSP that forbids it
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "default-src 'none'" in page
    assert "@import" not in page and "url(" not in page
    # no signal from 2 of 10 groups: "add 0 and 3" (equal totals), "add 9 and 3" (null totals)
    assert "20.0% of groups have a total with zero variance (2 of 10)" in page
    assert "accuracy: stage switch" in page  # the stage switch at step 50 is marked
    data = json.loads(re.search(r"id='sample-data'>(.*?)</script>", page, re.S).group(1))
    assert len(data["rows"]) == 38 and data["components"] == ["format", "accuracy", "number"]


def test_sample_text_cannot_break_out_of_the_page(tmp_path: Path):
    rows = [row("</script><script>alert(1)</script>", 1.0, f=1.0)]
    rows[0]["completion"] = "<!-- </script> <b>bold</b>"
    page = build_report(rows)
    assert "<script>alert(1)" not in page and "<b>bold</b>" not in page


def test_reward_curves_are_labelled_weighted_and_unweighted(run: tuple[Path, Path],
                                                           tmp_path: Path):
    curves = tmp_path / "reward_curves.csv"
    curves.write_text("step,reward,format,accuracy,number\n1,0.5,0.4,0.2,0.1\n"
                      "2,0.9,0.8,0.4,0.2\n3,1.2,0.9,0.6,0.3\n")
    assert read_curves(curves)[2] == {"step": 3.0, "reward": 1.2, "format": 0.9,
                                      "accuracy": 0.6, "number": 0.3}
    out = tmp_path / "r.html"
    proc = cli("report", str(run[1]), "-o", str(out), "--curves", str(curves),
               "--config", str(run[0]))
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    assert "total (weighted sum: what trains)" in page
    assert "format (raw mean, unweighted)" in page
    assert "accuracy (weight x mean)" in page


def test_report_of_a_file_that_is_not_scored_is_a_clean_error(tmp_path: Path):
    bad = tmp_path / "samples.jsonl"
    bad.write_text('{"prompt": "p", "completion": "c"}\nnot json\n')
    proc = cli("report", str(bad))
    assert proc.returncode == 2
    assert "no scored samples" in proc.stderr and "Traceback" not in proc.stderr
    missing = cli("report", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_malformed_lines_are_left_out_and_named(run: tuple[Path, Path], tmp_path: Path):
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(run[1].read_text() + "{broken\n")
    proc = cli("report", str(mixed))
    assert proc.returncode == 0
    assert "mixed.jsonl:39: left out: invalid JSON" in proc.stderr
    page = (tmp_path / "mixed.report.html").read_text()
    assert "1 line(s) of the input were not scored samples" in page


def test_latency_is_shown_for_rewards_timed_per_sample_only(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text("rewards:\n  inline: {reward: soft_format}\n"
                      "  worker: {reward: soft_format, mode: process}\n")
    src = tmp_path / "s.jsonl"
    src.write_text("".join(json.dumps({"prompt": "p", "completion": c}) + "\n"
                           for c in ("<think>a</think><answer>1</answer>", "x", "y")))
    scored = tmp_path / "o.jsonl"
    assert cli("score", str(config), str(src), "--out", str(scored)).returncode == 0
    rows = [json.loads(line) for line in scored.read_text().splitlines()]
    assert all(r["components"]["worker"]["latency_ms"] >= 0 for r in rows)
    assert all("latency_ms" not in r["components"]["inline"] for r in rows)
    assert cli("report", str(scored), "-o", str(tmp_path / "r.html")).returncode == 0
    page = (tmp_path / "r.html").read_text()
    inline_row = re.search(r"<tr><td>inline</td>(.*?)</tr>", page).group(1)
    worker_row = re.search(r"<tr><td>worker</td>(.*?)</tr>", page).group(1)
    assert inline_row.count("<td>-</td>") == 2  # p50, p95
    assert worker_row.count("<td>-</td>") == 0


# -- issue 20 item 4 ------------------------------------------------------------------
RAMP_AND_STAGES = """\
rewards:
  format: {reward: soft_format, weight: {schedule: linear, start: 0.0, end: 1.0, steps: 100}}
  accuracy:
    reward: exact_answer
    stages:
      - {until_step: 50, weight: 1.0}
      - {weight: 2.0}
"""


def _weights_chart_end(page: str) -> float:
    chart = re.search(r"<title>weights over steps</title>(.*?)</svg>", page, re.S)
    assert chart, "no weights chart"
    # the x axis's right-hand label (the chart is 280 high; the step labels sit 18 above)
    return float(re.search(r'y="262" class="axis" text-anchor="end">([^<]+)<',
                           chart.group(1)).group(1))


def test_weights_chart_runs_to_the_schedule_end_not_the_last_stage_switch(tmp_path: Path):
    from rewardkit import RewardSet

    config = tmp_path / "c.yaml"
    config.write_text(RAMP_AND_STAGES)
    rs = RewardSet.from_file(config)
    # a scored file (no steps): the ramp to 100 is the schedule's end, past the switch at 50
    assert _weights_chart_end(build_report([row("p", 1.0, format=1.0)], reward_set=rs)) == 100
    # a run that goes on past the schedule's end: to its last step
    rows = [dict(row("p", 1.0, format=1.0), step=s) for s in (0, 60, 130)]
    assert _weights_chart_end(build_report(rows, reward_set=rs)) == 130
    # a run that stopped early (12 steps): still the whole schedule
    assert _weights_chart_end(build_report(rows[:1], reward_set=rs, steps=12)) == 100


def test_weights_chart_shows_the_stage_after_the_last_switch(tmp_path: Path):
    from rewardkit import RewardSet

    rs = RewardSet.from_dict({"rewards": {"accuracy": {"reward": "exact_answer", "stages": [
        {"until_step": 50, "weight": 1.0}, {"weight": 2.0}]}}})
    assert _weights_chart_end(build_report([row("p", 1.0, accuracy=1.0)], reward_set=rs)) > 50


def test_latency_is_the_cli_percentile_in_readable_units():
    from rewardkit.reward_set import percentile

    latencies = [400.0 + 97.3 * i for i in range(27)]
    rows = [row("p", 1.0, worker=1.0) for _ in latencies]
    for r, ms in zip(rows, latencies, strict=True):
        r["components"]["worker"]["latency_ms"] = ms
    page = build_report(rows)
    cells = re.search(r"<tr><td>worker</td>(.*?)</tr>", page).group(1)
    assert f"<td>{percentile(latencies, 50):.0f} ms</td>" in cells   # 1665 ms
    assert f"<td>{percentile(latencies, 95):.0f} ms</td>" in cells   # 2812 ms
    assert "e+" not in cells


def test_report_latency_matches_what_rewardkit_score_printed_for_the_same_file(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text("rewards:\n  slow: {reward: echo_after}\n")
    src = tmp_path / "s.jsonl"
    src.write_text("".join(json.dumps({"prompt": f"p{i}", "completion": "c", "v": 1.0,
                                       "sleep": 0.004 * i}) + "\n" for i in range(12)))
    scored = tmp_path / "o.jsonl"
    faulty = [sys.executable, str(Path(__file__).with_name("faulty_cli.py"))]
    proc = subprocess.run([*faulty, "score", str(config), str(src), "--out", str(scored),
                           "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    cli_metrics = json.loads(proc.stdout)["components"]["slow"]
    rows, _ = read_scored(scored)
    cells = re.search(r"<tr><td>slow</td>(.*?)</tr>", build_report(rows)).group(1)
    shown = [float(v) for v in re.findall(r"<td>([\d.]+) ms</td>", cells)]
    assert shown == pytest.approx([cli_metrics["latency_ms_p50"],
                                   cli_metrics["latency_ms_p95"]], abs=0.51)


def test_a_prompt_drawn_twice_in_one_step_is_two_groups():
    """TRL groups a batch by position (each prompt's G completions in a row): the run's
    scored-samples log records that group, and the report counts groups of G."""
    run_report = pytest.importorskip("rewardkit_trainers.run_report")
    from rewardkit import RewardSet, Sample

    rs = RewardSet.from_dict({"rewards": {"acc": {"reward": "exact_answer"}}})
    # one step, the prompt "add 1 and 1" drawn twice (G = 4): one group learns, one is flat
    answers = ["2", "3", "2", "5", "2", "2", "2", "2"]
    samples = [Sample("add 1 and 1", f"<answer>{a}</answer>", "2") for a in answers]
    log = run_report.ScoredSampleLog(num_generations=4)
    log.record(7, samples, rs.score(samples, step=7))
    assert [r["group"] for r in log.rows] == ["7:0:0"] * 4 + ["7:0:1"] * 4
    summary = summarise(log.rows)
    assert summary.group_sizes == {4: 2}
    assert (summary.zero_variance_groups, summary.zero_variance_share) == (1, 0.5)


def test_the_sample_log_keeps_whole_groups_per_step():
    run_report = pytest.importorskip("rewardkit_trainers.run_report")
    from rewardkit import RewardSet, Sample

    rs = RewardSet.from_dict({"rewards": {"acc": {"reward": "exact_answer"}}})
    samples = [Sample(f"p{i // 6}", "x", "y") for i in range(24)]
    log = run_report.ScoredSampleLog(per_step=16, num_generations=6)
    log.record(0, samples, rs.score(samples, step=0))
    assert len(log.rows) == 12  # two whole groups of 6, not 16 rows cutting the third


#: the quickstart's rewards (examples/quickstart.yaml): a right digit, the strict layout and
#: the dense share of the layout in place
QUICKSTART_REWARDS = {"rewards": {
    "correct": {"reward": "exact_answer", "weight": 1.5},
    "format": {"reward": "strict_format", "weight": 0.25},
    "partial_format": {"reward": "layout_progress", "weight": 0.25},
}}


def _quickstart_like_run(steps: int, per_step: int, limit: int) -> tuple[object, list[dict]]:
    """A run's sample log, scored by the quickstart's real rewards at every step: honest
    attempts that get part of the layout right (a dense reward pays them a share), the
    right answer more often as the run goes on, and one hack per step: the whole layout
    with a wrong digit."""
    import random

    run_report = pytest.importorskip("rewardkit_trainers.run_report")
    from rewardkit import RewardSet, Sample

    rs = RewardSet.from_dict(QUICKSTART_REWARDS)
    rng = random.Random(0)
    log = run_report.ScoredSampleLog(per_step=per_step, limit=limit, num_generations=8)
    curves = []
    for step in range(steps):
        batch = []
        for k in range(per_step):
            d = rng.randint(0, 9)
            if k == 0:  # the hack: the layout paid in full, the answer wrong
                text = f"<think>\n{d}\n</think>\n<answer>\n{(d + 1) % 10}\n</answer>"
            elif rng.random() < step / steps:  # learnt
                text = f"<think>\n{d}\n</think>\n<answer>\n{d}\n</answer>"
            else:  # an honest attempt: a prefix of the layout, then noise
                text = ["<think>\n", f"<think>\n{d}\n</think>\n", f"<think>\n{d}\n</think>\n"
                        "<answer>\n"][rng.randint(0, 2)] + rng.choice(["x", "7 7", "</think>"])
            batch.append(Sample(f"copy {d}", text, str(d)))
        result = rs.score(batch, step=step)
        log.record(step, batch, result)
        curves.append({"step": float(step + 1), "reward": 1.0})
    return log, curves


def test_a_long_runs_sample_log_spans_every_part_of_the_run(tmp_path: Path):
    """Issue 43: a 600-step quickstart kept steps 0-312 (the 20,000-row cap filled) and the
    report said nothing. The log thins to every 2nd, 4th ... step and keeps the whole run."""
    log, _ = _quickstart_like_run(steps=300, per_step=16, limit=2000)
    steps = sorted({r["step"] for r in log.rows})
    assert len(log.rows) <= 2000
    assert steps == list(range(0, 300, 4))  # 4,800 rows scored: every 4th step fits
    assert all(sum(r["step"] == s for r in log.rows) == 16 for s in steps)


def test_the_report_says_which_steps_its_samples_come_from(tmp_path: Path):
    run_report = pytest.importorskip("rewardkit_trainers.run_report")
    from rewardkit.config import RewardConfig

    log, curves = _quickstart_like_run(steps=300, per_step=16, limit=2000)
    page = run_report.write_run_report(tmp_path, log, RewardConfig.model_validate(
        QUICKSTART_REWARDS), curves, steps=300).read_text()
    assert "samples from steps 0-296 (every 4th step, 75 steps) of a run to step 300" in page
    assert "The samples stop at step" not in page
    # the same rows rebuilt by `rewardkit report RUN_FOLDER` (curves from the folder)
    (tmp_path / "reward_curves.csv").write_text(
        "step,reward\n" + "".join(f"{int(c['step'])},{c['reward']}\n" for c in curves))
    done = cli("report", str(tmp_path), "-o", str(tmp_path / "again.html"))
    assert done.returncode == 0, done.stderr
    assert "every 4th step, 75 steps) of a run to step 300" in (tmp_path / "again.html").read_text()


def test_a_report_of_the_first_part_of_a_run_says_so():
    rows = [dict(row("p", 1.0, acc=1.0), step=s) for s in range(0, 313)]
    page = build_report(rows, curves=[{"step": float(s), "reward": 1.0} for s in range(601)])
    assert "samples from steps 0-312 (every step) of a run to step 600" in page
    assert ("The samples stop at step 312 of a run to step 600: the overview, the components "
            "and the suspected hacking describe steps 0-312 only") in page


def test_format_paid_answer_wrong_needs_most_of_the_format_credit():
    """Issue 43: partial format credit flagged 16,904 of 20,000 honest quickstart samples.
    Only the samples that earn (most of) the format credit with a wrong answer are the
    sign; here the one hack per step."""
    log, _ = _quickstart_like_run(steps=40, per_step=16, limit=10_000)
    rows = log.rows
    roles = ComponentRoles.guess(["correct", "format", "partial_format"],
                                 {"correct": "exact_answer", "format": "strict_format",
                                  "partial_format": "layout_progress"})
    assert roles == ComponentRoles(("format", "partial_format"), ("correct",))
    flagged = [r for r, f in zip(rows, flag_samples(rows, roles), strict=True)
               if "format_paid_answer_wrong" in f]
    hacks = [r for r in rows if r["components"]["format"]["value"] == 1.0
             and r["components"]["correct"]["value"] == 0.0]
    partial = [r for r in rows if 0 < r["components"]["partial_format"]["value"] < 1
               and r["components"]["correct"]["value"] == 0.0]
    assert len(hacks) == 40 and len(partial) > 200
    assert flagged == hacks


def test_the_sample_browser_of_a_long_run_holds_its_end_too():
    """The browser holds 5,000 rows: the flagged ones, then the others spread over the
    file (it held the first 5,000, the start of a long run only)."""
    from rewardkit.report.page import browser_rows

    flags = [["long_high_reward"] if i % 1000 == 7 else [] for i in range(19_200)]
    kept = browser_rows(flags, limit=5000)
    assert len(kept) == 5000 and kept == sorted(set(kept))
    assert {i for i in range(19_200) if flags[i]} <= set(kept)
    assert max(kept) > 19_000 and kept[0] == 0
    assert browser_rows([[]] * 10, limit=5000) == list(range(10))
