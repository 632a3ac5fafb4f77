"""Where a reward runs when the config sets no mode (issue 42 item 6): a length-scaled
reward graded by a cheap inline checker runs inline, since process-mode workers cost it
more than the reward (docs/performance.md, process_mode); graded by a checker that may
hang (math_answer, a plugin's process-mode reward) it stays in a worker under a hard
timeout (process mode's containment: test_faults.py, docs/fault-model.md)."""

from __future__ import annotations

from typing import Any

import pytest

from rewardkit import RewardSet, Sample

EXACT = {"reward": "exact_answer"}


def _mode(component: dict[str, Any]) -> str:
    rewards = RewardSet.from_dict({"workers": 1, "rewards": {"c": component}})
    return str(rewards.describe()[0]["mode"])


@pytest.mark.parametrize("name, extra", [("cosine_scaled", {"max_len": 100}),
                                         ("group_length", {})])
def test_a_length_reward_graded_by_a_cheap_checker_runs_inline(name: str,
                                                                extra: dict[str, Any]) -> None:
    cheap = {"reward": name, "params": {**extra, "correctness": EXACT}}
    assert _mode(cheap) == "inline"
    # the config still decides: an explicit mode, or a timeout (a hard timeout needs a
    # process to kill)
    assert _mode({**cheap, "mode": "process"}) == "process"
    assert _mode({**cheap, "timeout": 5}) == "process"
    # math_answer (sympy may hang) and a tokenizer to load keep the worker
    assert _mode({"reward": name, "params": extra}) == "process"
    # a plugin's checker keeps its declared mode: process here (it may hang) ...
    assert _mode({"reward": name, "params": {**extra, "correctness": {"reward": "hangs"}}}
                 ) == "process"
    # ... inline where it declares itself cheap (inline)
    assert _mode({"reward": name, "params": {**extra, "correctness": {"reward": "raises"}}}
                 ) == "inline"


def test_inline_and_process_give_the_same_verdicts() -> None:
    samples = [Sample(prompt=f"p{i // 4}", completion=f"{'x' * (i * 7 % 50)} answer {i % 3}",
                      reference="1", group=f"p{i // 4}") for i in range(24)]
    samples.append(Sample(prompt="p9", completion="no answer here", reference="",
                          group="p9"))
    for name, extra in (("cosine_scaled", {"max_len": 40}), ("group_length", {})):
        component = {"reward": name, "params": {**extra, "correctness": EXACT}}
        inline = RewardSet.from_dict({"rewards": {"c": component}})
        process = RewardSet.from_dict({"workers": 1,
                                       "rewards": {"c": {**component, "mode": "process"}}})
        assert inline.describe()[0]["mode"] == "inline"
        got_inline = [s.to_dict() for s in inline.score(samples).scores("c")]
        got_process = [s.to_dict() for s in process.score(samples).scores("c")]
        assert got_inline == got_process
        assert {s["status"] for s in got_inline} >= {"ok"}

