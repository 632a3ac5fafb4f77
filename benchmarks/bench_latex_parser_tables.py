"""Where the LaTeX parser's time goes on real competition rows, and what saved prediction
tables would buy (issue 42 item 1: why math_answer stays short of 10x math-verify).

    python benchmarks/bench_latex_parser_tables.py --omni COPY --odyssey COPY [--golds 40]

latex2sympy2_extended parses with the ANTLR runtime in pure Python, which predicts every
decision by simulating the grammar's ATN and caches what it learns in DFA tables, one per
decision, shared by every parser of the grammar in the process. This script takes the
texts that math_answer hands that parser while it grades ``bench_math_symbolic.py``'s real
batch (seed 21) and another batch of other golds of the same sources (seed 22), each in a
fresh process, then times the parser alone (CPU, through math_answer's own path: its
filter and SLL first) on the batch's texts, each case in a fresh process:

- ``cold``: as a fresh worker meets them;
- ``again``: the same texts a second time in that process (its tables filled by the first
  pass; math-verify's parse cache emptied);
- ``after other rows``: after the other batch's texts were parsed (untimed), as a worker
  that has graded other rows of the same sources;
- ``tables loaded``: in a fresh process that first loads the tables the other batch's
  texts filled, saved to a file (pickled, the runtime's own objects restored by state
  number), the load timed apart: what tables shipped or saved once per machine would do
  at best (tables built from real rows of the very sources).

Also printed: the parser's prediction time per decision in the cold case. No rewardkit
code changes with this script; the figures explain a missed target, they do not move it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _batches(omni: Path, odyssey: Path, golds: int) -> tuple[list[Any], list[Any]]:
    sys.path.insert(0, str(HERE))
    import bench_math_symbolic as b

    return b.real_batches(omni, odyssey, golds, 21)


def _collect(omni: Path, odyssey: Path, golds: int, which: int) -> list[str]:
    """The texts math_answer hands the parser while grading batch ``which`` (0: the
    batch, 1: the other golds), in order, in this (fresh) process."""
    sys.path.insert(0, str(HERE))
    import bench_math_symbolic as b

    from rewardkit import RewardSet, Sample
    from rewardkit.builtin.math.symbolic import load_math_verify

    rows = _batches(omni, odyssey, golds)[which]
    rs = RewardSet.from_dict({"rewards": {"m": {"reward": "math_answer", "mode": "inline",
                                                 "timeout": None}}})
    rs.score([Sample(completion=f"\\boxed{{{a}}}", reference=g) for g, a in b.WARM_UP])
    wrapper = load_math_verify().parser.parse_latex_cached
    cell = wrapper.__closure__[wrapper.__code__.co_freevars.index("original")]
    original, seen = cell.cell_contents, []

    def recording(latex: str) -> Any:
        seen.append(latex)
        return original(latex)

    cell.cell_contents = recording
    rs.score([Sample(completion=r.completion, reference=r.gold) for r in rows])
    cell.cell_contents = original
    return list(dict.fromkeys(seen))


def _grammar() -> tuple[Any, Any]:
    from latex2sympy2_extended.antlr_parser import PSLexer, PSParser

    return PSParser, PSLexer


def _singletons() -> dict[str, Any]:
    from antlr4.atn.ATNSimulator import ATNSimulator
    from antlr4.atn.LexerATNSimulator import LexerATNSimulator
    from antlr4.atn.SemanticContext import SemanticContext
    from antlr4.PredictionContext import PredictionContext

    return {"none": SemanticContext.NONE, "error": ATNSimulator.ERROR,
            "lexer-error": LexerATNSimulator.ERROR, "empty": PredictionContext.EMPTY}


def _dump_tables() -> bytes:
    from antlr4.atn.ATNState import ATNState

    parser, lexer = _grammar()
    names = {id(v): k for k, v in _singletons().items()}

    class Saver(pickle.Pickler):
        def persistent_id(self, obj: Any) -> Any:
            if isinstance(obj, ATNState):
                return ("p" if obj.atn is parser.atn else "l", obj.stateNumber)
            return ("k", names[id(obj)]) if id(obj) in names else None

    buf = io.BytesIO()
    Saver(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(
        [[(d._states, d.s0) for d in g.decisionsToDFA] for g in (parser, lexer)])
    return buf.getvalue()


def _load_tables(data: bytes) -> None:
    parser, lexer = _grammar()
    singletons = _singletons()

    class Loader(pickle.Unpickler):
        def persistent_load(self, pid: Any) -> Any:
            which, ref = pid
            if which == "k":
                return singletons[ref]
            return (parser.atn if which == "p" else lexer.atn).states[ref]

    tables = Loader(io.BytesIO(data)).load()
    for grammar, saved in zip((parser, lexer), tables, strict=True):
        for dfa, (states, s0) in zip(grammar.decisionsToDFA, saved, strict=True):
            dfa._states, dfa.s0 = states, s0


def _parse_all(texts: list[str]) -> tuple[float, list[str]]:
    """CPU seconds to parse ``texts`` as math_answer's calls do, and each outcome."""
    import sympy

    from rewardkit.builtin.math.latex_reader import reading_fast
    from rewardkit.builtin.math.symbolic import load_math_verify

    parse = load_math_verify().parser.parse_latex_cached
    parse.cache_clear()
    out = []
    start = time.process_time()
    with reading_fast():
        for text in texts:
            try:
                out.append(sympy.srepr(parse(text)))
            except Exception as exc:  # (the parser's own exceptions)
                out.append(type(exc).__name__)
    return time.process_time() - start, out


