"""Writing rewards: decorator and class, params, modes, text of chat completions."""

from __future__ import annotations

import pickle

import faulty_rewards
import pytest
from pydantic import ValidationError

from rewardkit import ExecutionMode, Params, Reward, Sample, Score, Status, completion_text, reward


class P(Params):
    limit: int = 3


@reward(params=P)
def short(sample: Sample, params: P) -> bool:
    """True when short."""
    return len(sample.text) <= params.limit


def test_decorator_builds_a_reward_class_with_name_description_and_params():
    assert short.name == "short" and short.description == "True when short."
    assert short.Params is P and short.mode is ExecutionMode.INLINE
    assert short({"limit": 5}).score(Sample(completion="abcd")) is True


def test_params_are_validated_and_unknown_keys_refused():
    with pytest.raises(ValidationError):
        short({"limit": "many"})
    with pytest.raises(ValidationError):
        short({"limt": 2})


def test_async_function_gets_async_mode():
    assert faulty_rewards.slow_async.mode is ExecutionMode.ASYNC


def test_reward_pickles_by_reference_with_its_params():
    inst = faulty_rewards.slow_async({"delay": 0.5})
    back = pickle.loads(pickle.dumps(inst))
    assert type(back) is faulty_rewards.slow_async and back.params.delay == 0.5


def test_class_reward_gets_snake_case_name_and_setup_runs():
    class KeywordHit(Reward):
        """Pays for a keyword."""

        def setup(self) -> None:
            self.word = "ok"

        def score(self, sample: Sample) -> Score:
            return Score.ok(float(self.word in sample.text))

    assert KeywordHit.name == "keyword_hit"
    assert KeywordHit().score(Sample(completion="ok!")).value == 1.0


@pytest.mark.parametrize(
    ("completion", "text"),
    [
        ("plain", "plain"),
        ([{"role": "assistant", "content": "a"}], "a"),
        ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], "a"),
        ([{"role": "assistant", "content": [{"type": "text", "text": "x"},
                                            {"type": "image"}]}], "x"),
        ({"role": "assistant", "content": "single"}, "single"),
        (None, ""),
    ],
)
def test_completion_text_handles_strings_and_chat_messages(completion, text):
    assert completion_text(completion) == text
    assert Sample(completion=completion).text == text


def test_sample_from_row_puts_other_columns_in_metadata():
    s = Sample.from_dict({"prompt": "p", "completion": "c", "reference": 4, "task": "math"})
    assert (s.prompt, s.text, s.reference, s.metadata) == ("p", "c", 4, {"task": "math"})


def test_decorator_setup_runs_once_per_instance_with_the_params():
    seen: list[int] = []

    @reward(params=P, setup=lambda params: seen.append(params.limit))
    def with_setup(sample: Sample, params: P) -> float:
        return 1.0

    inst = with_setup({"limit": 7})
    inst.score(Sample(completion="x"))
    inst.score(Sample(completion="y"))
    assert seen == [7]


def test_a_decorated_reward_scores_a_text_or_a_sample_as_written():
    assert short("abc") == Score(1.0)  # the function returns True: a Score all the same
    assert short("abcd").value == 0.0
    assert short(Sample(prompt="q", completion="abcd"), limit=4).value == 1.0


def test_every_reward_tried_by_hand_returns_a_score():
    """One return type: a reward returning a float (soft_format) and one returning a
    Score (tag_count) read the same way, and None or NaN read as the engine records
    them."""
    from rewardkit import get_reward

    text = "<think>\nx\n</think>\n<answer>\n7\n</answer>"
    for name in ("soft_format", "tag_count", "answer_is_number"):
        got = get_reward(name)(text)
        assert isinstance(got, Score) and got.status is Status.OK, (name, got)

    @reward
    def nothing(sample: Sample) -> float | None:
        return None

    @reward
    def not_a_number(sample: Sample) -> float:
        return float("nan")

    assert nothing("x").status is Status.SKIPPED
    assert not_a_number("x").status is Status.ERROR


def test_calling_it_with_params_or_nothing_still_builds_an_instance():
    assert isinstance(short(), short) and isinstance(short({"limit": 1}), short)
    assert short(P(limit=1)).params.limit == 1


def test_params_given_as_keywords_are_validated():
    with pytest.raises(ValidationError):
        short("abc", limt=2)


def test_a_reward_tried_by_hand_still_pickles_by_reference():
    assert pickle.loads(pickle.dumps(short)) is short
    assert pickle.loads(pickle.dumps(short))("ab").value == 1.0
    instance = pickle.loads(pickle.dumps(short({"limit": 1})))
    assert type(instance) is short and instance.params.limit == 1


def test_an_async_reward_tried_by_hand_runs_to_its_value():
    assert faulty_rewards.slow_async("done", delay=0.0) == Score(1.0)


def test_a_group_reward_tried_by_hand_scores_a_list():
    class SameLength(Reward):
        group = True

        def score_group(self, samples: list[Sample]) -> list[float]:
            return [float(len({len(s.text) for s in samples}) == 1)] * len(samples)

    assert SameLength(["ab", Sample(completion="cd")]) == [Score(1.0), Score(1.0)]
    assert SameLength("ab") == [Score(1.0)]


def test_a_class_reward_is_tried_the_same_way():
    class HasOk(Reward):
        def score(self, sample: Sample) -> Score:
            return Score.ok(float("ok" in sample.text))

    assert HasOk("ok!").value == 1.0
    with pytest.raises(TypeError, match="one sample at a time"):
        HasOk(["ok", "no"])
