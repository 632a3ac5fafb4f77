"""pass@k and maj@k (issue 35 item 3): the estimators and the report's section."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import pytest

from rewardkit.cli import main
from rewardkit.measure.passk import by_component, maj_at_k, pass_and_maj, pass_at_k

ROOT = Path(__file__).resolve().parents[2]
LABELLED = ROOT / "examples/data/gsm8k-labelled.jsonl"
RLVR = ROOT / "examples/gsm8k-rlvr.yaml"


def brute_pass(n: int, c: int, k: int) -> float:
    """The share of k-subsets of n samples (c correct) holding a correct one."""
    flags = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(flags, k))
    return sum(any(s) for s in subsets) / len(subsets)


def brute_maj(answers: list[str], correct: list[bool], k: int) -> float:
    right = {a for a, ok in zip(answers, correct, strict=True) if ok}
    total = 0.0
    subsets = list(itertools.combinations(answers, k))
    for subset in subsets:
        votes = Counter(subset)
        top = max(votes.values())
        tied = [a for a, v in votes.items() if v == top]
        total += sum(a in right for a in tied) / len(tied)
    return total / len(subsets)


@pytest.mark.parametrize(("n", "c"), [(5, 0), (5, 1), (6, 3), (8, 7), (4, 4)])
def test_pass_at_k_is_the_unbiased_estimator(n, c):
    for k in range(1, n + 1):
        assert pass_at_k(n, c, k) == pytest.approx(brute_pass(n, c, k))


def test_pass_at_k_refuses_impossible_counts():
    with pytest.raises(ValueError, match="0 < k <= n"):
        pass_at_k(3, 1, 4)


def test_maj_at_k_is_the_majority_vote_over_k_samples():
    answers = ["12", "12", "18", "12", "7", "18"]
    correct = [a == "12" for a in answers]
    assert maj_at_k(answers, correct, 6) == 1.0
    for k in (1, 2, 3):
        assert maj_at_k(answers, correct, k) == pytest.approx(
            brute_maj(answers, correct, k), abs=0.1)  # 200 seeded draws


def test_interval_over_prompts_brackets_the_mean():
    table = pass_and_maj([(["a", "b"], [True, False]), (["c", "c"], [False, False]),
                          (["d", "d"], [True, True])])
    one = table["1"]["pass@k"]
    assert one["value"] == pytest.approx(0.5) and one["prompts"] == 3
    low, high = one["ci95"]
    assert 0 <= low < 0.5 < high <= 1


def test_report_section_per_component_on_the_shipped_labelled_rows(tmp_path, capsys):
    scored = tmp_path / "scored.jsonl"
    assert main(["score", str(RLVR), str(LABELLED), "--out", str(scored), "--json"]) == 0
    rows = [json.loads(line) for line in scored.read_text().splitlines()]
    table = by_component(rows)
    assert set(table) == {"format", "correctness"}
    assert list(table["correctness"]) == ["1", "2", "4"]  # 6 prompts x 4 completions
    groups: dict[str, list[bool]] = {}
    for row in rows:
        groups.setdefault(row["prompt"], []).append(row["components"]["correctness"]["value"] == 1)
    for k in (1, 2, 4):
        expect = sum(brute_pass(4, sum(g), k) for g in groups.values()) / len(groups)
        assert table["correctness"][str(k)]["pass@k"]["value"] == pytest.approx(expect)
    page = tmp_path / "report.html"
    assert main(["report", str(scored), "-o", str(page)]) == 0
    html = page.read_text()
    assert "id='pass-at-k'" in html and "maj@4" in html


def test_no_section_without_a_prompt_of_two_samples():
    rows = [{"prompt": "a", "completion": "1", "components": {"x": {"value": 1.0}}},
            {"prompt": "b", "completion": "2", "components": {"x": {"value": 0.0}}}]
    assert by_component(rows) == {}
