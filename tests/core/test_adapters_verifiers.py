"""The verifiers adapter, against verifiers' own Rubric (0.3.x: ``verifiers.Rubric``).

verifiers is heavy (transformers, openai, anthropic, mcp, ...) and 0.4 dropped the classic
Rubric, so it is not a test dependency: these tests run where ``verifiers.Rubric``
imports (``pip install 'verifiers>=0.3,<0.4'``, e.g. into a venv layered on .venv) and are
skipped otherwise. The refusals and the function shapes are checked without it.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from pathlib import Path
from typing import Any

import pytest

from rewardkit import ConfigError
from rewardkit.adapters.verifiers import FAILED_KEY, reward_functions, rubric_from_config

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "gsm8k-rlvr.yaml"


def verifiers_rubric() -> Any:
    vf = pytest.importorskip("verifiers", reason="verifiers is not installed (heavy; "
                             "pip install 'verifiers>=0.3,<0.4' to run these)")
    if not hasattr(vf, "Rubric"):
        pytest.skip(f"verifiers {vf.__version__} has no verifiers.Rubric (0.4 moved to v1)")
    return vf


def state(vf: Any, text: str, answer: str = "4", info: dict[str, Any] | None = None) -> Any:
    return vf.State(input={"prompt": [{"role": "user", "content": "What is 2 + 2?"}],
                           "answer": answer, "info": info or {}, "example_id": 0},
                    completion=[{"role": "assistant", "content": text}], trajectory=[])


def test_a_rubric_scores_rollouts_with_the_configs_weights() -> None:
    vf = verifiers_rubric()
    rubric = rubric_from_config(CONFIG)
    assert isinstance(rubric, vf.Rubric)
    assert rubric._get_reward_func_names() == ["format", "correctness"]
    assert rubric._get_reward_weights() == [1.0, 1.0]
    right = state(vf, "2 + 2 = 4\n#### The final answer is 4")
    wrong = state(vf, "2 + 2 = 5\n#### The final answer is 5")
    asyncio.run(rubric.score_rollout(right))
    asyncio.run(rubric.score_rollout(wrong))
    assert right["reward"] == 1.5 and right["metrics"] == {"format": 0.5, "correctness": 1.0}
    assert wrong["reward"] == 0.5 and wrong["metrics"] == {"format": 0.5, "correctness": 0.0}


def test_weights_come_from_the_config_and_a_group_reward_sees_the_group() -> None:
    vf = verifiers_rubric()
    rubric = rubric_from_config({"rewards": {
        "fmt": {"reward": "soft_format", "weight": 0.25},
        "short": {"reward": "group_length", "weight": 2.0, "mode": "inline"}}})
    assert rubric._get_reward_weights() == [0.25, 2.0]
    assert rubric.has_group_rewards  # verifiers' own reading of the signature
    states = [state(vf, "<think>x</think><answer>4</answer>"),
              state(vf, "<think>" + "long " * 20 + "</think><answer>4</answer>")]
    asyncio.run(rubric.score_group(states))
    short, long_ = (s["metrics"]["short"] for s in states)
    assert short == 0.5 and long_ == -0.5  # shortest correct +0.5, longest -0.5
    assert states[0]["reward"] == pytest.approx(0.25 * states[0]["metrics"]["fmt"] + 2 * 0.5)


def test_a_failed_grading_gets_the_fallback_and_is_counted() -> None:
    vf = verifiers_rubric()
    rubric = rubric_from_config({"rewards": {"boom": {"reward": "raises"}}}, fallback=-1.0)
    failed = state(vf, "boom")
    asyncio.run(rubric.score_rollout(failed))
    assert failed["reward"] == -1.0 and failed[FAILED_KEY] == ["boom"]
    fine = state(vf, "fine")
    asyncio.run(rubric.score_rollout(fine))
    assert fine["reward"] == 1.0 and FAILED_KEY not in fine


def test_what_a_rubric_cannot_do_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="normalize_then_sum"):
        reward_functions({"aggregate": "normalize_then_sum",
                          "rewards": {"fmt": {"reward": "soft_format"}}})
    with pytest.raises(ConfigError, match=r"rewards\.fmt: .*changes with the step"):
        reward_functions({"rewards": {"fmt": {
            "reward": "soft_format",
            "stages": [{"until_step": 10, "weight": 1.0}, {"weight": 0.5}]}}})


def test_the_functions_have_the_shapes_verifiers_dispatches_on() -> None:
    funcs, weights = reward_functions(CONFIG)
    assert [f.__name__ for f in funcs] == ["format", "correctness"] and weights == [1.0, 1.0]
    assert "answer" in inspect.signature(funcs[1]).parameters
    value = funcs[1](prompt="q", completion="#### 4", answer="4")
    assert value == 1.0 and not math.isnan(value)
