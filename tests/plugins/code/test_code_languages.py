"""code_execution in C, C++, Java, JavaScript, Go and Rust in the local sandbox (issue 25).

The golden cases of tests/cases/code/code_execution_<language>.cases.yaml (honest
programs paid; exit-code, assert and harness forgeries refused) are graded here through
the public API, with the distinct statuses a compiled language adds: a compile error
and a compile timeout are wrong answers with their reason, a missing toolchain an error
score. Programs are tiny and builds are cached, to keep compile time down.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from rewardkit_code import CodeExecution
from rewardkit_sandbox import LANGUAGES, CompiledRunner, language_named
from rewardkit_sandbox.languages import find_toolchain

from rewardkit import Sample

CASES_DIR = Path(__file__).parents[2] / "cases" / "code"
FILES = {language: CASES_DIR / f"code_execution_{language}.cases.yaml"
         for language in ("c", "cpp", "java", "javascript", "go", "rust")}
#: the forgery corpora (issue 33): wrong programs that try to make the tests pass anyway,
#: each paid 0 beside its honest twin paid 1
FORGERIES = {language: CASES_DIR / f"code_execution_{language}_forgeries.cases.yaml"
             for language in ("c", "cpp", "java", "javascript", "go", "rust")}


def _cases() -> list[Any]:
    found = []
    files = [*FILES.items(), *((lang, path) for lang, path in FORGERIES.items() if path.exists())]
    for language, path in files:
        spec = yaml.safe_load(path.read_text())
        missing = find_toolchain(LANGUAGES[language])[1]
        marks = [pytest.mark.skip(reason=missing)] if missing else []
        for case in spec["cases"]:
            found.append(pytest.param(spec["params"], case, marks=marks,
                                      id=f"{path.stem}: {case['name']}"))
    return found


@pytest.mark.parametrize(("params", "case"), _cases())
def test_a_golden_case_scores_as_expected(params: dict[str, Any], case: dict[str, Any]) -> None:
    score = CodeExecution(params).grade(
        Sample(completion=case["completion"], reference=case["reference"]))
    assert score.status.value == "ok", score.reason
    assert score.value == case["expect"], score.reason


def test_every_language_has_a_forgery_corpus_of_at_least_15() -> None:
    python = CASES_DIR / "code_execution_forgeries.cases.yaml"  # Python's, judged apart
    for language, path in [*FORGERIES.items(), ("python", python)]:
        cases = yaml.safe_load(path.read_text())["cases"]
        forged = [case for case in cases if case["expect"] == 0.0]
        assert len(forged) >= 15, (language, len(forged))
        assert language == "python" or any(case["expect"] == 1.0 for case in cases), language


def test_a_compile_error_is_its_own_status_with_the_compiler_line() -> None:
    score = CodeExecution({"language": "cpp", "mode": "binary", "timeout_s": 5}).grade(
        Sample(completion="```cpp\nint f() { return undefined_name; }\n```",
               reference=["int main() { return f(); }"]))
    assert score.value == 0.0
    assert "compile_error" in (score.reason or "") and "undefined_name" in (score.reason or "")


def test_stdin_cases_of_one_program_compile_once() -> None:
    grader = CodeExecution({"language": "c", "mode": "binary", "timeout_s": 5})
    program = "```c\n#include <stdio.h>\nint main(void){int n;scanf(\"%d\",&n);" \
              "printf(\"%d\\n\",n+41);return 0;}\n```"
    runner = grader._runner_for(0)
    assert isinstance(runner, CompiledRunner)
    before = (runner.cache.hits, runner.cache.misses)
    cases = [{"stdin": f"{n}\n", "stdout": f"{n + 41}\n"} for n in range(4)]
    score = grader.grade(Sample(completion=program, reference={"cases": cases}))
    assert score.value == 1.0, score.reason
    assert runner.cache.misses - before[1] <= 1  # one compile (none if cached before)
    assert runner.cache.hits - before[0] >= 3


def test_a_missing_toolchain_is_an_error_score_not_a_wrong_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("rewardkit_sandbox.languages.runner.TASK_PATH", "/nonexistent")
    score = CodeExecution({"language": "rust", "timeout_s": 5}).grade(
        Sample(completion="```rust\nfn main() {}\n```", reference={"cases": [
            {"stdin": "", "stdout": ""}]}))
    assert score.status.value == "error"
    assert "toolchain missing" in (score.reason or "") and "rustc" in (score.reason or "")


def test_unknown_languages_are_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"known: .*rust"):
        language_named("cobol")
    with pytest.raises(ValueError, match="cobol"):
        CodeExecution({"language": "cobol"})


def test_a_c_verdict_says_its_tests_share_the_candidates_process() -> None:
    tests = ["#include <assert.h>\nint main(){assert(twice(2)==4);}"]
    program = "```c\nint twice(int x){return 2*x;}\n```"
    c = CodeExecution({"language": "c", "timeout_s": 5}).grade(
        Sample(completion=program, reference=tests))
    assert c.value == 1.0 and "share the candidate's process" in (c.reason or "")
    assert "Test verdicts" in c.details["verdict"]
    cases = CodeExecution({"language": "c", "timeout_s": 5}).grade(Sample(
        completion="```c\n#include <stdio.h>\nint main(){puts(\"4\");}\n```",
        reference={"cases": [{"stdin": "", "stdout": "4\n"}]}))
    assert cases.value == 1.0 and "verdict" not in cases.details
