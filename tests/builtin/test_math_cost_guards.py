"""math_answer's answer-side cost guards through the real process-mode timeout path.

A short answer whose grading cost has no bound (``\\boxed{(x+1)^{5000}}``: 20 characters)
held a worker past the component's ``timeout:`` and came back status timeout: masked by
the trainer instead of wrong, and outside cosine_scaled's wrong-answer range. Each one
here is scored by a RewardSet whose component has a short timeout, so the workers, their
kill-and-replace and the IPC are the ones training uses: it must come back wrong (status
ok, value 0) with a reason that says why, well before the timeout. An ordinary answer
whose grading runs past the timeout stays a timeout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from rewardkit import RewardSet, Sample, Status
from rewardkit.builtin.math.cost_guards import UNBOUNDED, too_costly

TIMEOUT = 3.0


def _continued_fraction(depth: int) -> str:
    text = "1"
    for _ in range(depth):
        text = "\\frac{1}{1+" + text + "}"
    return text


#: answers that each ran past 10 s in math-verify (measured before the guards)
COSTLY = {
    "power_of_sum": "(x+1)^{5000}",
    "huge_binomial": "\\binom{10000000}{5000000}",
    "trinomial_power": "(a+b+c)^{100}",
    "nested_powers": "((x+1)^{30})^{30}",
    "factorial_exponent": "(x+1)^{7!}",
    "sum_of_factorials": "\\sum_{k=1}^{2019} k!",
    "long_product": "\\prod_{k=1}^{9999} (k+x)",
    "symbolic_binomial": "\\binom{x}{100}",
    "gamma_of_power": "\\Gamma(10^{6})",
    "continued_fraction": _continued_fraction(15),
    "ratio_of_powers": "\\frac{(x+1)^{200}}{(x-1)^{200}}",
    "exponent_as_a_sum": "(x+1)^{4999+1}",
    "symbolic_product": "\\prod_{k=1}^{500} (x+k)",
}


@pytest.fixture(scope="module")
def guarded_set() -> RewardSet:
    rs = RewardSet.from_dict({
        "rewards": {"math": {"reward": "math_answer", "timeout": TIMEOUT},
                    "cosine": {"reward": "cosine_scaled", "weight": 0.0,
                               "params": {"max_len": 1000},
                               "timeout": TIMEOUT}},
    })
    rs.score([Sample(completion="\\boxed{x+1}", reference="1+x")] * 16)  # workers warm
    return rs


@pytest.mark.parametrize("reference", ["18", "\\frac{1}{2}"])
@pytest.mark.parametrize("name", sorted(COSTLY))
def test_an_answer_of_unbounded_cost_is_wrong_not_a_timeout(guarded_set: RewardSet,
                                                            name: str, reference: str) -> None:
    start = time.monotonic()
    result = guarded_set.score([Sample(completion=f"So $\\boxed{{{COSTLY[name]}}}$.",
                                       reference=reference)])
    seconds = time.monotonic() - start
    score = result[0].scores["math"]
    assert score.status is Status.OK, score
    assert score.value == 0.0
    assert UNBOUNDED in score.reason
    assert seconds < TIMEOUT


#: a fresh interpreter grades costly answers to a plain-number gold and says which of the
#: symbolic libraries it imported to do so
_IMPORTS_SCRIPT = """
import json, sys
from rewardkit import Sample, get_reward
reward = get_reward("math_answer")()
out = []
for answer in sys.argv[1:]:
    score = reward.score(Sample(completion="So $\\\\boxed{" + answer + "}$.", reference="18"))
    out.append([score.status.value, score.value, score.reason])
print(json.dumps({"scores": out, "imported": sorted(
    m for m in ("sympy", "math_verify", "latex2sympy2_extended") if m in sys.modules)}))
"""


def test_a_costly_answer_to_a_number_is_refused_before_sympy_is_imported() -> None:
    """A worker's first symbolic sample imports math-verify and sympy (seconds on a
    loaded machine) inside its hard timeout; an answer refused as costly must not pay for
    that, or a cold worker hands it back as a timeout (masked) instead of wrong. A
    plain-number gold needs neither library, so nothing is imported."""
    answers = [COSTLY["power_of_sum"], COSTLY["huge_binomial"], COSTLY["gamma_of_power"]]
    done = subprocess.run([sys.executable, "-c", _IMPORTS_SCRIPT, *answers],
                          capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    for status, value, reason in report["scores"]:
        assert (status, value) == ("ok", 0.0) and UNBOUNDED in reason, reason
    assert report["imported"] == []


def test_a_cold_worker_refuses_a_costly_answer_within_the_timeout() -> None:
    """The same through a fresh process-mode RewardSet whose workers have graded
    nothing yet: the costly answers are its first samples."""
    rs = RewardSet.from_dict({"rewards": {"math": {"reward": "math_answer",
                                                   "timeout": TIMEOUT}}})
    result = rs.score([Sample(completion=f"So $\\boxed{{{COSTLY[name]}}}$.", reference="18")
                       for name in ("power_of_sum", "huge_binomial")])
    for row in result:
        score = row.scores["math"]
        assert score.status is Status.OK and score.value == 0.0, score


def test_cosine_scaled_pays_a_costly_answer_as_a_wrong_one(guarded_set: RewardSet) -> None:
    wrong, costly = guarded_set.score([
        Sample(completion="So $\\boxed{17}$.", reference="18"),
        Sample(completion="So $\\boxed{(x+1)^{5000}}$.", reference="18"),
    ])
    assert costly.scores["cosine"].status is Status.OK, costly.scores["cosine"]
    assert costly.scores["cosine"].value is not None
    assert costly.scores["cosine"].value < 0 and wrong.scores["cosine"].value < 0


def test_an_ordinary_answer_that_runs_past_the_timeout_stays_a_timeout() -> None:
    # sympy simplifies this trigonometric identity in about 0.4 s: far longer than this
    # timeout, and nothing about the answer is costly
    answer = "\\sin(x)^{2}+\\cos(x)^{2}"
    assert too_costly(answer, 1000) == ""
    rs = RewardSet.from_dict({"rewards": {"math": {"reward": "math_answer",
                                                   "timeout": 0.05}}})
    result = rs.score([Sample(completion=f"So $\\boxed{{{answer}}}$.", reference="1")])
    assert result[0].scores["math"].status is Status.TIMEOUT, result[0].scores["math"]


@pytest.mark.parametrize("answer", [
    "(x+1)^{60}", "(a+b+c)^{15}", "\\binom{2019}{1009}", "\\binom{n}{2}", "\\binom{x}{20}",
    "2^{2019}", "(1+2)^{5000}", "\\sum_{k=1}^{100} k!", "\\sum_{k=1}^{n} k^2",
    "\\left(1+\\frac{1}{n}\\right)^{n}", "x_{n+1}^{2}", "a_{1}^{500}", "9999!",
    _continued_fraction(8), "\\frac{\\sqrt{5}-1}{2}",
])
def test_bounded_answers_are_graded(answer: str) -> None:
    assert too_costly(answer, 1000) == ""


def test_a_long_solution_with_many_small_powers_is_graded() -> None:
    solution = " ".join(f"$(x+{k})^{{2}}$" for k in range(200))
    assert too_costly(solution, 8000, max_powers=None) == ""
    assert too_costly(solution[:200], 1000, max_powers=None) == ""
