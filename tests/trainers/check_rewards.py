"""Two test rewards for the backend checks, registered on import (also in backend venvs).

* ``check_graded``: 1 when the reference is in the completion, 0 when not; fails to
  grade (``Score.error``) when the completion contains ``CRASH``.
* ``check_longest``: a per-group reward, 1 for the longest completion(s) of the group:
  its value for a row depends on the other rows of the group.
"""

from __future__ import annotations

from rewardkit import Sample, Score, registry, reward


@reward(description="1 when the reference is in the completion; fails on CRASH")
def check_graded(sample: Sample) -> Score:
    if "CRASH" in sample.text:
        return Score.error("grader crashed")
    return Score.ok(1.0 if str(sample.reference) in sample.text else 0.0)


@reward(group=True, description="1 for the longest completion of the group, else 0")
def check_longest(samples: list[Sample]) -> list[float]:
    longest = max(len(s.text) for s in samples)
    return [1.0 if len(s.text) == longest else 0.0 for s in samples]


for _fn in (check_graded, check_longest):
    if _fn.name not in registry.names():
        registry.register(_fn, "tests-trainers")


@reward(description="len/10 of the completion; fails to grade on an odd length")
def check_parity(sample: Sample) -> Score:
    if len(sample.text) % 2:
        return Score.error("odd length")
    return Score.ok(len(sample.text) / 10)


if check_parity.name not in registry.names():
    registry.register(check_parity, "tests-trainers")
