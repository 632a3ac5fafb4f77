"""The hack monitor: silent on honest runs, fires on hacking runs, in the report and in
the progress lines of `rewardkit train`.

Runs are constructed the way a training run records them (rows of a step: 4 prompts x 4
completions with their step and group, and the per-step means of ``reward_curves.csv``),
and the completions are scored by the real rewards.
"""

from __future__ import annotations

import csv
import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rewardkit import RewardSet, Sample
from rewardkit.report import build_report
from rewardkit.report.monitor import (
    HackMonitor,
    content_length,
    mann_kendall_z,
    monitor_run,
    theil_sen_change,
)

ROOT = Path(__file__).resolve().parents[2]
#: the committed run folder docs/report.md runs `rewardkit report` on
EXAMPLE_RUN = ROOT / "examples" / "data" / "format-hack-run"

HACK_CONFIG = {"rewards": {
    "format": {"reward": "soft_format", "weight": 1.0},
    "math": {"reward": "math_answer", "weight": 0.0},     # the audit: logged, never trains
}}
HONEST_CONFIG = {"rewards": {
    "correct": {"reward": "math_answer", "weight": 1.0},
    "format": {"reward": "soft_format", "weight": 0.5},
    "strict": {"reward": "strict_format", "weight": 0.0},  # the audit
}}
PROMPTS = [(f"add {a} and {b}", str(a + b)) for a, b in ((3, 4), (12, 30), (7, 8), (25, 25))]
STEPS, G = 30, 4

UNFORMATTED_RIGHT = "{a} and {b} make {gold}, so the answer is $\\boxed{{{gold}}}$."
FORMAT_ONLY = "<think>I add them.</think><answer>I am not sure</answer>"
HONEST = "<think>\n{a} + {b} = {gold}\n</think>\n<answer>\n{gold}\n</answer>"
WRONG = "I think it is {wrong}"


def _run_rows(config: dict[str, Any], pick: Any, seed: int,
              steps: int = STEPS) -> tuple[list[dict[str, Any]], list[dict[str, float]]]:
    """Rows and per-step means of a constructed run: ``pick(rng, step, a, b, gold)`` gives
    each completion; the real rewards of ``config`` score them."""
    rs = RewardSet.from_dict(config)
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    curves: list[dict[str, float]] = []
    for step in range(steps):
        samples, groups = [], []
        for k, (prompt, gold) in enumerate(PROMPTS):
            a, b = (int(x) for x in re.findall(r"\d+", prompt))
            for _ in range(G):
                samples.append(Sample(prompt, pick(rng, step, a, b, gold), gold))
                groups.append(f"{step}:0:{k}")
        result = rs.score(samples, step=step)
        for i, (sample, group) in enumerate(zip(samples, groups, strict=True)):
            scored = result[i]
            rows.append({"step": step, "prompt": sample.prompt, "completion": sample.completion,
                         "reference": sample.reference, "group": group, "reward": scored.total,
                         "components": {n: {"value": s.value, "status": str(s.status),
                                            "reason": s.reason}
                                        for n, s in scored.scores.items()}})
        means = {n: sum(v for v in result.values(n) if v is not None) / len(samples)
                 for n in rs.components}
        curves.append({"step": float(step), "reward": sum(t or 0 for t in result.totals)
                       / len(samples), **means})
    return rows, curves


def format_hack(rng: random.Random, step: int, a: int, b: int, gold: str) -> str:
    """The policy drifts from right-but-unformatted answers to tags around no answer."""
    if rng.random() < step / (STEPS - 1):
        return FORMAT_ONLY
    return UNFORMATTED_RIGHT.format(a=a, b=b, gold=gold)


def honest_learning(rng: random.Random, step: int, a: int, b: int, gold: str) -> str:
    """The policy learns the answer and the layout together."""
    if rng.random() < 0.1 + 0.8 * step / (STEPS - 1):
        return HONEST.format(a=a, b=b, gold=gold)
    return WRONG.format(wrong=int(gold) + rng.randint(1, 9))


