"""Built-in correctness rewards scaled by length (registered as a default plugin).

``cosine_scaled``
    correctness on a cosine schedule of the completion length (Demystifying Long CoT,
    appendix C.1; open-r1's ``cosine``, TRL's ``get_cosine_scaled_reward``, ms-swift's
    ``cosine`` ORM): a short correct answer earns most, a short wrong one loses most.
``group_length``
    Kimi 1.5's length reward over the completions of one prompt: the shortest earns
    +0.5, the longest -0.5; a wrong answer never earns a positive length bonus.

Both decide correctness with another registered reward (``math_answer`` unless
``correctness`` names another one, e.g. ``exact_answer``) and run in a worker process
with a hard timeout, as that checker may call sympy; with a checker that runs inline
(``exact_answer``: cheap and pure) and no tokenizer to load, they run inline too, unless
the config sets ``mode`` or ``timeout`` (process-mode workers would cost more than the
reward: docs/performance.md, process_mode).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rewardkit.authoring import Reward
from rewardkit.hookspecs import hookimpl
from rewardkit.text.lengths import LengthError, LengthParams, completion_length
from rewardkit.types import ExecutionMode, Sample, Score, Status, coerce_value


class Correctness(BaseModel):
    """Which registered reward decides whether an answer is correct."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reward: str = Field("math_answer", description="a registered per-sample reward")
    params: dict[str, Any] = Field(default_factory=dict, description="its parameters")
    correct_at_least: float = Field(
        1.0, description="a value at or above this counts as correct (ms-swift: acc >= 1)"
    )

    @model_validator(mode="after")
    def _checker_exists(self) -> Correctness:
        self.checker()  # unknown names and bad params fail when the config loads
        return self

    def checker(self) -> Reward:
        """The correctness reward, built from ``reward`` and ``params``."""
        from rewardkit.registry import get_reward

        cls = get_reward(self.reward)
        if cls.group or cls.mode is ExecutionMode.ASYNC:
            raise ValueError(f"correctness reward {self.reward!r} must be a per-sample, "
                             "synchronous reward")
        return cls(self.params)


class LengthScaledParams(LengthParams):
    """Correctness and length settings shared by cosine_scaled and group_length."""

    correctness: Correctness = Field(
        default_factory=lambda: Correctness.model_validate({}),
        description="the reward that decides correctness",
    )
    ungradable: Literal["error", "correct"] = Field(
        "error",
        description="when correctness cannot be graded (e.g. an unparseable reference): "
        "error (status error, no reward) or correct (open-r1's choice: count it correct)",
    )


def _is_correct(checker: Reward, sample: Sample, params: LengthScaledParams) -> bool | Score:
    """True / False, or the Score to return when correctness could not be decided."""
    verdict = coerce_value(checker.score(sample))
    if verdict.status is Status.OK and verdict.value is not None:
        return verdict.value >= params.correctness.correct_at_least
    if params.ungradable == "correct":
        return True
    if verdict.status is Status.SKIPPED:
        return Score.skip(f"correctness does not apply: {verdict.reason}")
    return Score.error(f"correctness cannot be graded: {verdict.reason}")


def _length_mode(checker: Reward, params: LengthScaledParams) -> ExecutionMode:
    """Where a length-scaled reward runs by default: inline when its correctness checker
    runs inline by default (cheap and pure, e.g. ``exact_answer``) and no tokenizer has to
    be loaded; else in a worker with a hard timeout (``math_answer`` may call sympy)."""
    if checker.default_mode() is ExecutionMode.INLINE and params.tokenizer is None:
        return ExecutionMode.INLINE
    return ExecutionMode.PROCESS


class CosineParams(LengthScaledParams):
    """Parameters of cosine_scaled (names and defaults as TRL and open-r1)."""

    max_len: int = Field(gt=0, description="length at which the long-length values apply")
    min_value_wrong: float = Field(-1.0, description="wrong answer, zero length")
    max_value_wrong: float = Field(-0.5, description="wrong answer, max_len and longer")
    min_value_correct: float = Field(0.5, description="correct answer, max_len and longer")
    max_value_correct: float = Field(1.0, description="correct answer, zero length")
    clamp: bool = Field(
        True,
        description="lengths past max_len count as max_len (TRL); false: the cosine "
        "goes on past max_len and climbs back (open-r1, ms-swift)",
    )


