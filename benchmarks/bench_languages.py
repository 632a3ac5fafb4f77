"""code_execution per language on this repository's own small programs (issue 25).

Three small tasks written for this benchmark (not taken from any dataset): ``gcd`` and
``fib`` graded by an assert-style test program in each language's usual shape, and
``sum_max`` graded by stdin/stdout cases. Each task has a correct program in C, C++,
Java, JavaScript, Go, Rust and Python (for reference), and broken variants of it: ``wrong``
(a logic error) and ``exit`` (the program exits 0 before doing the work: the exit-code
forgery). Every program is graded by the real ``code_execution`` reward (binary mode) in
the local sandbox (``CompiledRunner``; Python: ``PythonRunner``).

Reported per language: how many correct programs passed (all must) and broken ones
passed (none may), programs per second on the first pass (each program compiled) and
with the build cache warm (the correct programs again: every build a cache hit), and the
median (p50) latency of one graded program in each pass. A language whose toolchain is
missing on this machine is reported as missing, not run. These figures are for these
small programs; HumanEval-X's are benchmarks/bench_humaneval_x.py's.

    python benchmarks/bench_languages.py [--quick] [--languages c,go] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardkit_code import CodeExecution
from rewardkit_sandbox import LANGUAGES
from rewardkit_sandbox.languages import find_toolchain, shared_compile_cache

from rewardkit import Sample

LANGUAGE_ORDER = ("python", "c", "cpp", "java", "javascript", "go", "rust")
LABEL = "this repository's own small programs (benchmarks/bench_languages.py), not HumanEval-X"
#: (arguments, expected value) of each function task's asserts
CHECKS = {
    "gcd": [("12, 18", 6), ("7, 13", 1), ("0, 5", 5), ("100, 75", 25)],
    "fib": [("0", 0), ("1", 1), ("10", 55), ("50", 12586269025)],
}
#: the stdin/stdout cases of ``sum_max``: n, then n integers; print their sum and maximum
CASES = [{"stdin": "3\n1 5 2\n", "stdout": "8 5\n"},
         {"stdin": "1\n-4\n", "stdout": "-4 -4\n"},
         {"stdin": "4\n10 -3 7 7\n", "stdout": "21 10\n"}]
QUICK_TASKS, QUICK_VARIANTS = ("gcd", "sum_max"), ("wrong",)


@dataclass(frozen=True)
class Program:
    """A correct program and its broken variants (variant -> (old, new): the first
    ``old`` of the correct program replaced by ``new``)."""

    code: str
    broken: dict[str, tuple[str, str]]


def test_program(language: str, task: str) -> str:
    """The assert-style test program of ``task`` in ``language``'s usual shape."""
    checks = CHECKS[task]
    if language == "python":
        return "\n".join(f"assert {task}({args}) == {want}" for args, want in checks)
    if language in ("c", "cpp"):
        header = ("#include <assert.h>\nint main(void) {\n" if language == "c"
                  else "#include <cassert>\nint main() {\n")
        body = "".join(f"    assert({task}({args}) == {want});\n" for args, want in checks)
        return header + body + "    return 0;\n}\n"
    if language == "java":
        wrong = " || ".join(f"s.{task}({args}) != {want}L" for args, want in checks)
        return ("public class Main {\n    public static void main(String[] args) {\n"
                f"        Solution s = new Solution();\n        if ({wrong}) {{\n"
                "            throw new AssertionError();\n        }\n    }\n}\n")
    if language == "javascript":
        body = "".join(f"  console.assert({task}({args}) === {want})\n" for args, want in checks)
        return f"const testIt = () => {{\n{body}}}\ntestIt()\n"
    if language == "go":
        name = task.capitalize()
        body = "".join(f"    assert.Equal({want}, {name}({args}))\n" for args, want in checks)
        return (f"func Test{name}(t *testing.T) {{\n    assert := assert.New(t)\n{body}}}\n")
    body = "".join(f"        assert_eq!({task}({args}), {want});\n" for args, want in checks)
    return ("#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n"
            f"    fn test_it() {{\n{body}    }}\n}}\n")


_C_GCD = """int gcd(int a, int b) {
    while (b != 0) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}
"""
_C_FIB = """long long fib(int n) {
    long long a = 0, b = 1;
    for (int i = 0; i < n; i++) {
        long long t = a + b;
        a = b;
        b = t;
    }
    return a;
}
"""
_C_SUM_MAX = """#include <stdio.h>
#include <stdlib.h>
int main(void) {
    int n;
    long long x, sum = 0, max = 0;
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) {
        if (scanf("%lld", &x) != 1) return 1;
        sum += x;
        if (i == 0 || x > max) max = x;
    }
    printf("%lld %lld\\n", sum, max);
    return 0;
}
"""
_CPP_SUM_MAX = """#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <vector>
int main() {
    int n;
    std::cin >> n;
    std::vector<long long> xs(n);
    for (auto &x : xs) std::cin >> x;
    long long sum = 0;
    for (auto x : xs) sum += x;
    std::cout << sum << " " << *std::max_element(xs.begin(), xs.end()) << "\\n";
    return 0;
}
"""


