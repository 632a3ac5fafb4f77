"""math_answer against math-verify on labelled pairs, and speed on long GSM8K-style output.

    python benchmarks/bench_math.py [--source OWNER/NAME=PATH ...] [--n 4096] [--json]

(a) Agreement with the labels, per category: every pair is graded by ``math_answer`` with
    its defaults (and ``exact_answer`` where it applies) and by math-verify with its
    defaults (``verify(parse(gold), parse(completion))``), and each verdict is checked
    against the pair's label. Then the labelled-correct answers that ``math_answer``
    refuses with a reason (a hedge, a retraction, a negation, ...), by category and
    reason: what its commitment rules cost honest answers; and how many labelled-correct
    real model outputs simpler hedge rules (not used) would refuse. The pairs:
    ``data/math_pairs.jsonl`` (written for this project, hand-checked) and, with
    ``--source``, the public labelled material named in ``math_eval_sources.toml`` read
    from local copies (real GSM8K model solutions with the
    dataset authors' labels, MR-GSM8K model solutions with annotators' labels, and
    Math-Verify's own regression cases). Printed side by side: n, how many are real model
    outputs, right for math_answer, right for math-verify, and where math-verify is right
    how often math_answer is too.
(b) Speed on ``--n`` long GSM8K-style solutions (``gsm8k_style.py``, ~1 KB each, five
    closing styles), all graders in one run: math_answer with defaults through a
    RewardSet (its declared process mode, IPC included), math_answer in-process, TRL's
    ``accuracy_reward`` (``trl.rewards``), math-verify parse + verify, and a hand-written
    "last number equals gold" regex loop. Verdicts are compared with math-verify's where
    math-verify is right. Then the same on short numeric answers (``#### N``).

Needs ``pip install 'rewardkit[math]'`` and, for the TRL column, ``trl``.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gsm8k_style import solutions
from math_eval_pairs import Pair, build, shape

from rewardkit import RewardSet, Sample, get_reward

OWN_PAIRS = Path(__file__).resolve().parent / "data" / "math_pairs.jsonl"


def _math_verify() -> tuple[Any, Any]:
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    return parse, verify


def math_verify_verdict(gold: str, pred: str) -> bool:
    parse, verify = _math_verify()
    try:
        gold_parsed = parse(gold, parsing_timeout=None)
        return bool(verify(gold_parsed, parse(pred, parsing_timeout=None),
                           timeout_seconds=None))
    except Exception:
        return False


def own_pairs() -> list[Pair]:
    rows = [json.loads(line) for line in OWN_PAIRS.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return [Pair("rewardkit math_pairs.jsonl", "own: " + r["style"].split("/")[0], r["gold"],
                 r["pred"], bool(r["truth"]), False) for r in rows]


#: categories where the user states the number format: graded with that parameter set
PARAMS_FOR = {"decimal commas": {"decimal_comma": True}}


def agreement(pairs: list[Pair]) -> dict[str, Any]:
    rewards = {cat: get_reward("math_answer")(params) for cat, params in PARAMS_FOR.items()}
    default = get_reward("math_answer")()
    per: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    misses: list[dict[str, Any]] = []
    refused: dict[tuple[str, str], int] = defaultdict(int)
    for p in pairs:
        reward = rewards.get(p.category, default)
        score = reward.score(Sample(prompt=p.prompt, completion=p.completion,
                                    reference=p.gold))
        ours = score.value == 1.0
        theirs = math_verify_verdict(p.gold, p.completion)
        row = per[p.category]
        row["n"] += 1
        row["model_outputs"] += p.model_output
        row["math_answer_right"] += ours == p.truth
        row["math_verify_right"] += theirs == p.truth
        row["math_verify_right_and_math_answer_too"] += theirs == p.truth and ours == p.truth
        row["errors"] += score.status != "ok"
        if p.truth and not ours and score.reason:  # what a rule costs honest answers
            refused[p.category, score.reason] += 1
        if ours != p.truth and len(misses) < 200:
            misses.append({"category": p.category, "source": p.source, "gold": p.gold,
                           "completion": p.completion[-300:], "truth": p.truth,
                           "math_verify": theirs, "status": score.status,
                           "reason": score.reason})
    totals: dict[str, int] = defaultdict(int)
    for row in per.values():
        for k, v in row.items():
            totals[k] += v
    return {"categories": {k: dict(v) for k, v in sorted(per.items())}, "total": dict(totals),
            "math_answer_misses": misses,
            "correct_refused": [{"category": c, "reason": r, "n": n}
                                for (c, r), n in sorted(refused.items())]}


#: the answer shapes of issue 21, in its order
SHAPES = ("integer", "decimal", "fraction", "radical", "expression", "equation", "interval",
          "set", "tuple", "matrix", "multiple choice", "text")


def by_shape(pairs: list[Pair]) -> dict[str, Any]:
    """Agreement with the labels per answer shape of the gold, on the real model outputs
    to competition problems (GSM8K sources and pairs written for this project left out),
    math_answer and math-verify side by side (both with defaults)."""
    reward = get_reward("math_answer")()
    per: dict[str, dict[str, int]] = {k: defaultdict(int) for k in SHAPES}
    worse: list[dict[str, Any]] = []
    for p in pairs:
        if not p.model_output or "GSM8K" in p.category or "grade-school" in p.source:
            continue
        score = reward.score(Sample(prompt=p.prompt, completion=p.completion, reference=p.gold))
        ours = score.value == 1.0
        theirs = math_verify_verdict(p.gold, p.completion)
        row = per[shape(p.gold)]
        row["n"] += 1
        row["labelled_correct"] += p.truth
        row["math_answer_right"] += ours == p.truth
        row["math_verify_right"] += theirs == p.truth
        row["math_answer_errors"] += score.status != "ok"
        if theirs == p.truth and ours != p.truth:
            row["only_math_verify_right"] += 1
            worse.append({"shape": shape(p.gold), "source": p.source, "gold": p.gold,
                          "completion": p.completion[-200:], "truth": p.truth,
                          "status": score.status, "reason": score.reason})
        elif ours == p.truth and theirs != p.truth:
            row["only_math_answer_right"] += 1
    return {"shapes": {k: dict(v) for k, v in per.items()}, "only_math_verify_right": worse}


def print_shapes(result: dict[str, Any], misses: int = 0) -> None:
    print("(d) agreement per answer shape, real model outputs to competition problems")
    print(f"    {'shape':<17}{'n':>6}{'correct':>9}{'math_answer':>13}{'math-verify':>13}"
          f"{'only ma':>9}{'only mv':>9}{'errors':>8}")
    total: dict[str, int] = defaultdict(int)
    for name in SHAPES:
        r = result["shapes"][name]
        for k, v in r.items():
            total[k] += v
    for name, r in [*result["shapes"].items(), ("ALL", total)]:
        n = r.get("n", 0)
        if not n:
            print(f"    {name:<17}{0:>6}   (no real labelled outputs of this shape)")
            continue
        ma, mv = r.get("math_answer_right", 0) / n, r.get("math_verify_right", 0) / n
        print(f"    {name:<17}{n:>6}{r.get('labelled_correct', 0):>9}{ma:>12.1%} {mv:>12.1%}"
              f"{r.get('only_math_answer_right', 0):>9}{r.get('only_math_verify_right', 0):>9}"
              f"{r.get('math_answer_errors', 0):>8}")
    for m in result["only_math_verify_right"][:misses]:
        print(f"    - [{m['shape']}] gold {m['gold']!r} truth={m['truth']} {m['status']} "
              f"{m['reason']!r}: {m['completion'][-120:]!r}")


def stricter_rules(pairs: list[Pair]) -> list[dict[str, Any]]:
    """What simpler hedge rules would cost honest answers on the real model outputs: how
    many labelled-correct ones each would refuse (math_answer keeps none of them)."""
    from rewardkit.builtin.math import commitment as _commitment
    from rewardkit.builtin.math import extraction as _answers
    from rewardkit.builtin.math import numbers as _plain_numbers

    def numbers(line: str) -> set[Any]:
        read = (_plain_numbers.read_number(t) for t in _answers.NUMBER_TOKEN.findall(line))
        return {n.value for n in read if n is not None}

    def statement_values(text: str) -> set[Any]:
        found = _commitment.final_statements(text, _answers.STATEMENTS, "answer")
        read = (_commitment.read_answer(answer) for _, _, _, answer in found)
        return {v.value for v in read if isinstance(v, _plain_numbers.PlainNumber)}

    rules = {
        "two or more numbers in the last line": lambda lines, text: len(numbers(lines[-1])) > 1,
        "two or more numbers in the line before the last": lambda lines, text:
            len(lines) > 1 and len(numbers(lines[-2])) > 1,
        "a hedge word (or, maybe, ...) in the last line": lambda lines, text:
            _commitment.HEDGE_WORD.search(lines[-1]) is not None,
        "any two final statements with different values": lambda lines, text:
            len(statement_values(text)) > 1,
        "a retraction phrase anywhere, not only after the answer": lambda lines, text:
            _commitment.RETRACTION.search(text) is not None,
    }
    out: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for p in pairs:
        if not p.model_output or not p.truth or p.source.startswith("rewardkit"):
            continue
        source = p.source.split()[0]
        text = _answers.strip_calculator_notes(p.completion)
        lines = [line for line in text.strip().splitlines() if line.strip()] or [""]
        for name, rule in rules.items():
            row = out[source, name]
            row[0] += 1
            row[1] += bool(rule(lines, text))
    return [{"source": s, "rule": r, "correct": n, "refused": k}
            for (s, r), (n, k) in sorted(out.items())]


# -- speed ---------------------------------------------------------------------------------
_LAST_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def regex_loop(golds: list[str], texts: list[str]) -> list[bool]:
    """What people write by hand: the last number of the output equals the gold."""
    out = []
    for gold, text in zip(golds, texts, strict=True):
        found = _LAST_NUMBER.findall(text)
        out.append(bool(found) and found[-1].replace(",", "").rstrip(".") == gold)
    return out


def _timed(fn: Any) -> tuple[Any, float, float]:
    """Result, wall seconds, and CPU seconds of this process (what a shared machine's load
    does not inflate; the RewardSet's workers are not counted, on numeric answers it
    sends them nothing)."""
    cpu, start = time.process_time(), time.perf_counter()
    got = fn()
    return got, time.perf_counter() - start, time.process_time() - cpu


def speed(n: int, label: str, golds: list[str], texts: list[str],
          truth: list[bool]) -> dict[str, Any]:
    samples = [Sample(completion=t, reference=g) for g, t in zip(golds, texts, strict=True)]
    reward = get_reward("math_answer")()
    math_verify_verdict("1", "1")  # imports and warm-up outside the timing
    rs = RewardSet.from_dict({"rewards": {"math": {"reward": "math_answer"}}})
    rs.score(samples[:256])  # start the worker processes
    results: dict[str, tuple[list[bool], float, float]] = {}
    results["math_answer (RewardSet, defaults)"] = _timed(
        lambda: [v == 1.0 for v in rs.score(samples).values("math")])
    results["math_answer (in-process)"] = _timed(
        lambda: [reward.score(s).value == 1.0 for s in samples])
    try:
        from trl.rewards import accuracy_reward

        accuracy_reward([[{"content": "1"}]], ["1"])
        results["TRL accuracy_reward"] = _timed(lambda: [
            v == 1.0 for v in accuracy_reward([[{"content": t}] for t in texts], golds)])
    except ImportError:
        pass
    results["math-verify parse + verify"] = _timed(
        lambda: [math_verify_verdict(g, t) for g, t in zip(golds, texts, strict=True)])
    results["regex loop (last number == gold)"] = _timed(lambda: regex_loop(golds, texts))
    mv = results["math-verify parse + verify"][0]
    ours = results["math_answer (RewardSet, defaults)"][0]
    mv_right = [i for i in range(n) if mv[i] == truth[i]]
    differ = [i for i in mv_right if ours[i] != mv[i]]
    base = results["TRL accuracy_reward"][1] if "TRL accuracy_reward" in results else None
    table = {name: {"rows_per_s": n / secs, "rows_per_cpu_s": n / max(cpu, 1e-9),
                    "right": sum(v[i] == truth[i] for i in range(n)) / n,
                    "vs_trl": (base / secs) if base else None}
             for name, (v, secs, cpu) in results.items()}
    return {"label": label, "n": n, "avg_chars": sum(map(len, texts)) / n, "table": table,
            "math_verify_right": len(mv_right),
            "differs_from_math_verify_where_it_is_right": len(differ),
            "differing_examples": [{"gold": golds[i], "tail": texts[i][-160:]}
                                   for i in differ[:5]]}


def baseline_reward(ref: str) -> Any:
    """math_answer as it was at git ``ref`` (the modules of rewardkit.builtin, imported
    under another package name), for the "no slower than before" comparison."""
    import importlib
    import subprocess
    import tempfile

    root = Path(__file__).resolve().parents[1]
    folder = Path(tempfile.mkdtemp()) / "rewardkit_math_baseline"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", ref, "rewardkit/builtin/"],
                           cwd=root, capture_output=True, text=True, check=True).stdout.split()
    for path in names:  # every module of the package and its math/: math_answer spans several
        name = Path(path).relative_to("rewardkit/builtin")
        if name.suffix != ".py" or str(name) == "__init__.py":
            continue
        source = subprocess.run(["git", "show", f"{ref}:{path}"], cwd=root,
                                capture_output=True, text=True, check=True).stdout
        source = source.replace("rewardkit.builtin.", "rewardkit_math_baseline.").replace(
            "from rewardkit.builtin import", "from rewardkit_math_baseline import")
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(source)
    sys.path.insert(0, str(folder.parent))
    return importlib.import_module("rewardkit_math_baseline.math").math_answer()


def baseline_speed(ref: str, golds: list[str], texts: list[str]) -> dict[str, Any]:
    """In-process rows/s of math_answer now and at ``ref`` on the same answers, alternated
    three times (the machine is shared), best of each."""
    old = baseline_reward(ref)
    new = get_reward("math_answer")()
    samples = [Sample(completion=t, reference=g) for g, t in zip(golds, texts, strict=True)]
    best: dict[str, float] = {"now": 0.0, ref: 0.0}
    verdicts: dict[str, list[Any]] = {}
    for _ in range(3):
        for name, reward in (("now", new), (ref, old)):
            start = time.process_time()
            verdicts[name] = [reward.score(s).value for s in samples]
            best[name] = max(best[name], len(samples) / (time.process_time() - start))
    return {"ref": ref, "rows_per_cpu_s": best, "same_verdicts": verdicts["now"] == verdicts[ref]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", action="append", default=[], metavar="OWNER/NAME=PATH",
                        help="a local copy of a repository named in math_eval_sources.toml")
    parser.add_argument("--n", type=int, default=4096, help="long solutions to time")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--misses", type=int, default=0, help="print this many misses")
    parser.add_argument("--shapes", action="store_true",
                        help="only the agreement per answer shape on the real competition "
                        "outputs of the sources (no speed runs)")
    parser.add_argument("--baseline", metavar="GIT_REF",
                        help="also time math_answer as it was at this commit on the short "
                        "numeric answers (in-process, CPU time)")
    args = parser.parse_args(argv)
    copies = {}
    for spec in args.source:
        repo, _, path = spec.partition("=")
        if not path:
            parser.error(f"--source {spec!r}: expected OWNER/NAME=PATH")
        copies[repo] = Path(path)
    pairs = own_pairs() + (build(copies) if copies else [])
    if args.shapes:
        result = by_shape(pairs)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_shapes(result, args.misses)
        return 0
    agree = agreement(pairs)
    stricter = stricter_rules(pairs)
    long = solutions(args.n, seed=1)
    fast_long = speed(args.n, "long GSM8K-style solutions", [s.gold for s in long],
                      [s.text for s in long], [s.correct for s in long])
    short = solutions(args.n, seed=2)
    short_texts = [f"#### {s.text.rsplit(chr(10), 1)[-1].split()[-1].rstrip('.$}')}"
                   if s.closing == "hashes" else f"#### {s.gold}" for s in short]
    short_truth = [s.correct if s.closing == "hashes" else True for s in short]
    fast_short = speed(args.n, "short numeric answers (#### N)", [s.gold for s in short],
                       short_texts, short_truth)
    base = baseline_speed(args.baseline, [s.gold for s in short], short_texts) \
        if args.baseline else None
    if args.json:
        print(json.dumps({"agreement": agree, "stricter_rules": stricter,
                          "speed": [fast_long, fast_short], "baseline": base}, indent=2))
        return 0
    tot = agree["total"]
    print(f"(a) agreement with the labels on {tot['n']} pairs "
          f"({tot['model_outputs']} real model outputs)")
    print(f"    {'category':<58}{'n':>6}{'real':>6}{'math_answer':>13}{'math-verify':>13}"
          f"{'ma | mv right':>15}")
    rows = [*agree["categories"].items(), ("ALL", tot)]
    for name, r in rows:
        mv_right = r["math_verify_right"]
        both = r["math_verify_right_and_math_answer_too"] / mv_right if mv_right else 1.0
        print(f"    {name[:57]:<58}{r['n']:>6}{r['model_outputs']:>6}"
              f"{r['math_answer_right'] / r['n']:>12.1%} {r['math_verify_right'] / r['n']:>12.1%}"
              f" {both:>13.1%}")
    print(f"    (math_answer with defaults, except {PARAMS_FOR}; math-verify with defaults)")
    refused = agree["correct_refused"]
    print(f"    labelled-correct answers math_answer refuses with a reason (what its rules cost "
          f"honest answers): {sum(r['n'] for r in refused)}")
    for r in refused:
        print(f"      {r['n']:>5}  {r['category'][:50]}: {r['reason']}")
    for m in agree["math_answer_misses"][: args.misses]:
        print(f"    - [{m['category']}] gold {m['gold']!r} truth={m['truth']} "
              f"mv={m['math_verify']} {m['status']} {m['reason']!r}: ...{m['completion'][-120:]!r}")
    if stricter:
        print("    stricter hedge rules math_answer does not use, on the labelled-correct real "
              "model outputs: how many each would refuse")
        for r in stricter:
            print(f"      {r['source'][:28]:<30}{r['rule']:<58}{r['refused']:>5} of "
                  f"{r['correct']}")
    for fast in (fast_long, fast_short):
        print(f"\n(b) speed on {fast['n']} {fast['label']} (avg {fast['avg_chars']:.0f} chars), "
              "all in one run; the machine is shared, compare the ratios")
        print(f"    {'grader':<40}{'rows/s':>10}{'rows/CPU-s':>12}{'right':>9}{'vs TRL':>9}")
        for name, r in fast["table"].items():
            vs = f"{r['vs_trl']:.1f}x" if r["vs_trl"] else "-"
            print(f"    {name:<40}{r['rows_per_s']:>10,.0f}{r['rows_per_cpu_s']:>12,.0f}"
                  f"{r['right']:>9.1%}{vs:>9}")
        print(f"    math_answer differs from math-verify where math-verify is right: "
              f"{fast['differs_from_math_verify_where_it_is_right']} of "
              f"{fast['math_verify_right']}")
        for d in fast["differing_examples"]:
            print(f"      gold {d['gold']}: ...{d['tail']!r}")
    if base:
        rates = base["rows_per_cpu_s"]
        print(f"\n(c) short numeric answers, in-process, rows per CPU second (best of 3): "
              f"now {rates['now']:,.0f}, at {base['ref']} {rates[base['ref']]:,.0f} "
              f"({rates['now'] / rates[base['ref']]:.2f}x); same verdicts: {base['same_verdicts']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