class CosineScaled(Reward):
    """Correctness scaled by length on a cosine schedule: short and right earns most.

    ``v_lo + (v_hi - v_lo) * (1 + cos(pi * length / max_len)) / 2`` where, for a correct
    answer, ``v_hi = max_value_correct`` (zero length) and ``v_lo = min_value_correct``
    (``max_len``); for a wrong one ``v_hi = min_value_wrong`` and ``v_lo =
    max_value_wrong``, so a short wrong answer is punished most and exploring longer
    is cheaper. Defaults: correct 1.0 -> 0.5, wrong -1.0 -> -0.5; at half of ``max_len``
    a correct answer earns 0.75, a wrong one -0.75.

    ms-swift's ``cosine_min_len_value_wrong`` / ``cosine_max_len_value_wrong`` /
    ``cosine_min_len_value_correct`` / ``cosine_max_len_value_correct`` are
    ``min_value_wrong`` / ``max_value_wrong`` / ``max_value_correct`` /
    ``min_value_correct`` here (its defaults: -0.5 / 0.0 / 1.0 / 0.5, tokens, clamp false).
    """

    name = "cosine_scaled"
    Params = CosineParams
    params: CosineParams
    mode = ExecutionMode.PROCESS
    timeout = 10.0

    def setup(self) -> None:
        self._checker = self.params.correctness.checker()

    def default_mode(self) -> ExecutionMode:
        return _length_mode(self._checker, self.params)

    def score(self, sample: Sample) -> Score:
        p = self.params
        correct = _is_correct(self._checker, sample, p)
        if isinstance(correct, Score):
            return correct
        try:
            length, source = completion_length(sample, p.unit, p.tokenizer)
        except LengthError as exc:
            return Score.error(str(exc))
        progress = length / p.max_len
        if p.clamp:
            progress = min(progress, 1.0)
        cosine = math.cos(progress * math.pi)
        if correct:
            lo, hi = p.min_value_correct, p.max_value_correct
        else:
            lo, hi = p.max_value_wrong, p.min_value_wrong
        value = lo + 0.5 * (hi - lo) * (1.0 + cosine)
        return Score.ok(value, "correct" if correct else "wrong", length=length,
                        length_source=source)


class GroupLengthParams(LengthScaledParams):
    """Parameters of group_length."""


class GroupLength(Reward):
    """Kimi 1.5's length reward over the completions of one prompt.

    ``lam = 0.5 - (length - shortest) / (longest - shortest)`` over the group; a correct
    answer earns ``lam`` (+0.5 for the shortest, -0.5 for the longest), a wrong one
    ``min(0, lam)``. All of one length: 0 for all. Lengths are measured on every
    completion; a completion whose correctness cannot be graded gets that status.
    Example (chars): correct answers of 10 and 20 chars -> 0.5 and -0.5.
    """

    name = "group_length"
    Params = GroupLengthParams
    params: GroupLengthParams
    group = True
    mode = ExecutionMode.PROCESS
    timeout = 30.0

    def setup(self) -> None:
        self._checker = self.params.correctness.checker()

    def default_mode(self) -> ExecutionMode:
        return _length_mode(self._checker, self.params)

    def score_group(self, samples: Sequence[Sample]) -> list[Score]:
        return _group_length(self._checker, samples, self.params)


def _group_length(checker: Reward, samples: Sequence[Sample],
                  params: GroupLengthParams) -> list[Score]:
    lengths: list[int] = []
    sources: list[str] = []
    for sample in samples:
        try:
            length, source = completion_length(sample, params.unit, params.tokenizer)
        except LengthError as exc:
            return [Score.error(str(exc)) for _ in samples]
        lengths.append(length)
        sources.append(source)
    shortest, longest = min(lengths, default=0), max(lengths, default=0)
    out: list[Score] = []
    for sample, length, source in zip(samples, lengths, sources, strict=True):
        correct = _is_correct(checker, sample, params)
        if isinstance(correct, Score):
            out.append(correct)
            continue
        if longest == shortest:
            out.append(Score.ok(0.0, "all completions have one length", length=length,
                                length_source=source))
            continue
        lam = 0.5 - (length - shortest) / (longest - shortest)
        value = lam if correct else min(0.0, lam)
        out.append(Score.ok(value, "correct" if correct else "wrong", length=length,
                            length_source=source))
    return out


@hookimpl
def register_rewards(register: Callable[[type[Reward]], None]) -> None:
    register(CosineScaled)
    register(GroupLength)