def _c_like(exit_call: str, header: str) -> dict[str, Program]:
    def first_line_exit(code: str) -> tuple[str, str]:
        line = code.split("\n", 1)[0] + "\n"
        return line, f"{header}{line}    {exit_call}\n"

    return {
        "gcd": Program(_C_GCD, {"wrong": ("return a;", "return b;"),
                                "exit": first_line_exit(_C_GCD)}),
        "fib": Program(_C_FIB, {"wrong": ("i < n", "i < n - 1"),
                                "exit": first_line_exit(_C_FIB)}),
    }


_JAVA_SUM_MAX = """import java.util.*;
public class Main {
    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        int n = in.nextInt();
        long sum = 0, max = Long.MIN_VALUE;
        for (int i = 0; i < n; i++) {
            long x = in.nextLong();
            sum += x;
            max = Math.max(max, x);
        }
        System.out.println(sum + " " + max);
    }
}
"""
_GO_SUM_MAX = """package main

import "fmt"

func main() {
    var n int
    fmt.Scan(&n)
    sum, best := 0, 0
    for i := 0; i < n; i++ {
        var x int
        fmt.Scan(&x)
        sum += x
        if i == 0 || x > best {
            best = x
        }
    }
    fmt.Println(sum, best)
}
"""
_RUST_SUM_MAX = """use std::io::Read;
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
    let xs = &v[1..1 + v[0] as usize];
    println!("{} {}", xs.iter().sum::<i64>(), xs.iter().max().unwrap());
}
"""
_JS_SUM_MAX = """const lines = require('fs').readFileSync(0, 'utf8').trim().split('\\n')
const n = Number(lines[0])
const xs = lines[1].trim().split(/\\s+/).slice(0, n).map(Number)
console.log(xs.reduce((a, b) => a + b, 0) + ' ' + Math.max(...xs))
"""

