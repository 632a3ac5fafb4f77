"""code_execution under the memory limits datasets give (issue 37, item 6): a correct Java
program is paid under ``memory_mb: 256`` and 128 (the JVM did not start there, and every
correct program scored 0); under a limit the JVM cannot start in, the score is an error,
never a 0."""

from __future__ import annotations

import pytest
from rewardkit_code import CodeExecution
from rewardkit_sandbox import LANGUAGES
from rewardkit_sandbox.languages import find_toolchain

from rewardkit import Sample

pytestmark = pytest.mark.skipif(
    find_toolchain(LANGUAGES["java"])[1] is not None, reason="no java toolchain"
)

PRODUCT = ("```java\nimport java.util.*;\npublic class Main {\n    public static void main("
           "String[] args) {\n        Scanner in = new Scanner(System.in);\n"
           "        System.out.println(in.nextLong() * in.nextLong());\n    }\n}\n```")
CASES = {"cases": [{"stdin": "6 7\n", "stdout": "42\n"}]}


@pytest.mark.parametrize("memory_mb", [128, 256])
def test_a_correct_java_program_is_paid_under_a_common_limit(memory_mb: int) -> None:
    grade = CodeExecution({"language": "java", "memory_mb": memory_mb, "timeout_s": 10})
    score = grade.grade(Sample(completion=PRODUCT, reference=CASES))
    assert (score.status.value, score.value) == ("ok", 1.0), score.reason


def test_java_under_a_limit_it_cannot_start_in_is_an_error_score() -> None:
    grade = CodeExecution({"language": "java", "memory_mb": 48, "timeout_s": 10})
    score = grade.grade(Sample(completion=PRODUCT, reference=CASES))
    assert score.status.value == "error" and score.value is None
    assert "java needs at least 64 MiB" in (score.reason or "")
