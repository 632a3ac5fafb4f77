"""math_answer against math-verify on a GRPO-shaped batch of real competition answers.

    git clone https://github.com/arka-ritual/omni-math-rule-ca
    git clone https://github.com/protagolabs/odyssey-math
    python benchmarks/bench_math_symbolic.py --omni omni-math-rule-ca --odyssey odyssey-math \
        [--golds 100] [--repeats 3] [--json] [--verdicts OUT.json]

The real batch (issue 42 item 1): ``--golds`` problems drawn (seeded) from each of two
public competition sets, read from a local copy (git clone or bare mirror) at the commit
named below and checked against their SHA-256; nothing of them is stored here:

- Omni-MATH golds of ``arka-ritual/omni-math-rule-ca`` (the 500 problems of its evaluation
  outputs, the files :mod:`bench_math_timeouts` reads), each with the final answers of its
  eight real model runs;
- MathOdyssey golds of ``protagolabs/odyssey-math`` (``final-odyssey-math-with-levels.jsonl``,
  387 problems, the gold's trailing ``\\\\ \\noindent`` dropped), each with the final answers
  of eight models from its ``jsonl/clean`` files.

Each gold's group is 16 completions: its 8 real model answers, and 8 answers written from
the gold (as written, without the spaces around non-letters, ``\\dfrac`` for ``\\frac``,
in ``\\left( \\right)``:
equal; a digit changed at its start and at its end, plus one, negated: wrong), each as a
model ends (``The final answer is $\\boxed{...}$``). Only golds that math_answer grades
symbolically are drawn (not plain numbers, word answers or choice letters, which never
reach sympy; ``--every-gold`` draws from all).

Without ``--omni``/``--odyssey`` the batch is the SYNTHETIC one this benchmark had before
(hand-written references of nine shapes, ``--prompts`` x ``--group``): kept as a labelled
fallback, not representative of real rows (most of it falls in math_answer's exact fast
path).

Timed in one run, on the same rows, at equal process count: math_answer with its defaults
through a RewardSet with one worker (process mode, IPC included; CPU seconds are the
worker's, read from /proc), and math-verify's ``verify(parse("$gold$"), parse(completion))``
per row in one process with its own timeouts on (its defaults: 5 s per parse and per
verify). Both start cold in each repeat: math_answer on a fresh worker with empty caches,
math-verify in a fresh Python process (its own session, as the worker has), each warmed
up on the same unrelated pairs outside the timing, so each builds its LaTeX parser's
prediction tables (ANTLR's DFA) again on the batch's texts. The older method is timed
beside it and reported too: math-verify in this one process, its parse caches emptied per
repeat but its parser's tables kept from the repeats before (warm), which favours
math-verify. On the real batch each repeat also times the steady state (``--no-steady``
leaves it out): each grader once more in a fresh process, first given, outside the
timing, an earlier batch of the same size drawn from the other golds of the same sources
(its parser's tables and caches built on those, as in a training run's later steps),
then timed on the batch. The timings alternate; medians and the per-repeat ratios are
reported. Then,
in this process, how each row is graded: math_answer's exact fast path, its fast path
through math-verify, or its full symbolic path. Target: math_answer at least 10x
math-verify's wall time (both cold).

Needs ``pip install 'rewardkit[math]'``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from process_cpu import descendants_cpu

from rewardkit import RewardSet, Sample

#: per shape: (reference, equivalent forms, wrong answers, decimal approximations)
BANK: dict[str, list[tuple[str, list[str], list[str], list[str]]]] = {
    "integer": [
        ("204", ["204"], ["201", "208", "102"], []),
        ("2019", ["2019", "2{,}019"], ["2018", "2020"], []),
        ("-7", ["-7"], ["7", "-5"], []),
    ],
    "fraction": [
        ("\\frac{7}{12}", ["\\dfrac{7}{12}", "\\frac{14}{24}", "7/12"],
         ["\\frac{5}{12}", "\\frac{7}{13}"], ["0.583"]),
        ("\\frac{3}{4}", ["\\tfrac34", "\\frac{6}{8}", "0.75"], ["\\frac{4}{3}", "\\frac{1}{4}"],
         ["0.7"]),
        ("-\\frac{1}{8}", ["\\frac{-1}{8}", "-\\dfrac{1}{8}"], ["\\frac{1}{8}", "-\\frac{1}{4}"],
         []),
    ],
    "radical": [
        ("2\\sqrt{5}", ["\\sqrt{20}", "2 \\sqrt 5"], ["4\\sqrt{5}", "\\sqrt{10}"], ["4.47"]),
        ("\\frac{1+\\sqrt{5}}{2}", ["\\frac{\\sqrt{5}+1}{2}", "\\frac{1}{2}+\\frac{\\sqrt5}{2}"],
         ["\\frac{1-\\sqrt{5}}{2}", "1+\\sqrt{5}"], ["1.618"]),
        ("\\frac{\\sqrt{3}}{2}", ["\\frac{3}{2\\sqrt{3}}", "\\dfrac{\\sqrt3}{2}"],
         ["\\frac{\\sqrt{2}}{2}", "\\sqrt{3}"], []),
        ("3\\sqrt{2}-1", ["-1+\\sqrt{18}"], ["3\\sqrt{2}+1", "2\\sqrt{3}-1"], []),
    ],
    "expression": [
        ("2x^2+x-1", ["x+2x^2-1", "(2x-1)(x+1)", "2x^{2} + x - 1"],
         ["2x^2-x-1", "2x^2+x+1"], []),
        ("12\\pi", ["12 \\pi", "\\pi \\cdot 12"], ["6\\pi", "24\\pi"], ["37.7"]),
        ("\\frac{x+1}{2}", ["\\frac{1}{2}x+\\frac{1}{2}", "(x+1)/2"], ["x+\\frac{1}{2}",
         "\\frac{x-1}{2}"], []),
        ("8+\\pi", ["\\pi+8"], ["8\\pi", "8-\\pi"], []),
        # outside the exact language (functions, e, cube roots): math-verify grades them
        ("2\\sin x", ["2 \\sin(x)", "\\sin x + \\sin x"], ["\\sin 2x", "2\\cos x"], []),
        ("e^{2}", ["e^2"], ["2e", "e^{3}"], ["7.389"]),
        ("\\sqrt[3]{4}", ["2^{2/3}"], ["\\sqrt{4}", "\\sqrt[3]{2}"], ["1.587"]),
    ],
    "equation": [
        ("y = -5x - 3", ["y=-3-5x", "y = -(5x+3)"], ["y = 5x - 3", "y = -5x + 3"], []),
        ("x^2+y^2=25", ["y^2+x^2=25"], ["x^2+y^2=5", "x^2-y^2=25"], []),
        ("k = \\frac{3}{2}", ["k=\\dfrac32"], ["k = \\frac{2}{3}", "k=3"], []),
    ],
    "interval": [
        ("(-\\infty, 3]", ["\\left(-\\infty, 3\\right]", "(-\\infty,3]"],
         ["(-\\infty, 3)", "[3, \\infty)"], []),
        ("[2, 5)", ["[2,5)", "\\left[2, 5\\right)"], ["[2, 5]", "(2, 5)"], []),
        ("(0, \\frac{1}{2})", ["\\left(0,\\frac12\\right)"], ["(0, 2)", "[0, \\frac{1}{2}]"],
         []),
    ],
    "set": [
        ("\\{1, 2, 5\\}", ["\\{5, 2, 1\\}", "\\{1,2,5\\}"], ["\\{1, 2\\}", "\\{1, 2, 4\\}"],
         []),
        ("\\{-3, \\frac{1}{2}\\}", ["\\{\\frac12, -3\\}"], ["\\{3, \\frac{1}{2}\\}",
         "\\{-3\\}"], []),
    ],
    "tuple": [
        ("(3, -1)", ["\\left(3, -1\\right)", "(3,-1)"], ["(-1, 3)", "(3, 1)"], []),
        ("(\\frac{1}{2}, 4)", ["(\\dfrac{1}{2}, 4)", "\\left(\\frac12,4\\right)"],
         ["(2, 4)", "(4, \\frac{1}{2})"], []),
        ("(1, 2, 3)", ["(1,2,3)"], ["(1, 3, 2)", "(1, 2)"], []),
    ],
    "matrix": [
        ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
         ["\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{pmatrix} 1 & 2\\\\ 3 & 2+2 "
          "\\end{pmatrix}"],
         ["\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}",
          "\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}"], []),
        ("\\begin{pmatrix} 2 & -1 \\\\ 0 & \\frac{1}{2} \\end{pmatrix}",
         ["\\begin{pmatrix}2 & -1\\\\0 & \\dfrac12\\end{pmatrix}"],
         ["\\begin{pmatrix} 2 & 1 \\\\ 0 & \\frac{1}{2} \\end{pmatrix}"], []),
    ],
}
SHAPES = list(BANK)
#: pairs outside the bank that bring a fresh worker's math-verify up to speed; the last is
#: equal only by sympy's ``simplify``, so that each grader has called it (and imported what
#: it imports on its first call, ``sympy.physics`` among them) before the timing: the
#: numeric disproof settles the others without it on math_answer's side
WARM_UP = [("\\cos(x)", "\\sin(x)"), ("\\log(y)", "\\log(y)"), ("e^{y}", "e^{3y}"),
           ("\\sin(x)^2+\\cos(x)^2", "1")]

_STEPS = [
    "First, we simplify the given condition and collect like terms.",
    "Substituting the value found above, we get $3a + 2b = 17$.",
    "By the AM-GM inequality, $\\frac{a+b}{2} \\ge \\sqrt{ab}$, with equality at $a = b$.",
    "We check the boundary cases separately: $n = 1$ and $n = 2$ both work.",
    "Multiplying both sides by $2$ gives $4k - 6 = 2m$, so $m = 2k - 3$.",
    "The discriminant is $b^2 - 4ac = 49 - 24 = 25$, which is a perfect square.",
    "Let me double-check this by plugging back into the original equation.",
    "So the sum telescopes and only the first and last terms remain.",
]


@dataclass(frozen=True)
class Row:
    shape: str
    gold: str
    completion: str
    correct: bool | None  # None: a real model answer, unlabelled


# -- the real batch ------------------------------------------------------------------------
OMNI = ("arka-ritual/omni-math-rule-ca", "811748a642551b77bda9fa6d52bd0efc4d87427f")
ODYSSEY = ("protagolabs/odyssey-math", "fe9e83df06111728e1b06ddaee0a60837c07d6c9")
ODYSSEY_GOLDS = ("final-odyssey-math-with-levels.jsonl",
                 "b3dab75dbfc9a07f1f6096e060790630cdff96a70e3adf92b692c9316294290a")
#: eight models' final answers to every MathOdyssey problem
ODYSSEY_RUNS = {f"jsonl/clean/{name}.jsonl": digest for name, digest in (
    ("gpt-4-turbo-2024-04-09-solution-clean",
     "2bffc95ae4ddbd5366f26544b5cb381b94907184d6902ebc9058a3dfc938f786"),
    ("gpt-4-o1-preview-solution-clean",
     "6b844422958fdbdd498c181c6d713a273dd8aeac3a3b8436a242b405bb6532ff"),
    ("deepseek-v3-Instruct-solution-clean",
     "ff274043184e17134068fd9a10af6918cb5671090e5fe9ec9d87a73f2dbd77e3"),
    ("gpt-4-0125-preview-solution-clean-new",
     "addc599acc52a916a9ab51d9d00f41e4db391e3b68b592923d61789d3d52726b"),
    ("gpt-3.5-turbo-0125-solution-clean-new",
     "d4798c2b5ac684a1b935edf414d22c9ca245b4bef10e2c0db42e5e86434a4f2e"),
    ("llama3-70b-solution-clean",
     "d692faa06782f8419cf8d64fca349d9f13fcf340f771d4070c310ee51bb7dc18"),
    ("dbrx-instruct-solution-clean",
     "4b7cb03edd9e0f2ebca42171d86a2bd86c7023e3d830f87816141bbd7da8dc54"),
    ("gpt-4-1106-preview-solution-clean-new",
     "e4d9b764db82ac91b8bda3512200318161c600a45bd497ae4c3a198baff5095d"),
)}


def read_at(copy: Path, commit: str, path: str, digest: str) -> bytes:
    """One file of a local copy (clone or bare mirror) at ``commit``, checked by SHA-256."""
    git_dir = copy / ".git" if (copy / ".git").exists() else copy
    done = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
                          capture_output=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{copy}: cannot read {path} at {commit[:12]}: {done.stderr.decode().strip()}")
    got = hashlib.sha256(done.stdout).hexdigest()
    if got != digest:
        sys.exit(f"{path}: SHA-256 {got[:16]}..., expected {digest[:16]}...")
    return done.stdout


_DIGIT = re.compile(r"\d")
#: spaces around anything but a letter (``\\cdot x`` keeps its space)
_SPACE_AROUND = re.compile(r"\s*([^A-Za-z\s\\])\s*")


def written_from(gold: str) -> list[tuple[str, bool]]:
    """Eight answers written from a gold: four equal to it (as written, without spaces,
    ``\\dfrac`` for ``\\frac``, in ``\\left( \\right)``) and four wrong (a digit
    changed at its start and at its end, plus one, negated); a gold without a digit gets
    ``+2`` and ``+3`` instead of the changed digits."""
    out = [(gold, True), (_SPACE_AROUND.sub(r"\1", gold), True),
           (gold.replace("\\dfrac", "\\frac").replace("\\frac", "\\dfrac"), True),
           (f"\\left({gold}\\right)", True)]
    digits = [m.start() for m in _DIGIT.finditer(gold)]
    for at in (digits[0], digits[-1]) if digits else ():
        out.append((gold[:at] + str((int(gold[at]) + 5) % 10) + gold[at + 1:], False))
    if not digits:
        out += [(f"({gold})+2", False), (f"({gold})+3", False)]
    out += [(f"({gold})+1", False), (f"-({gold})", False)]
    return out[:8]


_DELIMITED = re.compile(r"\s*(?:\$|\\\[)([^$]*?)(?:\$|\\\])\s*\.?\s*")


def _boxed(answer: str) -> str:
    return (f"The final answer is $\\boxed{{{answer}}}$" if answer
            else "I could not determine the answer.")


def _group(source: str, gold: str, answers: list[str]) -> list[Row]:
    rows = [Row(f"{source} model", gold, _boxed(a), None) for a in answers]
    bare = _DELIMITED.fullmatch(gold)  # "$2 \\sqrt{7}$.": rewrites of what it delimits
    rows += [Row(f"{source} {'equal' if right else 'wrong'}", gold, _boxed(a), right)
             for a, right in written_from(bare.group(1).strip() if bare else gold)]
    return rows


_CHOICE = re.compile(r"\W*[A-J]\W*")


def symbolic_gold(gold: str) -> bool:
    """A gold math_answer reads as mathematics (not a plain number, words or a
    multiple-choice letter): the rows whose grading is symbolic."""
    from rewardkit.builtin.math.params import MathParams
    from rewardkit.builtin.math.references import SymbolicReference, reference_kind

    params = MathParams()
    return type(reference_kind(gold, params.decimal_comma, params.symbolic)) is \
        SymbolicReference and not _CHOICE.fullmatch(gold)


def omni_batch(copy: Path, golds: int, rng: random.Random,
               every_gold: bool = False, skip: frozenset[str] = frozenset()) -> list[Row]:
    """Omni-MATH golds with eight real model answers each (bench_math_timeouts' files),
    none of the golds in ``skip``."""
    from bench_math_timeouts import COMMIT, FILES

    assert OMNI[1] == COMMIT
    runs = []
    for path, digest in FILES.items():
        data = read_at(copy, OMNI[1], path, digest)
        runs.append({json.loads(line)["idx"]: json.loads(line)
                     for line in data.decode().splitlines() if line.strip()})
    ids = [i for i in sorted(set.intersection(*(set(r) for r in runs)))
           if (every_gold or symbolic_gold(str(runs[0][i]["gt"]).strip()))
           and str(runs[0][i]["gt"]).strip() not in skip]
    rows: list[Row] = []
    for idx in sorted(rng.sample(ids, min(golds, len(ids)))):
        answers = []
        for run in runs:
            pred = run[idx].get("pred")
            if isinstance(pred, list):
                pred = pred[-1] if pred else ""
            answers.append(str(pred or "").strip())
        rows += _group("omni", str(runs[0][idx]["gt"]).strip(), answers)
    return rows


_ODYSSEY_TAIL = re.compile(r"(?:\s|\\\\|\\noindent)+$")


def odyssey_batch(copy: Path, golds: int, rng: random.Random,
                  every_gold: bool = False, skip: frozenset[str] = frozenset()) -> list[Row]:
    """MathOdyssey golds with eight models' final answers each, none of those in ``skip``."""
    problems = {}
    for line in read_at(copy, ODYSSEY[1], *ODYSSEY_GOLDS).decode().splitlines():
        if line.strip():
            (key, row), = json.loads(line).items()
            problems[key] = _ODYSSEY_TAIL.sub("", str(row["answer"])).strip()
    runs = []
    for path, digest in ODYSSEY_RUNS.items():
        run = {}
        for line in read_at(copy, ODYSSEY[1], path, digest).decode().splitlines():
            if line.strip():
                (key, row), = json.loads(line).items()
                run[key] = str(row.get("answer", "")).strip()
        runs.append(run)
    keys = sorted((k for k in problems if (every_gold or symbolic_gold(problems[k]))
                   and problems[k] not in skip), key=lambda k: int(k.rsplit("_", 1)[1]))
    rows: list[Row] = []
    for key in sorted(rng.sample(keys, min(golds, len(keys))), key=keys.index):
        rows += _group("odyssey", problems[key], [run.get(key, "") for run in runs])
    return rows


def real_batches(omni: Path | None, odyssey: Path | None, golds: int, seed: int,
                 every_gold: bool = False) -> tuple[list[Row], list[Row]]:
    """The real batch (``golds`` of each source given, drawn with ``seed``) and the
    earlier batch of the steady state (other golds of the same sources, ``seed + 1``)."""
    rng = random.Random(seed)
    rows = (omni_batch(omni, golds, rng, every_gold) if omni else []) + (
        odyssey_batch(odyssey, golds, rng, every_gold) if odyssey else [])
    taken = frozenset(r.gold for r in rows)
    other = random.Random(seed + 1)
    earlier = (omni_batch(omni, golds, other, every_gold, taken) if omni else []) + (
        odyssey_batch(odyssey, golds, other, every_gold, taken) if odyssey else [])
    return rows, earlier


def completion(rng: random.Random, answer: str) -> str:
    steps = rng.sample(_STEPS, rng.randint(2, 5))
    ending = rng.choice([f"Therefore the answer is $\\boxed{{{answer}}}$.",
                         f"The final answer is $\\boxed{{{answer}}}$",
                         f"\\[\n\\boxed{{{answer}}}\n\\]"])
    return "\n\n".join(steps) + "\n\n" + ending


def batch(prompts: int, group: int, seed: int) -> list[Row]:
    """``prompts`` x ``group`` completions, the shapes in turn, each group drawing a few
    distinct answers and repeating them."""
    rng = random.Random(seed)
    rows: list[Row] = []
    for p in range(prompts):
        shape = SHAPES[p % len(SHAPES)]
        gold, same, wrong, approx = rng.choice(BANK[shape])
        pool: list[tuple[str, bool]] = [(gold, True)] + [(s, True) for s in same] + \
            [(w, False) for w in wrong] + [(a, False) for a in approx]
        distinct = [pool[0], *rng.sample(pool[1:], min(len(pool) - 1, rng.randint(1, 3)))]
        weights = [rng.uniform(1, 4) for _ in distinct]
        for _ in range(group):
            answer, right = rng.choices(distinct, weights)[0]
            rows.append(Row(shape, gold, completion(rng, answer), right))
    return rows


def math_verify_grader() -> Callable[[str, str], bool]:
    """math-verify as its README uses it, with its own timeouts on (5 s per parse and per
    verify, its defaults)."""
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    logging.getLogger("math_verify.parser").setLevel(logging.CRITICAL)
    logging.getLogger("math_verify.grader").setLevel(logging.CRITICAL)

    def grade(gold: str, pred: str) -> bool:
        try:
            return bool(verify(parse(f"${gold}$"), parse(pred)))
        except Exception:
            return False

    return grade


def math_verify_in_fresh_process(rows: list[Row], earlier: list[Row] | None = None
                                 ) -> tuple[list[bool], float, float]:
    """math-verify graded in a fresh Python process in a session of its own (cold, as
    math_answer's fresh worker is): started, math-verify imported and warmed up on
    ``WARM_UP`` (and, when given, on the ``earlier`` rows: steady) outside the timing; its
    verdicts, wall and CPU seconds of the rows."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--math-verify-child"],
        input=json.dumps({"rows": [[r.gold, r.completion] for r in rows],
                          "earlier": [[r.gold, r.completion] for r in earlier or ()]}),
        capture_output=True,
        text=True, start_new_session=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"math-verify's process failed ({done.returncode}): "
                         f"{done.stderr[-2000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return got["verdicts"], got["wall_s"], got["cpu_s"]


def _math_verify_child() -> int:
    """The fresh process of :func:`math_verify_in_fresh_process`: (gold, completion) pairs
    on stdin, one JSON line of verdicts and seconds on stdout."""
    given = json.loads(sys.stdin.read())
    pairs = given["rows"]
    mv = math_verify_grader()
    for gold, answer in WARM_UP:
        mv(gold, f"\\boxed{{{answer}}}")
    _empty_math_verify_caches()
    for gold, completion in given["earlier"]:  # (steady: its caches kept, as math_answer's)
        mv(gold, completion)
    start, cpu0 = time.perf_counter(), time.process_time()
    verdicts = [mv(gold, completion) for gold, completion in pairs]
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    print(json.dumps({"verdicts": verdicts, "wall_s": wall, "cpu_s": cpu}))
    return 0


def _empty_caches() -> None:
    """math_answer's in-process caches, emptied: each timing starts cold."""
    from rewardkit.builtin.math import fast_path, references, sample

    for module in (fast_path, references, sample):
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)) and \
                    getattr(value, "__module__", "") == module.__name__:
                value.cache_clear()