PROGRAMS: dict[str, dict[str, Program]] = {
    "python": {
        "gcd": Program("def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n",
                       {"wrong": ("return a", "return b"),
                        "exit": (":\n", ":\n    raise SystemExit(0)\n")}),
        "fib": Program("def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
                       "        a, b = b, a + b\n    return a\n",
                       {"wrong": ("range(n)", "range(n - 1)"),
                        "exit": (":\n", ":\n    raise SystemExit(0)\n")}),
        "sum_max": Program("n = int(input())\nxs = [int(x) for x in input().split()][:n]\n"
                           "print(sum(xs), max(xs))\n",
                           {"wrong": ("max(xs)", "min(xs)"),
                            "exit": ("n = ", "raise SystemExit(0)\nn = ")}),
    },
    "c": {**_c_like("exit(0);", "#include <stdlib.h>\n"),
          "sum_max": Program(_C_SUM_MAX, {"wrong": ("x > max", "x < max"),
                                          "exit": ("{\n", "{\n    exit(0);\n")})},
    "cpp": {**_c_like("std::exit(0);", "#include <cstdlib>\n"),
            "sum_max": Program(_CPP_SUM_MAX, {"wrong": ("max_element", "min_element"),
                                              "exit": ("{\n", "{\n    std::exit(0);\n")})},
    "java": {
        "gcd": Program("class Solution {\n    public int gcd(int a, int b) {\n"
                       "        while (b != 0) {\n            int t = a % b;\n"
                       "            a = b;\n            b = t;\n        }\n"
                       "        return a;\n    }\n}\n",
                       {"wrong": ("return a;", "return b;"),
                        "exit": ("b) {\n", "b) {\n        System.exit(0);\n")}),
        "fib": Program("class Solution {\n    public long fib(int n) {\n"
                       "        long a = 0, b = 1;\n        for (int i = 0; i < n; i++) {\n"
                       "            long t = a + b;\n            a = b;\n            b = t;\n"
                       "        }\n        return a;\n    }\n}\n",
                       {"wrong": ("i < n", "i < n - 1"),
                        "exit": ("n) {\n", "n) {\n        System.exit(0);\n")}),
        "sum_max": Program(_JAVA_SUM_MAX, {"wrong": ("Math.max", "Math.min"),
                                           "exit": ("Scanner in", "System.exit(0);\n"
                                                    "        Scanner in")}),
    },
    "javascript": {
        "gcd": Program("const gcd = (a, b) => {\n  while (b !== 0) {\n    [a, b] = [b, a % b]\n"
                       "  }\n  return a\n}\n",
                       {"wrong": ("return a", "return b"),
                        "exit": ("=> {\n", "=> {\n  process.exit(0)\n")}),
        "fib": Program("const fib = (n) => {\n  let a = 0, b = 1\n"
                       "  for (let i = 0; i < n; i++) {\n    [a, b] = [b, a + b]\n  }\n"
                       "  return a\n}\n",
                       {"wrong": ("i < n", "i < n - 1"),
                        "exit": ("=> {\n", "=> {\n  process.exit(0)\n")}),
        "sum_max": Program(_JS_SUM_MAX, {"wrong": ("Math.max", "Math.min"),
                                         "exit": ("const lines", "process.exit(0)\n"
                                                  "const lines")}),
    },
    "go": {
        "gcd": Program("func Gcd(a, b int) int {\n    for b != 0 {\n        a, b = b, a%b\n"
                       "    }\n    return a\n}\n",
                       {"wrong": ("return a", "return b"),
                        "exit": ("func Gcd(a, b int) int {\n",
                                 'import "os"\n\nfunc Gcd(a, b int) int {\n    os.Exit(0)\n')}),
        "fib": Program("func Fib(n int) int {\n    a, b := 0, 1\n    for i := 0; i < n; i++ {\n"
                       "        a, b = b, a+b\n    }\n    return a\n}\n",
                       {"wrong": ("i < n", "i < n-1"),
                        "exit": ("func Fib(n int) int {\n",
                                 'import "os"\n\nfunc Fib(n int) int {\n    os.Exit(0)\n')}),
        "sum_max": Program(_GO_SUM_MAX, {"wrong": ("x > best", "x < best"),
                                         "exit": ('import "fmt"\n\nfunc main() {\n',
                                                  'import (\n    "fmt"\n    "os"\n)\n\n'
                                                  'func main() {\n    os.Exit(0)\n')}),
    },
    "rust": {
        "gcd": Program("fn gcd(mut a: i64, mut b: i64) -> i64 {\n    while b != 0 {\n"
                       "        let t = a % b;\n        a = b;\n        b = t;\n    }\n"
                       "    a\n}\n",
                       {"wrong": ("    a\n}", "    b\n}"),
                        "exit": ("{\n", "{\n    std::process::exit(0);\n")}),
        "fib": Program("fn fib(n: u32) -> i64 {\n    let (mut a, mut b) = (0i64, 1i64);\n"
                       "    for _ in 0..n {\n        let t = a + b;\n        a = b;\n"
                       "        b = t;\n    }\n    a\n}\n",
                       {"wrong": ("0..n", "1..n"),
                        "exit": ("{\n", "{\n    std::process::exit(0);\n")}),
        "sum_max": Program(_RUST_SUM_MAX, {"wrong": (".max()", ".min()"),
                                           "exit": ("{\n", "{\n    std::process::exit(0);\n")}),
    },
}


@dataclass(frozen=True)
class Job:
    """One program to grade: ``variant`` is ``correct`` or a broken variant's name."""

    task: str
    variant: str
    sample: Sample


def jobs_of(language: str, tasks: tuple[str, ...], variants: tuple[str, ...]) -> list[Job]:
    """The correct program of each task, then its chosen broken variants."""
    made = []
    for task in tasks:
        program = PROGRAMS[language][task]
        reference: Any = {"cases": CASES} if task == "sum_max" else [test_program(language,
                                                                                 task)]
        for variant in ("correct", *variants):
            code = program.code
            if variant != "correct":
                old, new = program.broken[variant]
                assert old in code, (language, task, variant)
                code = code.replace(old, new, 1)
            completion = f"```{language}\n{code}```"
            made.append(Job(task, variant, Sample(completion=completion, reference=reference)))
    return made


def grade_all(grader: CodeExecution, jobs: list[Job], slots: int) -> tuple[list[Any], float,
                                                                            list[float]]:
    """(scores, seconds, per-program latencies) of grading ``jobs`` on ``slots`` threads."""
    def timed(job: Job) -> tuple[Any, float]:
        began = time.perf_counter()
        score = grader.grade(job.sample)
        return score, time.perf_counter() - began

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=slots) as executor:
        done = list(executor.map(timed, jobs))
    return [s for s, _ in done], time.perf_counter() - started, [t for _, t in done]


