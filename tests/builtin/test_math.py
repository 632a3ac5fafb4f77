"""math_answer and exact_answer: behaviours beyond the golden cases in
tests/cases/builtin/ (imports, timeouts, threads, missing dependencies, number reading)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from fractions import Fraction

import pytest

from rewardkit import RewardSet, Sample, Score, Status, get_reward
from rewardkit.authoring import Reward
from rewardkit.builtin.math import symbolic as _math_verify_bridge
from rewardkit.types import ExecutionMode


def test_plain_numbers_never_import_sympy_or_math_verify() -> None:
    code = textwrap.dedent(
        """
        import sys
        from rewardkit import Sample, get_reward
        reward = get_reward("math_answer")()
        cases = [("<answer>1,000</answer>", "1000"), ("#### $18.50", "18.5"),
                 ("so \\\\boxed{\\\\frac{3}{4}}", "0.75"), ("12 apples", 13),
                 ("nothing here", "7")]
        scores = [reward.score(Sample(completion=c, reference=r)) for c, r in cases]
        assert [s.value for s in scores] == [1.0, 1.0, 1.0, 0.0, 0.0], scores
        loaded = sorted(m for m in ("sympy", "math_verify") if m in sys.modules)
        print("LOADED", loaded)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "LOADED []" in out.stdout


def test_symbolic_answer_is_graded_through_math_verify() -> None:
    score = get_reward("math_answer")().score(
        Sample(completion="\\boxed{\\frac{\\pi}{2}}", reference="\\pi/2"))
    assert score.value == 1.0


def test_unparseable_reference_is_an_error_not_a_wrong_answer() -> None:
    score = get_reward("math_answer")().score(
        Sample(completion="<answer>3</answer>", reference="\\frac{1}{"))
    assert score.status is Status.ERROR
    assert "reference" in score.reason


def test_non_numeric_reference_without_symbolic_is_an_error() -> None:
    score = get_reward("math_answer")({"symbolic": False}).score(
        Sample(completion="<answer>3</answer>", reference="x + 1"))
    assert score.status is Status.ERROR


def test_missing_math_verify_is_reported_as_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_math_verify_bridge, "_mv_module", None)  # not imported yet, and
    monkeypatch.setitem(sys.modules, "math_verify", None)  # importing it fails
    score = get_reward("math_answer")().score(
        Sample(completion="\\boxed{x+1}", reference="1+x"))
    assert score.status is Status.ERROR
    assert "rewardkit[math]" in score.reason


def test_symbolic_path_works_off_the_main_thread() -> None:
    """math-verify's own signal timeouts would raise here; rewardkit turns them off."""
    reward = get_reward("math_answer")()
    got: list[float | None] = []
    thread = threading.Thread(target=lambda: got.append(
        reward.score(Sample(completion="\\boxed{2(x+1)}", reference="2x+2")).value))
    thread.start()
    thread.join(60)
    assert got == [1.0]


def test_first_occurrence_grades_the_first_hashes_line() -> None:
    text = "#### 72\nQuestion: next?\n#### 5"
    first = get_reward("math_answer")({"extract": ["hashes"], "occurrence": "first"})
    last = get_reward("math_answer")({"extract": ["hashes"]})
    assert first.score(Sample(completion=text, reference="72")).value == 1.0
    assert last.score(Sample(completion=text, reference="72")).value == 0.0


def _decimal(value: Fraction) -> str:
    return format(float(value), "f").rstrip("0").rstrip(".")


MATH_ANSWER = get_reward("math_answer")()


def _quick(answer: str, reference: str) -> Score | None:
    """The in-process verdict (public ``quick_score``) on ``<answer>answer</answer>``."""
    return MATH_ANSWER.quick_score(
        Sample(prompt="q", completion=f"<answer>{answer}</answer>", reference=reference))


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("1,234,567", Fraction(1234567)),
        ("$1,234.50", Fraction("1234.5")),
        ("-$5", Fraction(-5)),
        ("72 clips", Fraction(72)),
        ("10cm", Fraction(10)),
        ("3/4", Fraction(3, 4)),
        ("-\\frac{3}{4}", Fraction(-3, 4)),
        ("\\dfrac12", Fraction(1, 2)),
        ("1.5 \\times 10^{3}", Fraction(1500)),
        ("$42$", Fraction(42)),
        ("\\text{\\$}18.", Fraction(18)),
        ("90^\\circ", Fraction(90)),
    ],
)
def test_plain_numbers_are_read_exactly(written: str, value: Fraction) -> None:
    right, wrong = _quick(written, _decimal(value)), _quick(written, _decimal(value + 1))
    assert right is not None and (right.status, right.value) == (Status.OK, 1.0)
    assert wrong is not None and (wrong.status, wrong.value) == (Status.OK, 0.0)


