"""rewardkit-gym: ``rewardkit gym-data`` rows and ``gym_answer`` on them.

The golden cases (tests/cases/gym) hold verdicts on single answers; these tests hold what
they cannot: generation is seeded and sized, rows are what the trainers' loaders read,
and on five datasets the dataset's own answers are paid 1.0 while the cheap outputs its
scorer would pay (an echo, a well-formed wrong answer, a hedge) are not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit import Sample, get_reward

pytest.importorskip("rewardkit_gym")

from rewardkit_gym.data import generate

DATASETS = ["spell_backward", "basic_arithmetic", "word_sorting", "game_of_life_halting",
            "countdown"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rewardkit.cli", *args], capture_output=True,
                          text=True, timeout=120)


def score(row: dict, completion: str, **params) -> float:
    reward = get_reward("gym_answer")(params)
    result = reward.score(Sample.from_dict({**row, "completion": completion}))
    assert result.status.value == "ok", result
    return result.value


def test_gym_data_is_seeded_and_sized_and_its_rows_load(tmp_path: Path):
    out = tmp_path / "rows.jsonl"
    done = cli("gym-data", "spell_backward", "--size", "7", "--seed", "3", "--out", str(out),
               "--config", "min_word_len=4", "--config", "max_word_len=6")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 7
    assert rows == generate("spell_backward", 7, 3, {"min_word_len": 4, "max_word_len": 6})
    assert rows != generate("spell_backward", 7, 4, {"min_word_len": 4, "max_word_len": 6})
    assert all(4 <= len(r["reference"]) <= 6 for r in rows)
    assert {r["gym_dataset"] for r in rows} == {"spell_backward"}
    assert json.loads(rows[0]["gym_entry"])["word"] == rows[0]["reference"][::-1]
    # what `rewardkit train` reads: prompt, the reference column, the rest as metadata
    read_rows = pytest.importorskip("rewardkit_trainers.launch.data").read_rows
    loaded = read_rows(out)
    sample = Sample.from_dict({**loaded[0], "completion": f"<answer>{rows[0]['reference']}"
                                                        "</answer>"})
    assert sample.metadata["gym_dataset"] == "spell_backward"
    assert get_reward("gym_answer")({}).score(sample).value == 1.0


def test_parquet_rows_are_the_jsonl_rows(tmp_path: Path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "rows.parquet"
    assert cli("gym-data", "word_sorting", "--size", "4", "--out", str(out)).returncode == 0
    assert pq.read_table(out).to_pylist() == generate("word_sorting", 4, 42, {})


@pytest.mark.parametrize("args, message", [
    (["no_such_dataset"], "unknown reasoning-gym dataset 'no_such_dataset'"),
    (["spell_backward", "--config", "bogus=1"], "bad config"),
    (["spell_backward", "--config", "novalue"], "expected KEY=VALUE"),
    (["spell_backward", "--size", "0"], "--size must be at least 1"),
])
def test_bad_requests_exit_2_without_a_traceback(tmp_path: Path, args, message):
    done = cli("gym-data", *args, "--out", str(tmp_path / "x.jsonl"))
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_rows_whose_answer_the_scorer_does_not_pay_are_warned_about(tmp_path: Path):
    done = cli("gym-data", "graph_color", "--size", "2", "--out", str(tmp_path / "g.jsonl"))
    assert done.returncode == 0  # no reference answer: its scorer checks a colouring
    assert "does not pay its own answer on 2 of 2 rows" in done.stderr
    # arc_agi's grids are tuples JSON turns into lists: restored, so no warning (issue 36)
    done = cli("gym-data", "arc_agi", "--size", "2", "--out", str(tmp_path / "a.jsonl"))
    assert done.returncode == 0 and "does not pay" not in done.stderr


@pytest.mark.parametrize("dataset", DATASETS)
def test_honest_answers_are_paid_and_cheap_outputs_are_not(dataset: str):
    rows = generate(dataset, 20, 5, {})
    for row in rows:
        assert score(row, f"Let me work it out.\n<answer>{row['reference']}</answer>") == 1.0
        assert score(row, f"Let me work it out.\n{row['reference']}") == 1.0
        for hack in ("<answer></answer>", row["prompt"], f"<answer>{row['prompt']}</answer>",
                     f"<answer>{row['reference']} or 0</answer>",
                     f"<answer>0</answer><answer>{row['reference']}</answer>"):
            assert score(row, hack) == 0.0, (dataset, hack)


def test_two_candidates_are_a_hedge_where_the_scorer_reads_one():
    for row in generate("gsm_symbolic", 10, 5, {}):
        gold = row["reference"]
        other = str(int(float(gold)) + 1)
        for hack in (f"{gold} or {other}", f"{gold} {other}", f"{gold}, {other}"):
            assert score(row, f"<answer>{hack}</answer>") == 0.0, hack
        for honest in (f"{gold} euros", f"x = {gold}", f"The answer is {gold}",
                       f"{gold} (final answer)"):
            assert score(row, f"<answer>{honest}</answer>") == 1.0, honest


def test_scorer_credit_takes_out_what_a_non_answer_gets():
    row = generate("countdown", 1, 11, {})[0]
    numbers = json.loads(row["gym_entry"])["numbers"]
    wrong = " + ".join(map(str, numbers))  # well formed, wrong: the scorer pays 0.05
    reward = get_reward("gym_answer")({"credit": "scorer"})
    result = reward.score(Sample.from_dict({**row, "completion": f"<answer>{wrong}</answer>"}))
    # the decoy "0" gets the same format credit: it is taken out
    assert result.details["scorer"] == 0.05 and result.details["decoy"] == 0.05
    assert result.value == 0.0
    assert score(row, f"<answer>{wrong}</answer>") == 0.0
    row = generate("word_sorting", 1, 1, {})[0]
    words = row["reference"].split(", ")
    swapped = ", ".join([words[1], words[0], *words[2:]])
    value = score(row, f"<answer>{swapped}</answer>", credit="scorer")
    assert 0.0 < value < 1.0


def test_a_scorer_that_pays_anything_pays_only_the_reference():
    row = generate("game_of_life_halting", 1, 2, {})[0]
    other = "False" if row["reference"] == "True" else "True"
    assert score(row, f"<answer>{row['reference']}</answer>") == 1.0
    assert score(row, f"<answer>{other}</answer>") == 0.0
    assert score(row, "<answer>no idea</answer>", credit="scorer") == 0.0


def test_rows_without_the_gym_columns_are_an_error_status():
    reward = get_reward("gym_answer")({})
    missing = reward.score(Sample.from_dict({"prompt": "q", "completion": "a"}))
    assert missing.status.value == "error" and "gym_dataset" in missing.reason
    unknown = reward.score(Sample.from_dict({"prompt": "q", "completion": "a",
                                             "gym_dataset": "nope", "gym_entry": "{}"}))
    assert unknown.status.value == "error" and "nope" in unknown.reason


def test_coin_flip_does_not_pay_a_bare_zero_for_a_probability():
    # its scorer's prefix credit divides by the shorter string: "0" gets 1.0 for 0.109375
    rows = [r for r in generate("coin_flip", 20, 7, {}) if float(r["reference"]) != 0.0]
    assert rows
    for row in rows:
        assert score(row, f"<answer>{row['reference']}</answer>") == 1.0
        assert score(row, "<answer>0</answer>") == 0.0
        assert score(row, "<answer>0</answer>", credit="scorer") == 0.0


def test_mixed_rows_go_into_every_backends_files_and_come_back_scorable(tmp_path: Path):
    data = pytest.importorskip("rewardkit_trainers.launch.data")
    pq = pytest.importorskip("pyarrow.parquet")
    from rewardkit_trainers.config import DatasetSpec
    from rewardkit_trainers.rewards.easyr1 import unpack_answer

    rows = [*generate("spell_backward", 3, 1, {}), *generate("basic_arithmetic", 3, 1, {})]
    spec = DatasetSpec(train="unused.jsonl")
    reward = get_reward("gym_answer")({})

    swift = data.to_swift_jsonl(rows, spec, tmp_path / "swift.jsonl")
    for line, row in zip(swift.read_text().splitlines(), rows, strict=True):
        back = json.loads(line)  # ms-swift hands the ORM `solution` and the other columns
        sample = Sample.from_dict({"prompt": back["messages"][-1]["content"],
                                   "reference": back["solution"],
                                   "completion": f"<answer>{row['reference']}</answer>",
                                   **{k: v for k, v in back.items()
                                      if k not in ("messages", "solution")}})
        assert reward.score(sample).value == 1.0
    easyr1 = pq.read_table(data.to_easyr1_parquet(rows, spec, tmp_path / "e.parquet"))
    for cell, row in zip(easyr1.column("answer").to_pylist(), rows, strict=True):
        reference, _, metadata = unpack_answer(cell)
        sample = Sample.from_dict({"prompt": row["prompt"], "reference": reference,
                                   "completion": f"<answer>{row['reference']}</answer>",
                                   **metadata})
        assert reward.score(sample).value == 1.0
    verl = pq.read_table(data.to_verl_parquet(rows, spec, tmp_path / "v.parquet"))
    for info, truth, row in zip(verl.column("extra_info").to_pylist(),
                                verl.column("reward_model").to_pylist(), rows, strict=True):
        sample = Sample.from_dict({"prompt": info["prompt"], "reference": truth["ground_truth"],
                                   "completion": f"<answer>{row['reference']}</answer>",
                                   **json.loads(info["metadata"])})
        assert reward.score(sample).value == 1.0
