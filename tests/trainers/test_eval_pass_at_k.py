"""`rewardkit eval` with `eval.samples` > 1: pass@k and maj@k per component (issue 35)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytest.importorskip("transformers")

from backend_venvs import ROOT
from rewardkit_trainers.config import TinyModel
from rewardkit_trainers.evaluate import evaluate_config, print_report, score_completions
from rewardkit_trainers.quickstart import build_tiny, generate_rows

from rewardkit import RewardSet

H = "\n#### The final answer is "


def test_pass_and_maj_at_k_from_each_prompts_samples():
    rs = RewardSet.from_file(ROOT / "examples" / "gsm8k-rlvr.yaml")
    rows = [{"prompt": "q1", "reference": "12"}] * 4 + [{"prompt": "q2", "reference": "7"}] * 4
    completions = [f" a{H}12", f" b{H}18", f" c{H}18", f" d{H}18",  # q1: 1 of 4, vote 18
                   f" a{H}7", f" b{H}7", f" c{H}7 weeks", f" d{H}9"]  # q2: 3 of 4, vote 7
    report = score_completions(rs, rows, completions, "correctness", 0, None, per_prompt=4)
    table = report["pass_at_k"]["correctness"]
    assert list(table) == ["1", "2", "4"]
    assert table["1"]["pass@k"]["value"] == pytest.approx((1 / 4 + 3 / 4) / 2)
    assert table["2"]["pass@k"]["value"] == pytest.approx((1 / 2 + 1) / 2)
    assert table["4"]["pass@k"]["value"] == 1.0
    # the vote reads math_answer's extracted answer: "7 weeks" votes with "7"
    assert table["4"]["maj@k"]["value"] == pytest.approx(0.5)
    assert table["4"]["maj@k"]["prompts"] == 2
    assert set(report["pass_at_k"]) == {"format", "correctness"}


def test_one_sample_per_prompt_reports_no_pass_at_k():
    rs = RewardSet.from_file(ROOT / "examples" / "gsm8k-rlvr.yaml")
    report = score_completions(rs, [{"prompt": "q", "reference": "1"}], [f"{H}1"],
                               "correctness", 0, None)
    assert "pass_at_k" not in report


def test_eval_samples_end_to_end_prints_pass_at_k_rows(tmp_path: Path):
    from rich.console import Console

    rows = generate_rows(8)
    build_tiny(TinyModel(hidden_size=32, intermediate_size=64), rows, tmp_path / "out" / "final")
    config = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text())
    config["train"]["output_dir"] = str(tmp_path / "out")
    config["eval"].update(limit=3, samples=2)
    path = tmp_path / "q.yaml"
    path.write_text(yaml.safe_dump(config))
    report = evaluate_config(path, include_base=False)
    per_k = report["models"]["trained"]["pass_at_k"]["correct"]
    assert list(per_k) == ["1", "2"] and per_k["2"]["pass@k"]["prompts"] == 3
    console = Console(record=True, width=120)
    print_report(console, report)
    text = console.export_text()
    assert "pass@2 correct" in text and "maj@2 format" in text