@pytest.mark.parametrize("written", ["x^2", "2x", "\\sqrt{2}", "2\\sqrt{81}", "9" * 500,
                                     "1e99999"])
def test_non_plain_answers_are_left_to_the_symbolic_path(written: str) -> None:
    assert _quick(written, "1") is None


@pytest.mark.parametrize("written", ["1, 2", "1 2 3", "1 or 2", "at least 1", "1 = 2",
                                     "\\pm 1", "not 1"])
def test_an_answer_of_several_values_or_none_is_wrong_without_math_verify(written: str) -> None:
    """For a plain-number gold, a list, a hedge, a bound, a false equation or a negation
    is wrong on the quick path: math-verify would read one of its numbers as the answer."""
    verdict = _quick(written, "1")
    assert verdict is not None and (verdict.status, verdict.value) == (Status.OK, 0.0)
    assert verdict.reason


@pytest.mark.parametrize("prompt", ["", "What percent of the class passed?"])
def test_percent_is_read_as_both_readings_where_a_percentage_may_be_asked(prompt: str) -> None:
    verdicts = [MATH_ANSWER.quick_score(Sample(prompt=prompt, completion="<answer>12.5%</answer>",
                                               reference=ref)) for ref in ("12.5", "0.125", "0.13")]
    assert [v.value if v else None for v in verdicts] == [1.0, 1.0, 0.0]


def test_percent_is_part_of_the_value_where_the_prompt_asks_for_no_percentage() -> None:
    verdicts = [MATH_ANSWER.quick_score(Sample(prompt="How many apples?",
                                               completion="<answer>12.5%</answer>",
                                               reference=ref)) for ref in ("12.5", "0.125")]
    assert [v.value if v else None for v in verdicts] == [0.0, 1.0]


# -- hard limits: nothing runs past timeout + 0.5 s through a RewardSet ------------------
TIMEOUT = 3.0
#: what the limit may be overrun by: the worker is killed at TIMEOUT, then replaced; on a
#: loaded 2-core machine that takes up to a few seconds (left alone, these inputs run for
#: minutes or exhaust memory, so the bound still tells a limit that holds from one that
#: does not)
SLACK = 4.0
PATHOLOGICAL = {
    "nested_frac": "\\boxed{" + "\\frac{1}{" * 10_000 + "}",
    "nested_frac_answer_tag": "<answer>$" + "\\frac{1}{" * 10_000 + "$</answer>",
    "power_tower": "\\boxed{10^{10^{10^{10}}}}",
    "power_tower_plain": "<answer>2**2**2**2**2**2</answer>",
    "big_factorial": "\\boxed{123456!}",
    "one_mb_digits": "9" * 1_000_000,
    "one_mb_latex": "\\boxed{" + "x+" * 500_000 + "1}",
    "one_mb_braces": "\\boxed{" + "{" * 1_000_000,
    "one_mb_answer_tags": "<answer>" * 130_000 + "</answer>",
}


@pytest.fixture(scope="module")
def guarded_set() -> RewardSet:
    rs = RewardSet.from_dict({
        "rewards": {"math": {"reward": "math_answer", "timeout": TIMEOUT}},
        "limits": {"max_completion_chars": 10_000_000},
    })
    # start the workers and load math-verify in them, so the timings below measure scoring
    # (enough chunks that every worker gets some, whatever the pool's chunking)
    rs.score([Sample(completion="\\boxed{x+1}", reference="1+x")] * 32)
    return rs


def _timed_score(rs: RewardSet, completion: str, reference: str) -> tuple[float, Status]:
    start = time.monotonic()
    result = rs.score([Sample(completion=completion, reference=reference)])
    return time.monotonic() - start, result[0].scores["math"].status


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_answer_is_answered_within_the_timeout(guarded_set: RewardSet,
                                                            name: str) -> None:
    seconds, status = _timed_score(guarded_set, PATHOLOGICAL[name], "42")
    assert seconds < TIMEOUT + SLACK
    assert status in (Status.OK, Status.TIMEOUT)


@pytest.mark.parametrize("name", ["nested_frac", "power_tower", "one_mb_latex"])
def test_pathological_reference_is_answered_within_the_timeout(guarded_set: RewardSet,
                                                               name: str) -> None:
    seconds, status = _timed_score(guarded_set, "<answer>42</answer>",
                                   PATHOLOGICAL[name].replace("\\boxed", ""))
    assert seconds < TIMEOUT + SLACK
    assert status in (Status.ERROR, Status.TIMEOUT)


