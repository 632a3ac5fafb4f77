"""Lengths in real tokens: the trainer's completion_ids first, else a named local
tokenizer (built here from a word list, never downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardkit import RewardSet, Sample, get_reward
from rewardkit.text.lengths import LengthError, completion_length, load_tokenizer

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rewardkit_trainers.quickstart import build_tokenizer

    out = tmp_path_factory.mktemp("tokenizer")
    build_tokenizer(["the answer is four", "这个 答案"]).save_pretrained(out)
    return out


def test_completion_ids_win_over_the_tokenizer(tokenizer_dir: Path) -> None:
    sample = Sample(completion="the answer is four", metadata={"completion_ids": [1, 2]})
    assert completion_length(sample, "tokens", str(tokenizer_dir)) == (2, "completion_ids")


def test_the_named_tokenizer_counts_when_there_are_no_ids(tokenizer_dir: Path) -> None:
    tok = load_tokenizer(str(tokenizer_dir))
    text = "the answer is four"
    expected = len(tok(text, add_special_tokens=False)["input_ids"])
    assert expected == 7  # four words and three spaces, in this word-level tokenizer
    assert completion_length(Sample(completion=text), "tokens", str(tokenizer_dir)) == (
        expected, f"tokenizer:{tokenizer_dir}")


def test_the_tokenizer_is_loaded_once_per_process(tokenizer_dir: Path) -> None:
    assert load_tokenizer(str(tokenizer_dir)) is load_tokenizer(str(tokenizer_dir))


def test_a_tokenizer_json_file_works_too(tokenizer_dir: Path) -> None:
    length, source = completion_length(Sample(completion="the answer"), "tokens",
                                       str(tokenizer_dir / "tokenizer.json"))
    assert (length, source) == (3, f"tokenizer:{tokenizer_dir / 'tokenizer.json'}")


def test_a_missing_tokenizer_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LengthError, match="does not exist"):
        completion_length(Sample(completion="x"), "tokens", str(tmp_path / "nope"))


def test_overlong_penalty_counts_tokenizer_tokens_not_words(tokenizer_dir: Path) -> None:
    # 4 words but 7 tokens: past max_length 6 in tokens, free in words
    params = {"max_length": 6, "buffer": 2, "unit": "tokens", "tokenizer": str(tokenizer_dir)}
    score = get_reward("overlong_penalty")(params).score(Sample(completion="the answer is four"))
    assert score.value == -1.0
    assert score.details is not None and score.details["length_source"].startswith("tokenizer:")
    words = get_reward("overlong_penalty")({**params, "unit": "words"})
    assert words.score(Sample(completion="the answer is four")).value == 0.0


def test_token_lengths_work_in_a_process_worker(tokenizer_dir: Path) -> None:
    rs = RewardSet.from_dict({"rewards": {"len": {
        "reward": "overlong_penalty", "mode": "process",
        "params": {"max_length": 6, "buffer": 2, "unit": "tokens",
                   "tokenizer": str(tokenizer_dir)}}}})
    assert rs.score([{"completion": "the answer is four"}]).values("len") == [-1.0]


def test_repetition_counts_token_ngrams_from_the_tokenizer(tokenizer_dir: Path) -> None:
    reward = get_reward("repetition_penalty")(
        {"n": 1, "unit": "tokens", "tokenizer": str(tokenizer_dir)})
    # tokens: the, ' ', the, ' ', the -> 5 unigrams, 2 distinct
    assert reward.score(Sample(completion="the the the")).value == pytest.approx(-0.6)


def test_a_trainers_token_count_is_the_length_when_it_passes_no_ids(
        tokenizer_dir: Path) -> None:
    sample = Sample(completion="one two three", metadata={"completion_length": 7})
    assert completion_length(sample, "tokens", str(tokenizer_dir)) == (7, "completion_length")
    with_ids = Sample(completion="x", metadata={"completion_length": 7,
                                               "completion_ids": [1, 2]})
    assert completion_length(with_ids, "tokens") == (2, "completion_ids")


def test_a_token_count_that_is_no_count_is_a_clear_error() -> None:
    for bad in (-1, 2.5, "7", True):
        with pytest.raises(LengthError, match="completion_length"):
            completion_length(Sample(completion="x", metadata={"completion_length": bad}),
                              "tokens")


def test_token_ngrams_need_ids_not_only_a_count() -> None:
    score = get_reward("repetition_penalty")({"n": 1, "unit": "tokens"}).score(
        Sample(completion="a a a", metadata={"completion_length": 3}))
    assert score.status == "error" and "only its token count" in score.reason