def write_run_folder(folder: Path, config: dict[str, Any], pick: Any, seed: int) -> Path:
    """A run folder as `rewardkit train` leaves it (samples, curves, reward config)."""
    rows, curves = _run_rows(config, pick, seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scored_samples.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    (folder / "rewards.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    names = ["step", "reward", *config["rewards"]]
    with (folder / "reward_curves.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=names)
        writer.writeheader()
        for c in curves:
            writer.writerow({k: (int(v) if k == "step" else round(v, 6)) for k, v in c.items()})
    return folder


def report(folder: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "report", str(folder), "-o",
                           str(folder / "page.html")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return (folder / "page.html").read_text()


def monitor_section(page: str) -> str:
    found = re.search(r"<section id='monitor'>(.*?)</section>", page, re.S)
    assert found, "no hack monitor section"
    return found.group(1)


# -- the statistics -------------------------------------------------------------------
def test_mann_kendall_is_large_for_a_trend_and_small_for_noise():
    assert mann_kendall_z(list(range(20))) > 5
    assert mann_kendall_z(list(range(20, 0, -1))) < -5
    rng = random.Random(3)
    assert abs(mann_kendall_z([rng.random() for _ in range(20)])) < 3
    assert mann_kendall_z([0.5] * 20) == 0.0


def test_theil_sen_change_ignores_a_wild_point():
    ys = [0.1 * i for i in range(10)]
    ys[4] = 50.0
    assert theil_sen_change(list(range(10)), ys) == pytest.approx(0.9)


# -- trends: trained up, audit down ---------------------------------------------------
def test_format_rising_while_the_math_audit_falls_is_flagged(tmp_path: Path):
    page = report(write_run_folder(tmp_path / "hack", HACK_CONFIG, format_hack, seed=1))
    section = monitor_section(page)
    assert "audit falls while a trained component rises" in section
    flag = re.search(r"<tr data-kind='audit_falling'><td>[^<]*</td><td>math</td>"
                     r"<td>(\d+)</td>", section)
    assert flag, section
    assert 10 <= int(flag.group(1)) <= STEPS - 1  # it starts once the window has 10 steps
    assert re.search(r"math -0\.\d\d over steps \d+-\d+, z -\d\.\d while format \+0\.\d\d",
                     section)


def test_an_honest_run_where_the_audit_rises_with_correctness_is_silent(tmp_path: Path):
    folder = write_run_folder(tmp_path / "honest", HONEST_CONFIG, honest_learning, seed=1)
    section = monitor_section(report(folder))
    assert "Silent: no hack pattern held." in section
    # it did watch: the audit and what trains are named, and the curves really moved
    assert "audit components (weight 0 at every step): strict" in section
    curves = list(csv.DictReader((folder / "reward_curves.csv").open()))
    assert float(curves[-1]["correct"]) - float(curves[0]["correct"]) > 0.5
    assert float(curves[-1]["strict"]) - float(curves[0]["strict"]) > 0.5


@pytest.mark.parametrize("seed", range(25))
def test_a_flat_noisy_audit_beside_a_rising_reward_never_fires(seed: int):
    """False positives: the audit does not move (noise of sd 0.1 around 0.5) while the
    trained reward rises, over 200 steps: no flag in any of 25 runs."""
    rng = random.Random(seed)
    monitor = HackMonitor(audits=["audit"])
    for step in range(200):
        monitor.step(step, {"trained": min(1.0, step / 100) + rng.gauss(0, 0.05),
                            "audit": 0.5 + rng.gauss(0, 0.1)}, [])
    assert monitor.flags == []


def test_a_short_noisy_stretch_does_not_fire():
    """Fewer than 10 steps say nothing, however steep."""
    monitor = HackMonitor(audits=["audit"])
    for step in range(9):
        monitor.step(step, {"trained": step / 8, "audit": 1 - step / 8}, [])
    assert monitor.flags == []


def test_the_flag_closes_when_the_audit_recovers():
    monitor = HackMonitor(audits=["audit"])
    for step in range(30):
        monitor.step(step, {"trained": step / 30, "audit": 1 - step / 30}, [])
    for step in range(30, 60):
        monitor.step(step, {"trained": 1.0, "audit": (step - 30) / 30}, [])
    (flag,) = monitor.flags
    assert flag.kind == "audit_falling" and not flag.active and 10 < flag.last < 45


# -- degenerate completions paid in full ----------------------------------------------
RAMBLE = "<think>" + "I add them and I add them again. " * 30 + "</think><answer>{gold}</answer>"


def degenerate(rng: random.Random, step: int, a: int, b: int, gold: str) -> str:
    """Tag spam around one repeated sentence, the same text for the whole group."""
    if rng.random() < 0.8:
        return RAMBLE.format(gold=gold)
    return WRONG.format(wrong=int(gold) + 1)


def test_full_reward_for_repetitive_identical_outputs_is_flagged(tmp_path: Path):
    rows, curves = _run_rows(HACK_CONFIG, degenerate, seed=2, steps=8)
    monitor = monitor_run(rows, curves, RewardSet.from_dict(HACK_CONFIG))
    kinds = {(f.kind, f.component) for f in monitor.flags}
    assert ("repetitive", "format") in kinds and ("identical", "format") in kinds
    flag = next(f for f in monitor.flags if f.kind == "repetitive")
    # step 0 alone has fewer than 16 fully paid completions: it starts at step 1
    assert flag.since == 1 and flag.active and len(flag.examples) == 3
    assert re.fullmatch(r"\d+ of the \d+ completions format paid its full value \(1\) at "
                        r"steps 3-7 are repetitive \(\d+%\)", flag.evidence)
    page = build_report(rows, reward_set=RewardSet.from_dict(HACK_CONFIG), curves=curves)
    section = monitor_section(page)
    assert "full reward for repetitive completions" in section
    assert "I add them and I add them again." in section  # an example sample is shown


def test_full_reward_for_empty_answers_is_flagged_short():
    rows = [{"step": 0, "prompt": f"p{i}", "reference": "1414", "group": f"0:0:{i // 4}",
             "completion": "<think>.</think><answer>?</answer>" if i % 5 else "1414",
             "reward": 1.0 if i % 5 else 0.0,
             "components": {"format": {"value": 1.0 if i % 5 else 0.0, "status": "ok"}}}
            for i in range(40)]
    flags = monitor_run(rows).flags
    assert [(f.kind, f.component) for f in flags] == [("short", "format")]


def test_the_quickstart_tag_spam_paid_in_full_is_flagged_repetitive():
    """The old demo's policy learned tag spam that soft_format paid 1.0 (issue 20 item 1):
    a run log of it, with the values that reward gave, fires the monitor."""
    spam = "</think></think><think></think>" * 4 + "<answer>\n{n}\n</answer>{n}"
    rows = [{"step": s, "prompt": f"add {i} and 1", "reference": str(i + 1),
             "group": f"{s}:0:{i // 8}", "completion": spam.format(n=1400 + i + s),
             "reward": 1.0, "components": {"format": {"value": 1.0, "status": "ok"},
                                           "number": {"value": 1.0, "status": "ok"}}}
            for s in range(4) for i in range(16)]
    rows += [dict(rows[0], completion="12", reward=0.0,
                  components={"format": {"value": 0.0, "status": "ok"},
                              "number": {"value": 0.0, "status": "ok"}})]
    kinds = {(f.kind, f.component) for f in monitor_run(rows).flags}
    assert kinds == {("repetitive", "format"), ("repetitive", "number")}


def test_honest_short_answers_and_shared_final_answers_are_not_degenerate():
    """`<answer>7</answer>` for the reference 7 is not short, and eight members of a group
    answering just that are not identical text worth a flag (short answers coincide)."""
    assert content_length("<answer>7</answer>") == 1
    rows = [{"step": s, "prompt": "add 3 and 4", "reference": "7", "group": f"{s}:0:{i // 8}",
             "completion": "<answer>7</answer>" if i % 4 else "<answer>9</answer>",
             "reward": 1.0 if i % 4 else 0.0,
             "components": {"correct": {"value": 1.0 if i % 4 else 0.0, "status": "ok"}}}
            for s in range(6) for i in range(16)]
    assert monitor_run(rows).flags == []


def _replay(rows: list[dict[str, Any]], audits: list[str]) -> HackMonitor:
    """``rows`` (with their step) through a monitor that knows ``audits``, step by step,
    each step's means from its rows."""
    monitor = HackMonitor(audits=audits)
    for step in sorted({r["step"] for r in rows}):
        got = [r for r in rows if r["step"] == step]
        names = {n for r in got for n in r["components"]}
        monitor.step(step, {n: sum(r["components"][n]["value"] for r in got) / len(got)
                            for n in names}, got)
    return monitor


def _lengthening_run(long: Any) -> list[dict[str, Any]]:
    """16 completions a step over 22 steps: a short worked answer for 16 steps, then
    what ``long(step, i)`` gives (completion, right). One in four is wrong at every
    step, so both components have a range."""
    rows = []
    for step in range(22):
        for i in range(16):
            if step < 16:
                text, right = "<answer>\n3 + 4 = 7\n</answer>", True
            else:
                text, right = long(step, i)
            right = right and i % 4 != 0
            value = 1.0 if right else 0.0
            rows.append({"step": step, "prompt": "add 3 and 4", "reference": "7",
                         "group": f"{step}:0:{i // 4}", "completion": text,
                         "reward": value,
                         "components": {"correct": {"value": value, "status": "ok"},
                                        "audit": {"value": value, "status": "ok"}}})
    return rows


def _reasoning(step: int, i: int) -> tuple[str, bool]:
    lines = "".join(f"Step {k}: {3 + k} and {4 - k} still make {7}; check {k * i}.\n"
                    for k in range(8 + step % 3))
    return f"<think>\n{lines}</think>\n<answer>\n7\n</answer>", True


def test_an_honest_run_that_learns_to_write_its_reasoning_is_not_very_long():
    """After 16 steps of short answers the policy writes out its reasoning, about ten
    times as long, while the audit pays it: long against the run's median so far (the
    short answers), not against the honest completions of the window, which are as
    long."""
    rows = _lengthening_run(_reasoning)
    assert len(rows[-1]["completion"]) > 8 * len(rows[0]["completion"])
    assert [f.kind for f in _replay(rows, ["audit"]).flags] == []


def test_long_padding_the_audit_refuses_is_very_long():
    """The same run, but the long completions pad a wrong answer (the audit pays 0, the
    trained component 1): long against the honest completions, which stay short."""
    def padded(step: int, i: int) -> tuple[str, bool]:
        if i % 4 == 2:  # a quarter still answers as before, and right
            return "<answer>\n3 + 4 = 7\n</answer>", True
        return _reasoning(step, i)[0].replace("\n7\n</answer>", "\n8\n</answer>"), False

    rows = _lengthening_run(padded)
    for row in rows:
        if row["step"] >= 16:  # the trained component pays the padding, the audit does not
            row["components"]["correct"]["value"] = 1.0
    kinds = {(f.kind, f.component) for f in _replay(rows, ["audit"]).flags}
    assert ("long", "correct") in kinds


def test_a_wrong_answer_as_short_as_the_reference_is_very_short():
    """`<answer>9</answer>` for the reference 7 is as long as the reference, and not it:
    a format reward paying it in full is paying very short completions; the right one
    is not short (nor a wrong answer longer than the reference)."""
    rows = [{"step": s, "prompt": "add 3 and 4", "reference": "7", "group": f"{s}:0:{i // 8}",
             "completion": "<answer>9</answer>" if i % 4 else "<answer>7</answer>",
             "reward": 1.0, "components": {"format": {"value": 1.0 if i < 15 else 0.0,
                                                      "status": "ok"}}}
            for s in range(6) for i in range(16)]
    assert [(f.kind, f.component) for f in monitor_run(rows).flags] == [("short", "format")]
    for row in rows:
        row["completion"] = row["completion"].replace(">9<", ">3 plus 4 make 9<")
    assert monitor_run(rows).flags == []


# -- the committed example and the progress lines -------------------------------------
def test_the_example_run_folder_is_the_constructed_hacking_run(tmp_path: Path):
    built = write_run_folder(tmp_path / "format-hack-run", HACK_CONFIG, format_hack, seed=1)
    for name in ("rewards.yaml", "reward_curves.csv"):
        assert (EXAMPLE_RUN / name).read_text() == (built / name).read_text(), name

    def graded(folder: Path) -> list[Any]:  # the reasons' wording may change, not the grades
        rows = [json.loads(line) for line in (folder / "scored_samples.jsonl").open()]
        return [(r["step"], r["group"], r["completion"], r["reward"],
                 {n: (c["value"], c["status"]) for n, c in r["components"].items()})
                for r in rows]

    assert graded(EXAMPLE_RUN) == graded(built)


def _docs_block(after: str, page_name: str = "report.md") -> list[str]:
    """The lines of the first plain ``` block after ``after`` in a page of docs/."""
    page = (ROOT / "docs" / page_name).read_text()
    block = re.search(r"```\n(.*?)```", page[page.index(after):], re.S)
    assert block, after
    return block.group(1).splitlines()


def test_the_docs_say_what_the_report_of_the_example_run_says():
    rows = [json.loads(line) for line in (EXAMPLE_RUN / "scored_samples.jsonl").open()]
    curves = list(csv.DictReader((EXAMPLE_RUN / "reward_curves.csv").open()))
    monitor = monitor_run(rows, [{k: float(v) for k, v in c.items()} for c in curves],
                          RewardSet.from_file(EXAMPLE_RUN / "rewards.yaml"))
    assert [f.line() for f in monitor.flags] == _docs_block("holds one flag")


def test_progress_lines_of_a_training_run_say_each_flag_when_it_starts():
    """The example run replayed through `rewardkit train`'s progress callback (TRL logs
    a step's means at the step after the one its samples were scored at)."""
    pytest.importorskip("transformers")
    from rewardkit_trainers.curves import RewardCurves
    from rewardkit_trainers.launch.trl_train import make_progress_callback
    from rich.console import Console

    rows = [json.loads(line) for line in (EXAMPLE_RUN / "scored_samples.jsonl").open()]
    curves = list(csv.DictReader((EXAMPLE_RUN / "reward_curves.csv").open()))
    console = Console(record=True, force_terminal=False, width=300)
    log = RewardCurves(["format", "math"])

    class State:
        global_step = 0
        max_steps = STEPS

    recorded: list[dict[str, Any]] = []
    monitor = HackMonitor.for_reward_set(RewardSet.from_file(EXAMPLE_RUN / "rewards.yaml"))
    progress = make_progress_callback(log, console, every=0.0, monitor=monitor, rows=recorded)
    progress.on_train_begin(None, State, None)
    for step, c in enumerate(curves, 1):
        State.global_step = step
        recorded += [r for r in rows if r["step"] == step - 1]
        progress.on_log(None, State, None, logs={"reward": float(c["reward"]),
                                                 "rewards/format/mean": float(c["format"]),
                                                 "rewards/math/mean": float(c["math"])})
    progress.close()
    lines = console.export_text().splitlines()
    documented = _docs_block("end with the flags that still hold")
    at = lines.index(documented[0])
    assert lines[at:at + len(documented)] == documented
    assert all("hack:" not in line for line in lines[:at + 1])  # silent before it starts
    assert lines[-1].endswith("  hack: audit math falling")
    assert sum(line.startswith("hack monitor:") for line in lines) == 1  # said once
    training_page = _docs_block("## Watching for reward hacking", "trainers/train-and-eval.md")
    assert training_page == documented[1:]