def test_pathological_answers_from_another_thread_keep_the_limit(guarded_set: RewardSet) -> None:
    timings: list[tuple[float, Status]] = []

    def run() -> None:
        for name in ("nested_frac", "power_tower", "one_mb_latex"):
            timings.append(_timed_score(guarded_set, PATHOLOGICAL[name], "42"))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(3 * (TIMEOUT + SLACK) + 5)
    assert len(timings) == 3
    assert all(seconds < TIMEOUT + SLACK for seconds, _ in timings)


def test_exact_answer_can_ignore_case() -> None:
    reward = get_reward("exact_answer")({"case_sensitive": False})
    assert reward.score(Sample(completion="<answer>Paris</answer>", reference="paris")).value \
        == 1.0


# -- references that are not answers: status error on every path ------------------------
_NOT_ANSWERS = ["Answer is forty two.", "forty two", "Let's think step by step.", "\\frac{"]
_PATHS = [{}, {"symbolic": False}, {"reasoning_tag": "think"}, {"extract": ["hashes"]},
          {"extract": ["last_number"], "occurrence": "first"}, {"decimal_comma": True}]


@pytest.mark.parametrize("params", _PATHS, ids=lambda p: ",".join(p) or "defaults")
@pytest.mark.parametrize("reference", _NOT_ANSWERS)
def test_a_reference_that_is_not_an_answer_is_an_error_on_every_path(
        reference: str, params: dict) -> None:
    reward = get_reward("math_answer")(params)
    for completion in ("<think>x</think><answer>42</answer>", "\\boxed{two forty}",
                       "#### 42", "forty two"):
        score = reward.score(Sample(completion=completion, reference=reference))
        assert score.status is Status.ERROR, (completion, score)
        assert score.value is None


def test_a_reference_that_is_not_an_answer_is_an_error_through_the_worker_pool() -> None:
    rs = RewardSet.from_dict({"rewards": {"m": {"reward": "math_answer"}}})
    samples = [Sample(completion="\\boxed{x+1}", reference=ref)
               for ref in ("\\frac{", "forty two", "Answer is forty two.")]
    scores = rs.score(samples).scores("m")
    assert [s.status for s in scores] == [Status.ERROR] * 3, scores


def test_a_worked_solution_as_reference_is_graded_by_its_boxed_answer() -> None:
    reward = get_reward("math_answer")()
    reference = "Adding, $3 + 4 = 7$, so there are $\\boxed{7}$ marbles."
    assert reward.score(Sample(completion="The answer is 7.", reference=reference)).value == 1.0
    assert reward.score(Sample(completion="The answer is 8.", reference=reference)).value == 0.0


# -- the quick verdict: numeric samples never reach a worker -----------------------------
def test_numeric_verdicts_are_reached_without_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    from rewardkit.execution import local as execution

    sent: list[int] = []
    real = execution.execute_in_workers

    def spy(reward, samples, indices, groups, timeout, out, workers=None):  # type: ignore[no-untyped-def]
        sent.extend(indices if indices is not None else range(len(samples)))
        return real(reward, samples, indices, groups, timeout, out, workers)

    monkeypatch.setattr(execution, "execute_in_workers", spy)
    rs = RewardSet.from_dict({"rewards": {"m": {"reward": "math_answer"}}})
    samples = [Sample(completion="so 4 * 3 = <<4*3=12>>12\nA: 12", reference="12"),
               Sample(completion="#### 1,200", reference="1200"),
               Sample(completion="The roots are $\\boxed{2}$ and $\\boxed{1}$.",
                      reference="\\{1, 2\\}"),
               Sample(completion="<answer>13</answer>", reference="12")]
    values = rs.score(samples).values("m")
    assert values == [1.0, 1.0, 1.0, 0.0]
    assert sent == [2]  # only the set went to math-verify in a worker


class _Halves(Reward):
    """Quick verdicts for even-length completions, worker verdicts for the rest."""

    name = "test_halves"
    mode = ExecutionMode.PROCESS

    def quick_score(self, sample: Sample) -> Score | None:
        if sample.text == "raise":
            raise RuntimeError("quick check broke")
        return Score.ok(0.25) if len(sample.text) % 2 == 0 else None

    def score(self, sample: Sample) -> float:
        return 0.75


def test_quick_score_decides_what_it_can_and_the_worker_the_rest() -> None:
    from rewardkit.execution import Outcome, execute_reward

    samples = [Sample(completion=t) for t in ("ab", "abc", "raise", "abcd")]
    out = Outcome(len(samples))
    execute_reward(_Halves(), ExecutionMode.PROCESS, samples, None, None, 10.0, out)
    assert [out.score(i).value for i in range(4)] == [0.25, 0.75, 0.75, 0.25]