def _empty_math_verify_caches() -> None:
    """math-verify's own caches of parses (``parse_latex_cached``, ``parse_expr_cached``,
    ``extract_latex``), emptied: it starts each repeat cold, as math_answer does (its
    compiled regexes stay, as a warm worker's do)."""
    from math_verify import parser

    for name in ("parse_latex_cached", "parse_expr_cached", "extract_latex"):
        fn = getattr(parser, name, None)
        if fn is not None and hasattr(fn, "cache_clear"):
            fn.cache_clear()


def _fresh_reward_set() -> RewardSet:
    """A RewardSet with math_answer's defaults on one fresh worker (empty caches), started
    and warmed up on pairs outside the batch that math-verify grades (its imports,
    regexes and sympy's simplify are ready, as in a training run past its first step)."""
    from rewardkit.execution.pool import shared_pool

    shared_pool(1).close()  # the one-worker pool of the previous repeat, caches and all
    _empty_caches()
    rs = RewardSet.from_dict({"rewards": {"math": {"reward": "math_answer"}}, "workers": 1})
    rs.score([Sample(completion=f"\\boxed{{{answer}}}", reference=gold)
              for gold, answer in WARM_UP for _ in range(16)])
    return rs


def paid(rs: RewardSet, samples: list[Sample]) -> list[bool]:
    """math_answer's verdict on each sample: paid in full or not."""
    return [v == 1.0 for v in rs.score(samples).values("math")]