def _case(case: str, texts_file: str, tables_file: str) -> dict[str, Any]:
    """One case in this (fresh) process."""
    from rewardkit.builtin.math.symbolic import load_math_verify

    load_math_verify()
    texts = json.loads(Path(texts_file).read_text())
    _parse_all(["1+1", "x^{2}"])  # imports and first calls, outside every timing
    got: dict[str, Any] = {"case": case}
    if case == "after other rows":
        _parse_all(texts["other"])
    if case == "save tables":
        _parse_all(texts["other"])
        start = time.process_time()
        data = _dump_tables()
        got["dump_s"] = time.process_time() - start
        Path(tables_file).write_bytes(data)
        got["bytes"] = len(data)
        return got
    if case == "tables loaded":
        start = time.process_time()
        _load_tables(Path(tables_file).read_bytes())
        got["load_s"] = time.process_time() - start
    decisions: defaultdict[int, float] = defaultdict(float)
    if case == "cold":
        from antlr4.atn.ParserATNSimulator import ParserATNSimulator

        predict, depth = ParserATNSimulator.adaptivePredict, [0]

        def timed(self: Any, stream: Any, decision: int, outer: Any) -> Any:
            if depth[0]:
                return predict(self, stream, decision, outer)
            depth[0] += 1
            began = time.process_time()
            try:
                return predict(self, stream, decision, outer)
            finally:
                depth[0] -= 1
                decisions[decision] += time.process_time() - began

        ParserATNSimulator.adaptivePredict = timed
    got["cpu_s"], got["outcomes"] = _parse_all(texts["batch"])
    if case == "cold":
        ParserATNSimulator.adaptivePredict = predict
        parser, _ = _grammar()
        got["prediction_s"] = sum(decisions.values())
        got["decisions"] = [
            (d, parser.ruleNames[parser.atn.decisionToState[d].ruleIndex], s)
            for d, s in sorted(decisions.items(), key=lambda item: -item[1])[:5]]
        got["again_cpu_s"], again = _parse_all(texts["batch"])
        got["again_same"] = again == got["outcomes"]
    return got


def _child(*args: str) -> Any:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          check=False, timeout=1800)
    if proc.returncode:
        raise SystemExit(f"{args[0]} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--omni", type=Path, required=True)
    parser.add_argument("--odyssey", type=Path, required=True)
    parser.add_argument("--golds", type=int, default=40)
    parser.add_argument("--collect", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--files", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.collect is not None:
        print(json.dumps(_collect(args.omni, args.odyssey, args.golds, args.collect)))
        return 0
    if args.case:
        print(json.dumps(_case(args.case, *args.files)))
        return 0
    common = ["--omni", str(args.omni), "--odyssey", str(args.odyssey),
              "--golds", str(args.golds)]
    texts = {"batch": _child(*common, "--collect", "0"),
             "other": _child(*common, "--collect", "1")}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        files = [str(Path(tmp) / "texts.json"), str(Path(tmp) / "tables.pickle")]
        Path(files[0]).write_text(json.dumps(texts))
        runs = {case: _child(*common, "--case", case, "--files", *files)
                for case in ("cold", "after other rows", "save tables", "tables loaded")}
    cold, other, saved, loaded = (runs[c] for c in (
        "cold", "after other rows", "save tables", "tables loaded"))
    print(f"texts math_answer hands the parser: batch {len(texts['batch'])} "
          f"(seed 21, {args.golds} golds of each source), other golds {len(texts['other'])} "
          f"(seed 22); load average {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"  cold (a fresh process)                  {cold['cpu_s']:6.2f} s CPU; prediction "
          f"{cold['prediction_s']:.2f} s, by decision: " + ", ".join(
              f"{d} ({rule}) {s:.2f} s" for d, rule, s in cold["decisions"]))
    print(f"  again (same process, tables filled)     {cold['again_cpu_s']:6.2f} s CPU; "
          f"same outcomes: {cold['again_same']}")
    print(f"  after the other golds' texts            {other['cpu_s']:6.2f} s CPU; same "
          f"outcomes: {other['outcomes'] == cold['outcomes']}")
    print(f"  tables of the other golds, loaded       {loaded['cpu_s']:6.2f} s CPU + "
          f"{loaded['load_s']:.2f} s to load them ({saved['bytes'] / 1e6:.1f} MB, saved in "
          f"{saved['dump_s']:.2f} s); same outcomes: {loaded['outcomes'] == cold['outcomes']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
