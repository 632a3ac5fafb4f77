"""rewardkit_trainers.fewshot: the 8-shot GSM8K prompt builder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rewardkit_trainers.fewshot import (
    FINAL_ANSWER,
    FewShotDataError,
    GSM8KExample,
    build_prompt,
    choose_shots,
    fewshot_samples,
    load_examples,
)

from rewardkit import RewardSet

DATA = Path(__file__).resolve().parents[2] / "examples" / "data" / "gsm8k.jsonl"
EXAMPLE_CONFIG = DATA.parents[1] / "gsm8k-rlvr.yaml"


def _write(tmp_path: Path, rows: list[object]) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_row_is_split_at_the_last_hashes_with_separators_removed() -> None:
    ex = GSM8KExample.from_row({"question": "Q?", "answer": "a <<1+1=2>>2\n#### 1,200"})
    assert ex == GSM8KExample("Q?", "a 2", "1200")


def test_calculator_annotations_can_be_kept() -> None:
    ex = GSM8KExample.from_row({"question": "Q?", "answer": "<<1+1=2>>2\n#### 2"},
                               strip_calculator=False)
    assert ex.solution == "<<1+1=2>>2"


def test_shot_ends_with_the_final_answer_line() -> None:
    shot = GSM8KExample("Q?", "2 + 2 = 4.", "4").as_shot()
    assert shot == ("Question: Q?\nSolution: Let's think step by step. 2 + 2 = 4.\n"
                    "#### The final answer is 4")


def test_prompt_has_every_shot_then_the_open_question() -> None:
    shots = load_examples(DATA)[:8]
    prompt = build_prompt("How many?", shots)
    assert prompt.count(FINAL_ANSWER) == 8
    assert prompt.endswith("Question: How many?\nSolution: Let's think step by step.")


def test_a_question_is_never_its_own_shot() -> None:
    pool = load_examples(DATA)
    chosen = choose_shots(pool, 8, exclude=pool[3])
    assert pool[3] not in chosen and len(chosen) == 8


def test_seeded_shots_are_reproducible_and_differ_from_the_fixed_ones() -> None:
    pool = load_examples(DATA)
    assert choose_shots(pool, 8, seed=1) == choose_shots(pool, 8, seed=1)
    assert choose_shots(pool, 8, seed=1) != choose_shots(pool, 8)


def test_too_small_a_pool_is_an_error() -> None:
    with pytest.raises(ValueError, match="only 2 usable"):
        choose_shots([GSM8KExample("a", "b", "1"), GSM8KExample("c", "d", "2")], 8)


def test_bad_row_is_reported_with_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"question": "Q", "answer": "x\n#### 1"},
                             {"question": "Q", "answer": "no final answer"}])
    with pytest.raises(FewShotDataError, match=r"data\.jsonl:2: 'answer' must be"):
        load_examples(path)


def test_samples_carry_the_gold_answer_as_reference() -> None:
    rows = fewshot_samples(DATA, n_shots=8)
    assert len(rows) == len(load_examples(DATA))
    assert rows[0]["reference"] == "12"
    assert rows[0]["prompt"].count(FINAL_ANSWER) == 8


def test_samples_score_with_the_rlvr_example_config() -> None:
    row = fewshot_samples(DATA, n_shots=2)[0]
    completion = " 24 + 18 = 42, 42 - 30 = 12.\n#### The final answer is 12"
    rs = RewardSet.from_file(EXAMPLE_CONFIG)
    assert rs.score([{**row, "completion": completion}]).totals == [1.5]