def timed(fn: Callable[[], list[bool]], cpu: Callable[[], float]) -> tuple[list[bool], float,
                                                                             float]:
    start, cpu0 = time.perf_counter(), cpu()
    got = fn()
    return got, time.perf_counter() - start, cpu() - cpu0


def how_graded(rows: list[Row]) -> dict[str, dict[str, int]]:
    """Per row kind: how many rows math_answer grades by its exact fast path, by its fast
    path through math-verify, or by its full symbolic path (or a plain-number / word
    reference that needs neither), in this process."""
    from rewardkit.builtin.math import fast_path
    from rewardkit.builtin.math.params import MathParams
    from rewardkit.builtin.math.references import SymbolicReference, plain_reference

    _empty_caches()
    params = MathParams()
    original = fast_path.math_verify_verdict
    called: list[bool] = []

    def counting(gold: str, formula: str) -> bool | None:
        called.append(True)
        return original(gold, formula)

    fast_path.math_verify_verdict = counting  # type: ignore[assignment]
    counts: dict[str, dict[str, int]] = {}
    try:
        for r in rows:
            called.clear()
            sample = Sample(completion=r.completion, reference=r.gold)
            if type(plain_reference(r.gold, params)) is not SymbolicReference:
                kind = "plain reference"
            else:
                got = fast_path.fast_verdict(sample, params)
                kind = ("symbolic path" if got is None else
                        "fast path via math-verify" if called else "exact fast path")
            per = counts.setdefault(r.shape.split()[0], {})
            per[kind] = per.get(kind, 0) + 1
    finally:
        fast_path.math_verify_verdict = original  # type: ignore[assignment]
    return counts


