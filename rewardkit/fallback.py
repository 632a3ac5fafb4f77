"""Rule-then-judge: a component's ``fallback:`` reward, asked only where its rule says no.

Rule verifiers are precise but miss right answers written another way (published
measurements: a math rule accepts about 86% of correct answers); a judge catches many of
those but costs a request per sample and can be fooled. Asking the judge only about the
samples the rule paid less than ``below`` keeps the rule's verdict on the rest (no
request, no judge to fool) and lets the judge rescue its false negatives. The TinyV and
CompassVerifier papers use this pattern.

Each sample asked carries ``details["fallback"]``: the rule's value, the fallback's value
and status, and ``flipped`` (the fallback paid more, so its value is the score). The
metrics count them per component (:func:`fallback_counts`): ``asked``, ``flips`` and
``errors``, with their rates over the batch (``asked_rate``, ``flip_rate``,
``error_rate``; logged flat as ``rewards/NAME/fallback_asked_rate`` and so on).

>>> from rewardkit import RewardSet
>>> rs = RewardSet.from_dict({"rewards": {"accuracy": {
...     "reward": "exact_answer", "fallback": {"reward": "math_answer"}}}})
>>> result = rs.score([{"completion": "<answer>42</answer>", "reference": "42"},
...                    {"completion": "<answer>42.0</answer>", "reference": "42"},
...                    {"completion": "<answer>41</answer>", "reference": "42"}])
>>> result.values("accuracy")
[1.0, 1.0, 0.0]
>>> {k: v for k, v in result.metrics["components"]["accuracy"]["fallback"].items()
...  if not k.endswith("rate")}
{'asked': 2, 'flips': 1, 'errors': 0}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rewardkit.authoring import Reward
from rewardkit.execution import Outcome, dispatch_component, mode_for
from rewardkit.registry import registry
from rewardkit.types import ExecutionMode, Sample, Score, Status

if TYPE_CHECKING:
    from rewardkit.config import RewardConfig
    from rewardkit.config.models import Fallback

#: the details key of a sample the fallback was asked about
FALLBACK = "fallback"


@dataclass(frozen=True)
class ScheduledFallback:
    """A component's fallback, built from its config: the reward instance and how it runs."""

    name: str
    reward: Reward
    mode: ExecutionMode
    timeout: float | None
    below: float

    @classmethod
    def build(cls, config: Fallback) -> ScheduledFallback:
        reward = registry.get(config.reward)(config.params)
        return cls(config.reward, reward,
                   mode_for(config.mode or reward.default_mode(), config.timeout),
                   config.timeout, config.below)


def ask_fallback(config: RewardConfig, fallback: ScheduledFallback, batch: Sequence[Sample],
                 indices: Sequence[int] | None, out: Outcome) -> None:
    """Ask ``fallback`` about the samples of ``out`` (those at ``indices``; all when None)
    that the rule scored ok below ``fallback.below``, and write each one's verdict back
    into ``out``: the fallback's value where it is higher, the rule's otherwise."""
    scope = range(len(batch)) if indices is None else indices
    asked = [i for i in scope if (value := out.values[i]) is not None
             and value < fallback.below and out.score(i).status is Status.OK]
    if not asked:
        return
    second = Outcome(len(batch))
    dispatch_component(config, fallback.reward, fallback.mode, fallback.timeout, list(batch), asked,
                       None, second)
    for i in asked:
        rule, judged = out.score(i), second.score(i)
        rule_value = rule.value if rule.value is not None else 0.0
        paid = judged.status is Status.OK and judged.value is not None
        flipped = paid and judged.value is not None and judged.value > rule_value
        record = {"reward": fallback.name, "rule": rule.value, "value": judged.value,
                  "status": str(judged.status), "flipped": flipped}
        if judged.reason:
            record["reason"] = judged.reason
        details = {**(rule.details or {}), FALLBACK: record}
        if flipped:
            reason = f"{fallback.name} paid {judged.value:g} where the rule paid {rule_value:g}"
            out.put(i, Score(judged.value, Status.OK, reason, details))
        else:
            out.put(i, Score(rule.value, rule.status, rule.reason, details))


def fallback_counts(out: Outcome) -> dict[str, int]:
    """How many samples of ``out`` the fallback was asked about, how many it flipped and
    how many it failed to grade (the rule's verdict stood)."""
    asked = flips = errors = 0
    for score in out.scores.values():
        record = (score.details or {}).get(FALLBACK)
        if not isinstance(record, dict):
            continue
        asked += 1
        flips += bool(record.get("flipped"))
        errors += record.get("status") in (Status.ERROR, Status.TIMEOUT)
    return {"asked": asked, "flips": flips, "errors": errors}


def fallback_metrics(counts: dict[str, int], n: int) -> dict[str, float]:
    """The counts with their rates over ``n`` samples (the batch, as ``error_rate`` is):
    ``asked_rate``, ``flip_rate``, ``error_rate``."""
    rates = {"asked_rate": "asked", "flip_rate": "flips", "error_rate": "errors"}
    return {**counts, **{rate: (counts[key] / n if n else 0.0) for rate, key in rates.items()}}
