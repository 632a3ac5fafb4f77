"""One rule for "the rollout ended / was cut" on every backend (issue 40, item 1).

The same trajectories go through each backend's own rollout and reward code, as the
backend's multi-turn tests run them: TRL's ``GRPOTrainer`` step with its tool loop
(``test_trl_multiturn``), ms-swift's ``run_multi_turn`` and ``compute_rewards_per_func``
(``test_swift_multiturn``, in .venv-swift), verl's ``AgentLoopWorker`` with
``RewardkitToolAgentLoop`` and both reward paths (``test_verl_multiturn``, in .venv-verl).
Each adapter reads how the rollout ended from its backend's own signal and applies
:func:`rewardkit.trajectory.rollout_end`; the totals under examples/tool-use.yaml's rewards
are then the same on every backend:

- finished: the right call, its result, the answer;
- cut mid-answer: no call, the answer cut at the length budget;
- cut after an unrun call: two rounds of the right call, then the answer written beside a
  third call that the turn limit (3 assistant turns on every backend) never ran;
- cut mid-answer after a tool result (ms-swift and verl; TRL's run has no such row).

Before, the unrun call scored 0.023 on TRL (tool_calls, truncated), 0.523 on ms-swift
(its last turn's "stop", so not truncated; the call text left in the answer, which math
grading then missed) and 1.523 on verl (tool_calls, not truncated, the answer paid).
"""

from __future__ import annotations

import pytest
import yaml
from backend_venvs import tool_use_rewards
from test_swift_multiturn import COMPONENTS, swift_run  # noqa: F401  (module fixture)
from test_trl_multiturn import step  # noqa: F401  (module fixture)
from test_verl_multiturn import planned, result  # noqa: F401  (module fixtures)

from rewardkit import RewardSet, parse_config

EXAMPLE = parse_config(yaml.safe_load(tool_use_rewards()))
WEIGHTS = RewardSet(EXAMPLE).weights(0)
#: case -> its rollout's name in the TRL, ms-swift and verl runs, and its total
CASES = {
    "finished": (("honest", "honest", "honest"), 1.95),
    "cut mid-answer": (("rambles", "rambles", "rambles"), -0.5),
    "cut after an unrun call": (("loops", "cut_call", "cut_call"), 0.02333333),
    "cut mid-answer after a tool result": ((None, "truncated", "truncated"), 0.45),
}


def trl_totals(run: dict) -> dict[str, float]:
    """The samples TRL's step built (its messages, tools, finish reason and truncation as
    the adapter read them off the trainer), scored with the example's rewards."""
    samples = run["result"].samples
    scored = RewardSet(EXAMPLE).score(samples, step=0)
    totals: dict[str, float] = {}
    for sample, total in zip(samples, scored.totals, strict=True):
        scenario = sample.prompt[-1]["content"].split("(")[-1].rstrip(")")
        totals.setdefault(scenario, total)
    return totals


def swift_totals(run: dict) -> dict[str, float]:
    """ms-swift's per-component rewards from its own reward call, weighted and summed
    (``on_error: ignore``: a component that could not grade adds 0)."""
    return {rollout: sum(WEIGHTS[name] * (value or 0.0)
                         for name, value in zip(COMPONENTS, row, strict=True))
            for rollout, row in zip(run["rollouts"], run["rewards"], strict=True)}


def test_the_same_rollout_gets_the_same_total_on_every_backend(
        step, swift_run, result):  # noqa: F811  (the fixtures imported above)
    trl, swift = trl_totals(step), swift_totals(swift_run)
    streamed = dict(zip(result["cases"], result["streamed_score"], strict=True))
    batched = dict(zip(result["cases"], result["batched_score"], strict=True))
    for case, ((on_trl, on_swift, on_verl), total) in CASES.items():
        got = {"ms-swift": swift[on_swift], "verl streamed": streamed[on_verl],
               "verl batched": batched[on_verl]}
        if on_trl is not None:
            got["TRL"] = trl[on_trl]
        for backend, value in got.items():
            assert value == pytest.approx(total, abs=1e-6), (case, backend, got)


def test_each_backend_reads_the_unrun_call_as_a_cut_rollout(step, result):  # noqa: F811
    """TRL's and verl's readings (ms-swift's shows in its totals): finish reason
    ``tool_calls``, truncated, the final turn asking for the call that never ran."""
    samples = step["result"].samples
    loops = next(s for s in samples if s.prompt[-1]["content"].endswith("(loops)"))
    verl = result["trajectories"][result["cases"].index("cut_call")]
    for messages, meta in ((loops.completion, loops.metadata), (verl["messages"], verl)):
        assert [m["role"] for m in messages] == ["assistant", "tool", "assistant", "tool",
                                                 "assistant"]
        assert messages[-1]["tool_calls"]
        assert (meta["finish_reason"], meta["truncated"]) == ("tool_calls", True)