def run(rows: list[Row], repeats: int, earlier: list[Row] | None = None) -> dict[str, Any]:
    """The timings; with ``earlier`` rows (other golds of the same sources) also the
    steady state: each grader in a fresh process again, first given the earlier rows
    outside the timing (its parser's tables built on them, as in a training run's later
    steps), then timed on the batch."""
    samples = [Sample(completion=r.completion, reference=r.gold) for r in rows]
    before = [Sample(completion=r.completion, reference=r.gold) for r in earlier or ()]
    steady: dict[str, list[float]] = {"ours_s": [], "ours_cpu": [], "mv_s": [], "mv_cpu": []}
    steady_same = 0
    mv = math_verify_grader()
    mv("1", "1")
    ours_s: list[float] = []
    ours_cpu: list[float] = []
    mv_s: list[float] = []
    mv_cpu: list[float] = []
    warm_s: list[float] = []
    warm_cpu: list[float] = []
    ours: list[bool] = []
    theirs: list[bool] = []
    warm: list[bool] = []
    load = os.getloadavg()
    for _ in range(repeats):
        rs = _fresh_reward_set()
        ours, secs, cpu = timed(partial(paid, rs, samples), descendants_cpu)
        ours_s.append(secs)
        ours_cpu.append(cpu)
        theirs, secs, cpu = math_verify_in_fresh_process(rows)
        mv_s.append(secs)
        mv_cpu.append(cpu)
        _empty_math_verify_caches()
        warm, secs, cpu = timed(lambda: [mv(r.gold, r.completion) for r in rows],
                                time.process_time)
        warm_s.append(secs)
        warm_cpu.append(cpu)
        if earlier:
            rs = _fresh_reward_set()
            rs.score(before)
            got, secs, cpu = timed(partial(paid, rs, samples), descendants_cpu)
            steady_same = sum(a == b for a, b in zip(got, ours, strict=True))
            steady["ours_s"].append(secs)
            steady["ours_cpu"].append(cpu)
            _, secs, cpu = math_verify_in_fresh_process(rows, earlier)
            steady["mv_s"].append(secs)
            steady["mv_cpu"].append(cpu)
    n = len(rows)
    labelled = [i for i in range(n) if rows[i].correct is not None]
    kinds: dict[str, dict[str, Any]] = {}
    for kind in sorted({r.shape for r in rows}):
        idx = [i for i in range(n) if rows[i].shape == kind]
        kinds[kind] = {"n": len(idx), "agree": sum(ours[i] == theirs[i] for i in idx)}
        if rows[idx[0]].correct is not None:
            kinds[kind]["math_answer_right"] = sum(ours[i] == rows[i].correct for i in idx)
            kinds[kind]["math_verify_right"] = sum(theirs[i] == rows[i].correct for i in idx)
    ours_med, mv_med = statistics.median(ours_s), statistics.median(mv_s)
    ours_cpu_med = max(statistics.median(ours_cpu), 1e-9)
    return {
        "n": n, "golds": len({r.gold for r in rows}), "repeats": repeats,
        "load_before": load, "load_after": os.getloadavg(),
        "distinct_answers": len({(r.gold, r.completion) for r in rows}),
        "math_answer_s": ours_s, "math_verify_s": mv_s,
        "math_answer_cpu_s": ours_cpu, "math_verify_cpu_s": mv_cpu,
        "math_answer_median_s": ours_med, "math_verify_median_s": mv_med,
        "ratio": mv_med / ours_med,
        "ratios": [m / o for o, m in zip(ours_s, mv_s, strict=True)],
        "cpu_ratio": statistics.median(mv_cpu) / ours_cpu_med,
        "math_verify_warm_s": warm_s, "math_verify_warm_cpu_s": warm_cpu,
        "math_verify_warm_median_s": statistics.median(warm_s),
        "ratio_warm": statistics.median(warm_s) / ours_med,
        "ratios_warm": [m / o for o, m in zip(ours_s, warm_s, strict=True)],
        "cpu_ratio_warm": statistics.median(warm_cpu) / ours_cpu_med,
        "warm_same_verdicts": sum(theirs[i] == warm[i] for i in range(n)),
        "agree_with_math_verify": sum(ours[i] == theirs[i] for i in range(n)),
        "labelled": len(labelled),
        "math_answer_right": sum(ours[i] == rows[i].correct for i in labelled),
        "math_verify_right": sum(theirs[i] == rows[i].correct for i in labelled),
        "kinds": kinds,
        "how_graded": how_graded(rows),
        "verdicts": ours,
        "steady": {
            "earlier_rows": len(earlier or ()), "math_answer_same_verdicts": steady_same,
            **steady,
            **({"ratio": statistics.median(steady["mv_s"]) / statistics.median(
                steady["ours_s"]),
                "ratios": [m / o for o, m in zip(steady["ours_s"], steady["mv_s"],
                                                 strict=True)],
                "cpu_ratio": statistics.median(steady["mv_cpu"]) / max(statistics.median(
                    steady["ours_cpu"]), 1e-9)} if earlier else {})},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--omni", type=Path, help="a copy of " + OMNI[0])
    parser.add_argument("--odyssey", type=Path, help="a copy of " + ODYSSEY[0])
    parser.add_argument("--golds", type=int, default=80, help="golds drawn from each source")
    parser.add_argument("--every-gold", action="store_true",
                        help="draw from every gold, plain numbers and choice letters too "
                        "(by default only golds math_answer grades symbolically)")
    parser.add_argument("--prompts", type=int, default=64,
                        help="synthetic fallback only: prompts in the batch")
    parser.add_argument("--group", type=int, default=16,
                        help="synthetic fallback only: completions per prompt")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (median)")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--verdicts", type=Path,
                        help="write math_answer's verdict on every row here (to compare "
                        "two commits)")
    parser.add_argument("--no-steady", action="store_true",
                        help="real batch: time only the cold start, not the steady state "
                        "after an earlier batch of other golds")
    parser.add_argument("--math-verify-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.math_verify_child:
        return _math_verify_child()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    earlier: list[Row] | None = None
    if args.omni or args.odyssey:
        rows, others = real_batches(args.omni, args.odyssey, args.golds, args.seed,
                                    args.every_gold)
        label = "REAL: " + ", ".join(f"{name}@{commit[:7]}" for (name, commit), copy in (
            (OMNI, args.omni), (ODYSSEY, args.odyssey)) if copy)
        if not args.no_steady:
            earlier = others
    else:
        rows = batch(args.prompts, args.group, args.seed)
        label = "SYNTHETIC (hand-written references; not representative of real rows)"
    got = run(rows, args.repeats, earlier)
    got["batch"] = label
    if args.verdicts:
        args.verdicts.write_text(json.dumps(got["verdicts"]))
    del got["verdicts"]
    if args.json:
        print(json.dumps(got, indent=2))
        return 0
    import rewardkit

    print(f"batch {label}; {got['n']} rows, {got['golds']} golds, {got['distinct_answers']} "
          f"distinct (gold, completion) pairs; {got['repeats']} repeats alternating, medians; "
          f"rewardkit {Path(rewardkit.__file__).parent}; load average before "
          f"{got['load_before'][0]:.2f}, after {got['load_after'][0]:.2f}")
    print(f"    {'grader (one process each)':<48}{'median s':>10}{'CPU s':>8}{'rows/s':>10}")
    for name, key in (("math_answer (RewardSet, defaults, 1 worker, cold)", "math_answer"),
                      ("math-verify parse + verify (fresh process, cold)", "math_verify"),
                      ("math-verify, old method (this process, warm)", "math_verify_warm")):
        secs = got[f"{key}_median_s"]
        print(f"    {name:<48}{secs:>10.2f}{statistics.median(got[f'{key}_cpu_s']):>8.2f}"
              f"{got['n'] / secs:>10,.0f}")
    print(f"    math_answer vs math-verify wall time: {got['ratio']:.2f}x (median; per repeat "
          + ", ".join(f"{r:.2f}x" for r in got["ratios"]) + f"); CPU {got['cpu_ratio']:.2f}x;"
          " target >= 10x (both cold)")
    print(f"    old method (math-verify's process warm): wall {got['ratio_warm']:.2f}x (per "
          "repeat " + ", ".join(f"{r:.2f}x" for r in got["ratios_warm"])
          + f"); CPU {got['cpu_ratio_warm']:.2f}x; its verdicts the same as the cold "
          f"process's on {got['warm_same_verdicts']} of {got['n']}")
    st = got["steady"]
    if st["earlier_rows"]:
        print(f"    steady state (each in a fresh process again, first given {st['earlier_rows']}"
              " earlier rows of other golds, untimed):")
        for name, key in (("math_answer (RewardSet, defaults, 1 worker)", "ours"),
                          ("math-verify parse + verify", "mv")):
            secs = statistics.median(st[f"{key}_s"])
            print(f"      {name:<46}{secs:>10.2f}{statistics.median(st[f'{key}_cpu']):>8.2f}"
                  f"{got['n'] / secs:>10,.0f}")
        print(f"      math_answer vs math-verify wall time: {st['ratio']:.2f}x (median; per "
              "repeat " + ", ".join(f"{r:.2f}x" for r in st["ratios"])
              + f"); CPU {st['cpu_ratio']:.2f}x; math_answer's verdicts the same as cold on "
              f"{st['math_answer_same_verdicts']} of {got['n']}")
    print(f"    same verdict as math-verify on {got['agree_with_math_verify']} of {got['n']}; "
          f"labelled rows right: math_answer {got['math_answer_right']}, math-verify "
          f"{got['math_verify_right']} of {got['labelled']}")
    print("    per row kind: rows, same verdict as math-verify, right (labelled kinds)")
    for kind, r in got["kinds"].items():
        right = (f", right {r['math_answer_right']} / math-verify {r['math_verify_right']}"
                 if "math_answer_right" in r else "")
        print(f"      {kind:<20}{r['n']:>6} rows, agree {r['agree']}{right}")
    print("    how math_answer grades them (in this process):")
    for source, counts in got["how_graded"].items():
        total = sum(counts.values())
        print(f"      {source:<10}" + "; ".join(f"{k} {v} ({v / total:.0%})"
                                               for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
