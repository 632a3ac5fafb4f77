"""Adversarial probes: inputs any reward must survive without crashing or hanging.

A probe passes when the reward answers within the time bound with a deliberate verdict:
``ok`` or an ``error`` the reward returned itself. An exception escaping the reward, a
timeout, or a dead worker fails the probe; so does ``skipped``: a probe the reward never
looked at proves nothing. A reward that needs a prompt, a reference or metadata to apply
gets them from the probe's ``prompt``, ``reference`` and ``metadata`` (in a cases file:
``probe_prompt``, ``probe_reference``, ``probe_metadata``).

A group reward (one that sees every completion of a prompt) gets each probe in a group
with normal siblings, and one more group of all the probes together (``together``): a
pairwise reward that hangs only when a huge completion has a sibling is caught there, not
passed because it only ever saw groups of one.

>>> from rewardkit.testing.probes import run_probes
>>> all(p.passed for p in run_probes("soft_format"))
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardkit.reward_set import RewardSet, ScoreResult
from rewardkit.types import Sample, Score, Status

#: the probe inputs, by name
PROBES: dict[str, Any] = {
    "empty": "",
    "whitespace": " \n\t\r\n   \u00a0",
    "1mb_text": "The answer is 7. " * 61_681,  # ~1 MB
    "1mb_single_line": "9" * 1_000_000,
    "unicode": "答案是 ４２ 🚀 \u202e\u0000 ﬁ 𝟘𝟙 <think>思考</think><answer>٤٢</answer>",
    "tags_only": "<think></think>\n<answer></answer>",
    "repeated_tags": "<think>x</think>\n<answer>1</answer>\n" * 2_000,
    "unclosed_tags": "<think><think><answer><answer" * 500,
    "answer_without_reasoning": "<answer>42</answer>",
    "number_spam": " ".join(str(i) for i in range(50_000)),
    "chat_messages": [{"role": "assistant", "content": "<think>hm</think>\n<answer>3</answer>"}],
    "null_bytes": "\x00" * 10_000,
}


#: the probe of a group reward that puts every probe in one group with the siblings
TOGETHER = "together"

#: normal completions that share a group with each probe (for group rewards)
SIBLINGS: tuple[str, ...] = (
    "<think>2 + 2 = 4, and 4 * 10 + 2 = 42.</think>\n<answer>42</answer>",
    "The answer is 42.",
)


@dataclass(frozen=True)
class ProbeResult:
    name: str
    score: Score
    seconds: float
    passed: bool
    problem: str = ""


def run_probes(
    reward: str,
    params: Mapping[str, Any] | None = None,
    reference: Any = None,
    metadata: Mapping[str, Any] | None = None,
    timeout: float = 10.0,
    names: list[str] | None = None,
    prompt: Any = None,
    siblings: Sequence[Any] = SIBLINGS,
) -> list[ProbeResult]:
    """Run the probes against the registered reward ``reward`` in a worker process with a
    hard ``timeout`` (so a hang is caught and reported, not suffered).

    ``prompt`` (default ``"probe:<name>"``), ``reference`` and ``metadata`` go with every
    probe completion, so a reward that needs them applies to the probes. A group reward
    scores each probe in a group with ``siblings`` (normal completions), and (unless
    ``names`` leaves it out) all probes together in one more group, ``together``."""
    rs = RewardSet.from_dict(
        {
            "rewards": {"probe": {"reward": reward, "params": dict(params or {}),
                                  "timeout": timeout, "mode": "process"}},
            "limits": {"max_completion_chars": 10_000_000},
        },
        source=f"<probes for {reward}>",
    )
    grouped = rs.components["probe"].reward_class.group
    chosen = names or [*PROBES, *([TOGETHER] if grouped else [])]
    if not grouped and TOGETHER in chosen:
        chosen = [name for name in chosen if name != TOGETHER]
    groups = _groups(chosen, grouped, siblings)
    samples = []
    for name, members, _ in groups:
        for completion in members:
            sample = Sample(prompt=f"probe:{name}" if prompt is None else prompt,
                            completion=completion, reference=reference,
                            metadata=dict(metadata or {}))
            sample.group = name
            samples.append(sample)
    return _verdicts(groups, rs.score(samples), grouped, timeout)


#: a probe's group: (probe name, the completions of its group, which of them is the
#: probe's verdict)
ProbeGroup = tuple[str, list[Any], list[int]]


def _groups(chosen: list[str], grouped: bool, siblings: Sequence[Any]) -> list[ProbeGroup]:
    """The group of each probe: alone, with the siblings (a group reward), or every
    probe together with the siblings (``together``)."""
    groups: list[ProbeGroup] = []
    for name in chosen:
        if name == TOGETHER:
            probes = [PROBES[n] for n in PROBES]
            groups.append((name, [*probes, *siblings], list(range(len(probes)))))
        elif grouped:
            groups.append((name, [PROBES[name], *siblings], [0]))
        else:
            groups.append((name, [PROBES[name]], [0]))
    return groups


def _verdicts(groups: list[ProbeGroup], result: ScoreResult, grouped: bool,
              timeout: float) -> list[ProbeResult]:
    """Each probe's result from the scores of its group: the first of its verdicts with a
    problem fails it."""
    latencies = result.outcomes["probe"].latencies
    out = []
    start = 0
    for k, (name, members, verdicts) in enumerate(groups):
        if grouped:  # one latency per group, as a per-member average
            seconds = latencies[k] * len(members) if k < len(latencies) else 0.0
        else:
            seconds = latencies[start] if start < len(latencies) else 0.0
        scores = [result[start + i].scores["probe"] for i in verdicts]
        problems = [(i, _problem(score, seconds, timeout)) for i, score in zip(verdicts, scores,
                                                                              strict=True)]
        worst = next(((i, p) for i, p in problems if p), None)
        if worst is None:
            out.append(ProbeResult(name, scores[0], seconds, True))
        else:
            i, problem = worst
            if name == TOGETHER:
                probe = list(PROBES)[i]
                problem = (f"{problem} (every probe in one group with its siblings)"
                           if all(p for _, p in problems) else f"{probe}: {problem} (in "
                           "one group with every other probe and the siblings)")
            out.append(ProbeResult(name, result[start + i].scores["probe"], seconds, False,
                                   problem))
        start += len(members)
    return out


def _problem(score: Score, seconds: float, timeout: float) -> str:
    if score.status is Status.SKIPPED:
        why = f" ({score.reason})" if score.reason else ""
        return (f"never ran: the reward skipped it{why}; give the prompt / reference / "
                "metadata it needs (probe_prompt, probe_reference, probe_metadata)")
    if score.status is Status.TIMEOUT:
        return f"hung: no answer within {timeout:g}s"
    if score.status is Status.ERROR and score.details and "exception" in score.details:
        return f"raised {score.reason}"
    if score.status is Status.ERROR and score.reason.startswith("worker process"):
        return f"crashed its process: {score.reason}"
    if seconds > timeout:
        return f"took {seconds:.2f}s (> {timeout:g}s)"
    return ""