def measure(language: str, tasks: tuple[str, ...], variants: tuple[str, ...],
            slots: int) -> dict[str, Any]:
    """The figures of one language (see the module)."""
    if language != "python":
        problem = find_toolchain(LANGUAGES[language])[1]
        if problem is not None:
            return {"toolchain_missing": problem}
    grader = CodeExecution({"language": language, "mode": "binary", "timeout_s": 10,
                            "concurrency": slots})
    jobs = jobs_of(language, tasks, variants)
    cache = shared_compile_cache()
    hits, misses = cache.hits, cache.misses
    scores, seconds, latencies = grade_all(grader, jobs, slots)
    errors = {f"{j.task}/{j.variant}": s.reason for j, s in zip(jobs, scores, strict=True)
              if s.status.value != "ok"}
    correct = [(j, s) for j, s in zip(jobs, scores, strict=True) if j.variant == "correct"]
    broken = [(j, s) for j, s in zip(jobs, scores, strict=True) if j.variant != "correct"]
    warm_jobs = [j for j, _ in correct]
    _, warm_s, warm_latencies = grade_all(grader, warm_jobs, slots)
    return {
        "correct": {"programs": len(correct), "passed": sum(s.value == 1.0 for _, s in correct),
                    "failed": {f"{j.task}": s.reason for j, s in correct if s.value != 1.0}},
        "broken": {"programs": len(broken), "passed": sum(s.value == 1.0 for _, s in broken),
                   "passed_ids": [f"{j.task}/{j.variant}" for j, s in broken if s.value == 1.0],
                   # why each one failed: a wrong answer or exit, not a compile error
                   "reasons": {f"{j.task}/{j.variant}": s.reason for j, s in broken}},
        "errors": errors,
        # a broken variant must fail by what it does wrong, not by not compiling
        "broken_not_compiled": [f"{j.task}/{j.variant}" for j, s in broken
                                if "compile_error" in (s.reason or "")],
        "programs_per_s": round(len(jobs) / seconds, 2),
        "warm_programs_per_s": round(len(warm_jobs) / warm_s, 2),
        "p50_ms": round(1000 * statistics.median(latencies), 1),
        "warm_p50_ms": round(1000 * statistics.median(warm_latencies), 1),
        "builds": {"compiled": cache.misses - misses, "cache_hits": cache.hits - hits},
    }


def line(language: str, row: dict[str, Any]) -> str:
    """One language's figures as one printed line."""
    if "toolchain_missing" in row:
        return f"{language:<11} toolchain missing: {row['toolchain_missing']}"
    c, b = row["correct"], row["broken"]
    first, again = ("first pass", "again (no build step)") if language == "python" else (
        "compiling", "build cache warm")
    return (f"{language:<11} correct {c['passed']}/{c['programs']} passed, broken "
            f"{b['passed']}/{b['programs']} passed; {row['programs_per_s']:.2f} programs/s "
            f"{first} (p50 {row['p50_ms']:.0f} ms), {row['warm_programs_per_s']:.2f}/s "
            f"{again} (p50 {row['warm_p50_ms']:.0f} ms); builds {row['builds']['compiled']} "
            f"compiled, {row['builds']['cache_hits']} cached")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"tasks {', '.join(QUICK_TASKS)}, broken variant "
                        f"{', '.join(QUICK_VARIANTS)} only (smoke run)")
    parser.add_argument("--languages", default=",".join(LANGUAGE_ORDER))
    parser.add_argument("--slots", type=int, default=2, help="programs graded at once")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    languages = [name.strip() for name in args.languages.split(",") if name.strip()]
    unknown = [name for name in languages if name not in PROGRAMS]
    if unknown:
        parser.error(f"unknown language(s) {', '.join(unknown)} (known: "
                     f"{', '.join(LANGUAGE_ORDER)})")
    tasks = QUICK_TASKS if args.quick else (*CHECKS, "sum_max")
    variants = QUICK_VARIANTS if args.quick else ("wrong", "exit")
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"code_execution per language on {LABEL}; tasks {', '.join(tasks)}, broken "
          f"variants {', '.join(variants)}; {args.slots} slots; load average {load} on "
          f"{os.cpu_count()} CPUs", flush=True)
    warm_up = CodeExecution({"language": "python", "concurrency": args.slots})
    warm_up.grade(Sample(completion="```python\nx = 1\n```", reference=["assert x == 1"]))
    figures: dict[str, Any] = {}
    for language in languages:
        figures[language] = measure(language, tasks, variants, args.slots)
        print(line(language, figures[language]), flush=True)
    after = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"load average after: {after}")
    report = {"label": LABEL, "quick": args.quick, "tasks": list(tasks),
              "variants": list(variants), "slots": args.slots, "load_before": load,
              "load_after": after, "cpus": os.cpu_count(), "languages": figures}
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    bad = [name for name, row in figures.items() if "toolchain_missing" not in row
           and (row["correct"]["passed"] < row["correct"]["programs"] or row["broken"]["passed"]
                or row["errors"] or row["broken_not_compiled"])]
    if bad:
        print(f"NOT AS REQUIRED: {', '.join(bad)} (a correct program failed, a broken one "
              "passed, or a grading error)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
