"""The adapters' shared scorer reuses the result of an identical last call (TRL calls every
reward function of a step on the same batch); "identical" must cover everything a reward
reads, or a batch is paid another batch's scores."""

from __future__ import annotations

from rewardkit_trainers.rewards.scoring import SharedScorer

from rewardkit import Sample
from rewardkit.config import parse_config

TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}}}]


def rollout(argument: str) -> list[dict]:
    return [{"role": "assistant", "tool_calls": [{"id": "1", "type": "function", "function": {
                "name": "add", "arguments": argument}}]},
            {"role": "tool", "tool_call_id": "1", "content": "1"},
            {"role": "assistant", "content": "The answer is 1."}]


def test_two_batches_with_the_same_final_text_but_other_trajectories_are_scored_apart():
    """Same prompt, final answer, reference and metadata; the tool calls differ (a valid one,
    then an invalid one): the second batch is scored, not served the first one's result
    (ms-swift's several generation batches of one step hit this)."""
    scorer = SharedScorer(parse_config({"rewards": {"valid": {"reward": "tool_call_valid"}}}))
    honest = Sample(prompt="q", completion=rollout('{"a": 1}'), metadata={"tools": TOOLS})
    broken = Sample(prompt="q", completion=rollout('{"a": "one"}'), metadata={"tools": TOOLS})
    assert honest.text == broken.text
    first = scorer.score([honest], step=3).totals
    second = scorer.score([broken], step=3).totals
    assert (first, second) == ([1.0], [0.0])


def test_two_batches_that_differ_only_in_their_groups_are_scored_apart():
    """Per-group rewards and group normalisation read the group: the same rows grouped
    otherwise are another batch, not a cache hit."""
    scorer = SharedScorer(parse_config({"rewards": {"valid": {"reward": "tool_call_valid"}}}))
    rows = [Sample(prompt="q", completion=rollout('{"a": 1}'), metadata={"tools": TOOLS})]
    regrouped = [Sample(prompt="q", completion=rollout('{"a": 1}'), metadata={"tools": TOOLS},
                        group="other")]
    first = scorer.score(rows, step=0)
    assert scorer.score(rows, step=0) is first  # the reuse this cache exists for
    assert scorer.score(regrouped, step=0) is not first
