"""The ``python`` reward: a reward function from the config, run in the sandbox."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import ValidationError
from rewardkit_code import PythonReward, compile_reward_source

from rewardkit import ConfigError, ExecutionMode, RewardSet, Sample, Score, Status, parse_config

KEYWORDS = """\
import re
from collections import Counter

def reward(completion, reference, metadata):
    words = Counter(re.findall(r"[a-z]+", completion.lower()))
    found = [word for word in reference if words[word]]
    print("found", found)          # goes to a collector, not to the verdict
    if metadata.get("strict"):
        return 1.0 if len(found) == len(reference) else 0.0
    return len(found) / len(reference)
"""


def reward_of(source: str, **params: Any) -> PythonReward:
    return PythonReward({"source": source, **params})


def body(lines: str) -> str:
    indented = "\n".join(f"    {line}" for line in lines.splitlines())
    return f"def reward(completion, reference, metadata):\n{indented}\n"


def test_it_is_an_async_group_reward() -> None:
    rs = RewardSet.from_dict(
        {"rewards": {"kw": {"reward": "python", "params": {"source": KEYWORDS}}}}
    )
    assert rs.components["kw"].mode is ExecutionMode.ASYNC
    assert rs.components["kw"].reward_class.group


def test_the_function_gets_completion_text_reference_and_metadata() -> None:
    rs = RewardSet.from_dict(
        {"rewards": {"kw": {"reward": "python", "params": {"source": KEYWORDS}}}}
    )
    rows = [
        {"prompt": "a", "completion": "Fever and a cough.", "reference": ["fever", "cough"]},
        {"prompt": "a", "completion": [{"role": "assistant", "content": "fever"}],
         "reference": ["fever", "cough"]},
        {"prompt": "b", "completion": "fever", "reference": ["fever", "cough"], "strict": True},
    ]
    assert rs.score(rows).values("kw") == [1.0, 0.5, 0.0]


def test_none_is_skipped_and_other_results_are_errors() -> None:
    samples = [Sample(completion=c) for c in ("none", "text", "nan", "true", "7")]
    source = body(
        "if completion == 'none':\n    return None\nif completion == 'text':\n    return 'high'\n"
        "if completion == 'nan':\n    return float('nan')\nif completion == 'true':\n"
        "    return True\nreturn int(completion)"
    )
    scores = reward_of(source).grade_many(samples)
    assert [s.status for s in scores] == [
        Status.SKIPPED, Status.ERROR, Status.ERROR, Status.OK, Status.OK
    ]
    assert [s.value for s in scores[3:]] == [1.0, 7.0]
    assert scores[1].reason == "reward returned str, expected a number"


def test_an_exception_is_an_error_with_the_source_line() -> None:
    source = body("x = 1\nreturn reference['missing']")
    score = reward_of(source).grade(Sample(completion="", reference={}))
    assert (score.status, score.value) == (Status.ERROR, None)
    assert score.reason == "line 3: KeyError: 'missing'"


def test_a_source_that_fails_at_load_errs_every_sample() -> None:
    source = "x = 1 / 0\n" + body("return 1.0")
    scores = reward_of(source).grade_many([Sample(completion="a"), Sample(completion="b")])
    assert {s.reason for s in scores} == {
        "the source failed to load: line 1: ZeroDivisionError: division by zero"
    }


def test_a_slow_call_times_out_alone_and_its_chunk_mates_keep_their_scores() -> None:
    source = body("if completion == 'loop':\n    while True:\n        pass\nreturn len(completion)")
    samples = [Sample(completion=c) for c in ("a", "loop", "abc", "ab")]
    started = time.monotonic()
    scores = reward_of(source, timeout_s=0.5).grade_many(samples)
    assert time.monotonic() - started < 4
    assert [s.status for s in scores] == [Status.OK, Status.TIMEOUT, Status.OK, Status.OK]
    assert [s.value for s in scores] == [1.0, None, 3.0, 2.0]


def test_a_loop_that_swallows_every_exception_is_still_stopped() -> None:
    source = body("while True:\n    try:\n        pass\n    except BaseException:\n        pass")
    score = reward_of(source, timeout_s=0.3).grade(Sample(completion=""))
    assert score.status is Status.TIMEOUT


def test_running_out_of_memory_is_an_error() -> None:
    source = body("x = [0] * (10 ** 10)\nreturn 1.0")
    assert reward_of(source, memory_mb=128).grade(Sample(completion="")).status is Status.ERROR


def test_chunking_does_not_change_the_scores() -> None:
    samples = [Sample(completion="fever cough " * i, reference=["fever", "cough", "rash"])
               for i in range(10)]
    one_per_child = reward_of(KEYWORDS, batch_size=1).grade_many(samples)
    all_in_one = reward_of(KEYWORDS, batch_size=64).grade_many(samples)
    in_threes = reward_of(KEYWORDS, batch_size=3).grade_many(samples)
    def verdicts(scores: list[Score]) -> list[tuple[object, ...]]:  # details hold queued_s
        return [(s.value, s.status, s.reason) for s in scores]

    assert verdicts(one_per_child) == verdicts(all_in_one) == verdicts(in_threes)
    assert [s.value for s in all_in_one] == [0.0] + [pytest.approx(2 / 3)] * 9


def test_json_unfriendly_metadata_is_passed_as_text() -> None:
    source = body("return float(len(metadata['when']) > 0)")
    score = reward_of(source).grade(Sample(completion="", metadata={"when": object()}))
    assert score.value == 1.0


def test_allowed_modules_narrow_the_imports() -> None:
    with pytest.raises(ValidationError, match="line 1: import of 'json' is not allowed"):
        reward_of("import json\n" + body("return 1.0"), allowed_modules=["re"])
    with pytest.raises(ValidationError, match="not importable from a reward source: os"):
        reward_of(body("return 1.0"), allowed_modules=["os"])


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def score(completion):\n    return 1.0\n", "must define `def reward"),
        ("def reward(completion):\n    return 1.0\n", "three positional arguments"),
        ("def reward(completion, reference, metadata, *, strict):\n    return 1\n", "three"),
        (body("return (1.0"), "line 2: SyntaxError"),
        ("x = 1\n\n" + body("y = ().__class__\nreturn 1.0"), 'line 4: "__class__"'),
    ],
)
def test_bad_sources_fail_at_config_load_with_line_numbers(source: str, message: str) -> None:
    config = {"rewards": {"custom": {"reward": "python", "params": {"source": source}}}}
    with pytest.raises(ConfigError) as raised:
        parse_config(config, source="cfg.yaml")
    rendered = raised.value.render()
    assert "rewards.custom.params.source" in rendered
    assert message in rendered


def test_a_signature_with_extra_defaults_or_varargs_is_fine() -> None:
    compile_reward_source("def reward(completion, reference=None, metadata=None, x=1):\n  return 1")
    compile_reward_source("def reward(*args):\n    return 1")


def test_the_source_is_compiled_once() -> None:
    source = body("return 0.5")
    assert compile_reward_source(source) is compile_reward_source(source)


@pytest.mark.parametrize("mode", ["inline", "process"])
def test_it_also_runs_in_inline_and_process_mode(mode: str) -> None:
    config = {"kw": {"reward": "python", "mode": mode, "params": {"source": KEYWORDS}}}
    rs = RewardSet.from_dict({"rewards": config})
    rows = [{"prompt": str(i), "completion": "fever", "reference": ["fever", "cough"]}
            for i in range(3)]
    result = rs.score(rows)
    assert result.values("kw") == [0.5] * 3, result.scores("kw")


def test_groups_of_one_sample_share_a_child() -> None:
    # module-level state lives as long as the child: it counts the calls each child made
    counter = 'calls = {"n": 0}\n' + body('calls["n"] = calls["n"] + 1\nreturn calls["n"]')
    config = {"n": {"reward": "python", "params": {"source": counter, "concurrency": 1}}}
    rs = RewardSet.from_dict({"rewards": config})
    rows = [{"prompt": f"distinct prompt {i}", "completion": "x"} for i in range(6)]
    assert rs.score(rows).values("n") == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_a_source_that_never_finishes_loading_errs_every_sample_quickly() -> None:
    source = "while True:\n    pass\n" + body("return 1.0")
    started = time.monotonic()
    scores = reward_of(source, timeout_s=0.3).grade_many([Sample(completion="a")] * 4)
    assert time.monotonic() - started < 3
    assert {(s.status, s.reason) for s in scores} == {
        (Status.ERROR, "the source took longer than 0.3s to load")
    }


def test_everyday_python_runs_through_the_guards() -> None:
    # in-place operators, unpacking in assignments and loops, lambdas, generators, item
    # writes to dicts and lists: each goes through one of RestrictedPython's hooks
    source = body(
        "counts = {}\nn = 0\nn += 2\nfor word, times in [('a', 1), ('b', 2)]:\n"
        "    counts[word] = times\n    n += times\nfirst, (second, third) = 1, (2, 3)\n"
        "double = lambda v: v * 2\nitems = [double(v) for v in counts.values()]\n"
        "items.append(sum(i for i in range(3)))\n"
        "return float(n + first + second + third + sum(items) + len(sorted(zip(items, items))))"
    )
    assert reward_of(source).grade(Sample(completion="")).value == 5 + 6 + 9 + 3
