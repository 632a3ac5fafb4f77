"""``rewardkit calibrate``: a reward's verdicts against a label column."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit.cli import main
from rewardkit.measure.stats import wilson

ROOT = Path(__file__).resolve().parents[2]
LABELLED = ROOT / "examples/data/gsm8k-labelled.jsonl"
RLVR = ROOT / "examples/gsm8k-rlvr.yaml"
# `good` pays the completion's length capped at 10; `raises` errors on "boom", else 1
CFG = "rewards:\n  length: {reward: good}\n  boom: {reward: raises, weight: 0}\n"


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def calibrate_json(capsys, *args: str) -> dict:
    assert main(["calibrate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, Path]:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CFG)
    rows = [{"prompt": "p", "completion": "aaaaaa", "ok": 1},   # length 6: tp at 5
            {"prompt": "p", "completion": "bbbbbb", "ok": 0},   # fp
            {"prompt": "p", "completion": "a", "ok": 0},        # tn
            {"prompt": "p", "completion": "ab", "ok": True},     # fn
            {"prompt": "p", "completion": "boom!", "ok": "false"}]  # boom fails
    return cfg, write(tmp_path / "rows.jsonl", rows)


def test_confusion_counts_at_the_threshold(capsys, small):
    cfg, rows = small
    report = calibrate_json(capsys, str(cfg), str(rows), "--label", "ok", "--threshold", "5")
    length = report["length"]
    assert (length["tp"], length["fp"], length["tn"], length["fn"]) == (1, 2, 1, 1)
    assert length["precision"]["value"] == pytest.approx(1 / 3)
    assert length["recall"]["value"] == pytest.approx(1 / 2)
    assert length["false_positive_rate"]["value"] == pytest.approx(2 / 3)
    assert length["accuracy"]["value"] == pytest.approx(2 / 5)
    assert length["f1"]["value"] == pytest.approx(2 * 1 / (2 * 1 + 2 + 1))
    low, high = length["precision"]["ci95"]
    assert (low, high) == pytest.approx(wilson(1, 3), abs=1e-6)


def test_failed_gradings_are_counted_apart_never_as_negatives(capsys, small):
    cfg, rows = small
    boom = calibrate_json(capsys, str(cfg), str(rows), "--label", "ok")["boom"]
    assert boom["failed"] == 1
    assert boom["graded"] == 4
    assert (boom["tp"], boom["fp"], boom["tn"], boom["fn"]) == (2, 2, 0, 0)


def test_wilson_interval_matches_the_published_value():
    low, high = wilson(8, 10)  # 95%: 0.490 to 0.943 (Wilson 1927; Newcombe 1998, table I)
    assert round(low, 3) == 0.49 and round(high, 3) == 0.943
    assert wilson(0, 0) is None


def test_continuous_reward_gets_roc_auc_and_the_f1_best_threshold(capsys, tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("rewards:\n  length: {reward: good}\n")
    texts = [("x" * n, int(n >= 4) if n not in (3, 7) else int(n < 4)) for n in range(1, 11)]
    rows = write(tmp_path / "rows.jsonl",
                 [{"prompt": "p", "completion": t, "y": y} for t, y in texts])
    length = calibrate_json(capsys, str(cfg), str(rows), "--label", "y")["length"]
    pos = [len(t) for t, y in texts if y]
    neg = [len(t) for t, y in texts if not y]
    pairs = [1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg)]
    assert length["continuous"] is True
    assert length["roc_auc"] == pytest.approx(sum(pairs) / len(pairs))
    best = max(range(1, 11), key=lambda t: (
        2 * sum(p >= t for p in pos) / (len(pos) + sum(p >= t for p in pos)
                                        + sum(n >= t for n in neg)), -t))
    assert length["best_f1_threshold"]["threshold"] == best


def test_counts_agree_with_rewardkit_score_on_the_shipped_labelled_file(capsys, tmp_path):
    scored = tmp_path / "scored.jsonl"
    assert main(["score", str(RLVR), str(LABELLED), "--out", str(scored), "--json"]) == 0
    capsys.readouterr()
    report = calibrate_json(capsys, str(RLVR), str(LABELLED), "--label", "correct")
    for name in ("correctness", "format"):
        expect = {"tp": 0, "fp": 0, "tn": 0, "fn": 0}
        for line in scored.read_text().splitlines():
            row = json.loads(line)
            predicted = row["components"][name]["value"] >= 0.5
            key = ("t" if predicted == bool(row["correct"]) else "f") + \
                  ("p" if predicted else "n")
            expect[key] += 1
        assert {k: report[name][k] for k in expect} == expect
    assert report["correctness"]["fn"] > 0  # answers without a #### line: the file's point


def test_out_holds_the_disagreeing_rows_with_scores_and_reasons(capsys, small, tmp_path):
    cfg, rows = small
    out = tmp_path / "wrong.jsonl"
    assert main(["calibrate", str(cfg), str(rows), "--label", "ok", "--threshold", "5",
                 "--out", str(out)]) == 0
    written = [json.loads(line) for line in out.read_text().splitlines()]
    # boom pays 1 < 5: a negative verdict on lines 1 and 4 (labelled 1); length: fp on
    # lines 2 and 5, fn on line 4; line 5's failed boom is no disagreement
    assert [r["line"] for r in written] == [1, 2, 4, 5]
    assert written[0]["disagree"] == ["boom"]
    assert written[1]["disagree"] == ["length", "total"]
    assert written[3]["components"]["boom"]["status"] == "error"
    assert set(written[1]["components"]["length"]) >= {"value", "status", "reason"}
    assert "4 row(s)" in capsys.readouterr().out


@pytest.mark.parametrize(("label", "said"), [
    (None, "line 2: label column 'ok' is null (an unlabelled row)"),
    ("maybe", "line 2: label column 'ok' is 'maybe'"),
    (0.7, "line 2: label column 'ok' is 0.7, not 0/1"),
])
def test_unreadable_label_is_an_error_naming_the_line(capsys, small, tmp_path, label, said):
    cfg, _ = small
    rows = write(tmp_path / "bad.jsonl", [{"prompt": "p", "completion": "a", "ok": 1},
                                          {"prompt": "p", "completion": "b", "ok": label}])
    assert main(["calibrate", str(cfg), str(rows), "--label", "ok"]) == 2
    assert said in capsys.readouterr().err


def test_a_row_without_the_label_column_is_an_error_naming_line_and_columns(capsys, small,
                                                                          tmp_path):
    cfg, _ = small
    rows = write(tmp_path / "bad.jsonl", [{"prompt": "p", "completion": "a", "ok": 1},
                                          {"prompt": "p", "completion": "b", "label": 1}])
    assert main(["calibrate", str(cfg), str(rows), "--label", "ok"]) == 2
    said = capsys.readouterr().err
    assert "line 2 has no label column 'ok'" in said and "completion, label, prompt" in said
    assert main(["calibrate", str(cfg), str(rows), "--label", "ok", "--threshold", "nan"]) == 2


def test_gold_score_label_with_its_own_threshold(capsys, small, tmp_path):
    cfg, _ = small
    rows = write(tmp_path / "gold.jsonl", [
        {"prompt": "p", "completion": "aaaaaa", "gold": 0.9},
        {"prompt": "p", "completion": "aaaaaa", "gold": 0.2}])
    length = calibrate_json(capsys, str(cfg), str(rows), "--label", "gold",
                            "--threshold", "5", "--label-threshold", "0.5")["length"]
    assert (length["tp"], length["fp"]) == (1, 1)


def test_routed_config_reports_each_data_source(capsys, tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("rewards:\n  a: {reward: good, when: {task: a}}\n"
                   "  b: {reward: good, when: {task: b}}\n")
    rows = write(tmp_path / "rows.jsonl", [
        {"prompt": "p", "completion": "xxxxxxxxxx", "task": "a", "y": 1},
        {"prompt": "q", "completion": "x", "task": "b", "y": 1}])
    report = calibrate_json(capsys, str(cfg), str(rows), "--label", "y", "--threshold", "5")
    assert set(report["a"]["by_source"]) == {"task=a", "task=b"}
    assert report["a"]["by_source"]["task=a"]["tp"] == 1
    assert report["a"]["by_source"]["task=b"]["skipped"] == 1
    assert report["b"]["by_source"]["task=b"]["fn"] == 1
    assert report["total"]["graded"] == 2


def test_a_component_named_total_is_refused_not_merged_with_the_total(capsys, tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("rewards:\n  total: {reward: good}\n  other: {reward: good}\n")
    rows = write(tmp_path / "rows.jsonl", [{"prompt": "p", "completion": "aa", "ok": 1}])
    assert main(["calibrate", str(cfg), str(rows), "--label", "ok", "--json"]) == 2
    said = capsys.readouterr()
    assert not said.out and "'total'" in said.err and "rename" in said.err


def test_real_command_prints_a_table(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "calibrate", str(RLVR),
                           str(LABELLED), "--label", "correct"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "correctness" in proc.stdout and "precision" in proc.stdout
