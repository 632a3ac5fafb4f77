"""``rewardkit diff``: two rewards on the same rows, verdicts and GRPO advantages."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit import RewardSet
from rewardkit.cli import main
from rewardkit.config import load_config
from rewardkit.measure.diff import advantages

ROOT = Path(__file__).resolve().parents[2]
LABELLED = ROOT / "examples/data/gsm8k-labelled.jsonl"
STRICT = ROOT / "examples/gsm8k-rlvr.yaml"
LENIENT = ROOT / "examples/gsm8k-rlvr-last-number.yaml"


def diff_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["diff", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_same_config_twice_is_identical_exit_0(capsys):
    code, report = diff_json(capsys, str(STRICT), str(STRICT), str(LABELLED))
    assert code == 0
    assert report["identical"] and report["rows_differing"] == 0
    assert report["grpo"]["rows_advantage_sign_flipped"] == 0
    assert report["components"]["correctness"]["mean_delta"] == 0


def test_configs_that_differ_exit_1_and_list_the_rows(capsys, tmp_path):
    code, report = diff_json(capsys, str(STRICT), str(LENIENT), str(LABELLED))
    assert code == 1
    rows = [json.loads(line) for line in LABELLED.read_text().splitlines()]
    # the lenient config grades the last number where there is no #### line: exactly the
    # rows without one whose last number is the reference differ
    expect = [i + 1 for i, r in enumerate(rows) if "####" not in r["completion"]
              and re.findall(r"\d+", r["completion"])[-1] == r["reference"]]
    assert [d["line"] for d in report["differing"]] == expect
    assert all(d["differ"] == ["correctness", "total"] for d in report["differing"])
    c = report["components"]["correctness"]
    assert c["mean_delta"] == pytest.approx(c["b"]["mean"] - c["a"]["mean"])
    assert c["mean_delta"] == pytest.approx(len(expect) / len(rows))
    assert report["components"]["format"]["rows_differing"] == 0


def test_the_totals_mean_and_variance_under_a_and_b(capsys):
    _, report = diff_json(capsys, str(STRICT), str(LENIENT), str(LABELLED))
    rows = [json.loads(line) for line in LABELLED.read_text().splitlines()]
    total = report["total"]
    assert total["rows_differing"] == report["total_differing"] == 5
    for side, config in (("a", STRICT), ("b", LENIENT)):
        totals = RewardSet(load_config(config)).score(rows).totals
        assert total[side]["count"] == len(totals)
        assert total[side]["mean"] == pytest.approx(statistics.fmean(totals))
        assert total[side]["variance"] == pytest.approx(statistics.pvariance(totals))
    assert total["mean_delta"] == pytest.approx(total["b"]["mean"] - total["a"]["mean"])
    assert total["variance_delta"] == pytest.approx(
        total["b"]["variance"] - total["a"]["variance"])


def test_a_component_named_total_is_refused_not_taken_for_the_total(tmp_path, capsys):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("rewards:\n  total: {reward: good}\n  other: {reward: good}\n")
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "p", "completion": "aa"}) + "\n")
    assert main(["diff", str(cfg), str(cfg), str(rows)]) == 2
    said = capsys.readouterr().err
    assert "'total'" in said and "rename" in said
    scored = tmp_path / "scored.jsonl"
    assert main(["score", str(cfg), str(rows), "--out", str(scored), "--json"]) == 0
    capsys.readouterr()
    assert main(["diff", str(scored), str(scored)]) == 2
    said = capsys.readouterr().err
    assert f"{scored}:1" in said and "'total'" in said and "rename" in said


def test_grpo_advantages_per_group_and_the_rows_whose_sign_flips(tmp_path, capsys):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("rewards:\n  len: {reward: good}\n")           # length, capped at 10
    b.write_text("rewards:\n  len: {reward: good, weight: -1}\n")  # the opposite preference
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"prompt": p, "completion": c}) + "\n" for p, c in [
        ("g1", "aaaa"), ("g1", "aa"), ("g2", "aaa"), ("g2", "aaa")]))
    code, report = diff_json(capsys, str(a), str(b), str(rows))
    assert code == 1
    grpo = report["grpo"]
    assert grpo["groups"] == 2
    assert grpo["groups_with_changed_advantages"] == 1  # g2 is all-equal: 0 under both
    assert [f["line"] for f in grpo["flipped"]] == [1, 2]
    assert grpo["flipped"][0]["advantage_a"] == pytest.approx(1.0, abs=1e-3)
    assert grpo["flipped"][0]["advantage_b"] == pytest.approx(-1.0, abs=1e-3)


def test_advantage_is_the_group_standardised_total():
    assert advantages([None, 2.0, 2.0]) == [None, 0.0, 0.0]
    adv = advantages([3.0, 1.0])
    assert adv[0] == pytest.approx(1.0, abs=1e-3) and adv[1] == pytest.approx(-1.0, abs=1e-3)


def test_two_scored_files(tmp_path, capsys):
    sa, sb = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for cfg, out in ((STRICT, sa), (LENIENT, sb)):
        assert main(["score", str(cfg), str(LABELLED), "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    code, from_files = diff_json(capsys, str(sa), str(sb))
    _, from_configs = diff_json(capsys, str(STRICT), str(LENIENT), str(LABELLED))
    assert code == 1
    assert from_files["differing"] == from_configs["differing"]
    assert from_files["grpo"] == from_configs["grpo"]
    assert main(["diff", str(sa), str(sa)]) == 0


def test_scored_files_of_different_rows_are_an_error_naming_the_line(tmp_path, capsys):
    sa, sb = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert main(["score", str(STRICT), str(LABELLED), "--out", str(sa), "--json"]) == 0
    lines = sa.read_text().splitlines()
    swapped = [*lines[:2], lines[3], lines[2], *lines[4:]]
    sb.write_text("\n".join(swapped) + "\n")
    capsys.readouterr()
    assert main(["diff", str(sa), str(sb)]) == 2
    assert "line 3" in capsys.readouterr().err
    sb.write_text("\n".join(lines[:5]) + "\n")
    assert main(["diff", str(sa), str(sb)]) == 2
    assert "ends at line 5" in capsys.readouterr().err


def test_two_configs_without_rows_is_a_usage_error(capsys):
    assert main(["diff", str(STRICT), str(LENIENT)]) == 2
    assert "need the rows" in capsys.readouterr().err


def test_out_writes_every_differing_row_and_the_real_command_exits_1(tmp_path):
    out = tmp_path / "flips.jsonl"
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "diff", str(STRICT),
                           str(LENIENT), str(LABELLED), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "advantage changes sign" in proc.stdout
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert written and all({"a", "b", "line", "completion"} <= set(r) for r in written)


def test_a_group_split_across_the_file_is_still_one_group(tmp_path, capsys):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("rewards:\n  len: {reward: good}\n")
    b.write_text("rewards:\n  len: {reward: good, weight: -1}\n")
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"prompt": p, "completion": c}) + "\n" for p, c in [
        ("g1", "aaaa"), ("g2", "aaa"), ("g1", "aa"), ("g2", "aaa")]))
    code, report = diff_json(capsys, str(a), str(b), str(rows))
    assert code == 1
    assert report["grpo"]["groups"] == 2
    assert [f["line"] for f in report["grpo"]["flipped"]] == [1, 3]
