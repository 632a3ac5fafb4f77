"""tool_call_match against the Berkeley Function Calling Leaderboard's own AST checker.

    python benchmarks/bench_bfcl.py DATA [--limit N] [--json]

``DATA``: the ``bfcl_eval/data`` folder of an installed ``bfcl-eval`` (PyPI; install it
into a scratch virtual environment with ``pip install --no-deps bfcl-eval``: its checker
needs none of its dependencies, and its model handlers, which need all of them, are not
loaded). Nothing of it is committed here. For the non-live categories (simple, multiple,
parallel, parallel_multiple), every question's possible answers give correct outputs
(each argument's first allowed value; the last allowed value with the optional
arguments given; parallel calls reversed; an integer where a float is declared; texts in
upper case) and broken ones made by mutating the first (another function name, a
required argument dropped, a wrong value, a wrong type, a value one step off in the last
argument, an unexpected argument, a call repeated, a garbage call appended, a call
dropped, no call). Each output is graded by BFCL's ``ast_checker``
(imported from the package, Python language) and by ``tool_call_match`` (through
rewardkit, the output as an OpenAI tool-call message and the functions as the ``tools``
column); the benchmark reports, per category and per kind (correct / broken), how many
each accepts and how often they agree, with the disagreements listed.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
import types
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rewardkit import RewardSet

#: category -> (its question file, the language its argument values are written in)
CATEGORIES = {
    "simple": ("BFCL_v4_simple_python.json", "python"),
    "multiple": ("BFCL_v4_multiple.json", "python"),
    "parallel": ("BFCL_v4_parallel.json", "python"),
    "parallel_multiple": ("BFCL_v4_parallel_multiple.json", "python"),
    "simple_java": ("BFCL_v4_simple_java.json", "java"),
    "simple_javascript": ("BFCL_v4_simple_javascript.json", "javascript"),
}
Output = list[dict[str, dict[str, Any]]]


def load_checker(data: Path) -> Callable[..., dict[str, Any]]:
    """BFCL's ``ast_checker`` from the package that holds ``data``, its model registry
    replaced by one entry that keeps dots in function names (the registry imports every
    vendor SDK and is read only to rename functions for APIs that refuse dots)."""
    sys.path.insert(0, str(data.resolve().parent.parent))
    registry = types.ModuleType("bfcl_eval.constants.model_config")

    class KeepDots:
        underscore_to_dot = False

    registry.MODEL_CONFIG_MAPPING = {"rewardkit": KeepDots()}  # type: ignore[attr-defined]
    sys.modules["bfcl_eval.constants.model_config"] = registry
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    languages = {"python": Language.PYTHON, "java": Language.JAVA,
                 "javascript": Language.JAVASCRIPT}

    def check(functions: list[dict[str, Any]], output: Output, answer: list[Any],
              category: str, language: str) -> dict[str, Any]:
        return ast_checker(functions, output, answer, languages[language], category,
                           "rewardkit")

    return check


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def _first(allowed: list[Any]) -> tuple[bool, Any]:
    if allowed and allowed[0] == "":
        return False, None
    return True, _concrete(allowed[0])


def _concrete(value: Any) -> Any:
    """An allowed value as a model writes it: BFCL writes an object's allowed values as
    key -> list of allowed values (``""`` = may be left out); take each key's first."""
    if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        return {k: _concrete(v[0]) for k, v in value.items() if v and v[0] != ""}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_concrete(v) for v in value]
    return value


def correct_outputs(answer: list[dict[str, Any]], functions: list[dict[str, Any]]
                    ) -> Iterator[tuple[str, Output]]:
    """Outputs the possible answers accept, each with the name of its construction."""
    first: Output = []
    last: Output = []
    for call in answer:
        name, params = next(iter(call.items()))
        args_first: dict[str, Any] = {}
        args_last: dict[str, Any] = {}
        for key, allowed in params.items():
            keep, value = _first(allowed)
            if keep:
                args_first[key] = value
            given = [a for a in allowed if a != ""]
            if given:
                args_last[key] = _concrete(given[-1])
        first.append({name: args_first})
        last.append({name: args_last})
    yield "first allowed values", first
    yield "last allowed values, optional given", last
    if len(first) > 1:
        yield "parallel calls reversed", first[::-1]
    floats = _map_args(first, functions, ("float",),
                       lambda v: int(v) if isinstance(v, float) and v.is_integer() else v)
    if floats != first:
        yield "integer for a float", floats
    upper = _map_args(first, functions, ("string", "String"),
                      lambda v: v.upper() if isinstance(v, str) else v)
    if upper != first:
        yield "texts in upper case", upper


def _schema_type(functions: list[dict[str, Any]], name: str, key: str) -> str | None:
    for f in functions:
        if f["name"] == name:
            return f["parameters"]["properties"].get(key, {}).get("type")
    return None


def _map_args(output: Output, functions: list[dict[str, Any]], type_names: tuple[str, ...],
              change: Callable[[Any], Any]) -> Output:
    changed = copy.deepcopy(output)
    for call in changed:
        name, args = next(iter(call.items()))
        for key in args:
            if _schema_type(functions, name, key) in type_names:
                args[key] = change(args[key])
    return changed


def _wrong(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 7
    if isinstance(value, str):
        return value + " elsewhere"
    if isinstance(value, list):
        return [*value, value[0] if value else "extra"]
    if isinstance(value, dict):
        return {**value, "unexpected_key": 1}
    return "wrong"


def _near(value: Any) -> Any:
    """A value one step from ``value``: what a model that almost got it writes."""
    if isinstance(value, bool):
        return int(value)  # 1 for true: a number where a boolean is declared
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 1.01 if value else 0.01
    if isinstance(value, str):
        return value[:-1] if len(value) > 1 else value + "x"
    if isinstance(value, list):
        return value[:-1] if value else [0]
    return _wrong(value)


def _wrong_type(value: Any) -> Any:
    if isinstance(value, str):
        return [value]
    return json.dumps(value)


def broken_outputs(first: Output, functions: list[dict[str, Any]]
                   ) -> Iterator[tuple[str, Output]]:
    """Mutations of a correct output that no possible answer should accept."""
    name, args = next(iter(first[0].items()))
    rest = first[1:]
    yield "another function name", [{name + "_v2": args}, *rest]
    schema = next(f for f in functions if f["name"] == name)["parameters"]
    required = [k for k in schema.get("required", []) if k in args]
    if required:
        dropped = {k: v for k, v in args.items() if k != required[0]}
        yield "a required argument dropped", [{name: dropped}, *rest]
    if args:
        key = next(iter(args))
        yield "a wrong value", [{name: {**args, key: _wrong(args[key])}}, *rest]
        yield "a wrong type", [{name: {**args, key: _wrong_type(args[key])}}, *rest]
        last = list(args)[-1]
        yield "a near value in the last argument", [{name: {**args, last: _near(args[last])}},
                                                    *rest]
    yield "an unexpected argument", [{name: {**args, "unexpected_arg": 1}}, *rest]
    yield "a garbage call appended", [*first, {name: {"garbage": "}}{{"}}]
    yield "a call repeated", [*first, first[0]]
    if len(first) > 1:
        yield "a call dropped", first[:-1]
    yield "no call", []


#: Java's name for an element type in ``new T[]{...}``
_JAVA_ELEMENT = {"integer": "int", "long": "long", "short": "short", "byte": "byte",
                 "float": "float", "double": "double", "boolean": "boolean", "char": "char",
                 "String": "String", "any": "Object"}


def _java_source(value: Any, type_name: str | None, item: str | None = None) -> Any:
    """``value`` as a model writes a Java argument of ``type_name`` (texts as they are:
    BFCL's possible answers hold variables and expressions as text)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and type_name in ("float", "double"):
        return f"{float(value)!r}f" if type_name == "float" else repr(float(value))
    if isinstance(value, int):
        return f"{value}L" if type_name == "long" else str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list) and type_name in ("Array", "ArrayList"):
        items = ", ".join(_java_element(v, item) for v in value)
        if type_name == "Array":
            return f"new {_JAVA_ELEMENT.get(item or 'any', 'Object')}[]{{{items}}}"
        return f"new ArrayList<>(Arrays.asList({items}))" if value else "new ArrayList<>()"
    if isinstance(value, dict) and type_name == "HashMap":
        puts = " ".join(f'put("{k}", {_java_element(v, None)});' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    return json.dumps(value)  # a value of another shape: JSON text


def _java_element(value: Any, item: str | None) -> str:
    if isinstance(value, str):
        return f"'{value}'" if item == "char" else json.dumps(value)
    return str(_java_source(value, item))


def _js_source(value: Any, type_name: str | None) -> Any:
    """``value`` as a model writes a JavaScript argument of ``type_name``."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and type_name == "Bigint":
        return f"{value}n"
    if isinstance(value, int | float) and type_name == "float":
        return repr(float(value))
    if isinstance(value, int | float):
        return repr(value)
    return _js_literal(value)


def _js_literal(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_js_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_literal(v)}" for k, v in value.items()) + "}"
    return str(_js_source(value, None))


def as_source(output: Output, functions: list[dict[str, Any]], language: str) -> Output:
    """An output with every argument written as ``language`` source text, as BFCL's Java
    and JavaScript categories expect (each value a string, read by its declared type)."""
    if language == "python":
        return output
    written: Output = []
    for call in output:
        name, args = next(iter(call.items()))
        schema = next((f for f in functions if f["name"] == name), None)
        properties = schema["parameters"]["properties"] if schema else {}
        source = {}
        for key, value in args.items():
            declared = properties.get(key, {})
            item = (declared.get("items") or {}).get("type")
            source[key] = (_java_source(value, declared.get("type"), item)
                           if language == "java" else _js_source(value, declared.get("type")))
        written.append({name: source})
    return written


def as_sample(output: Output, functions: list[dict[str, Any]], answer: list[Any]
              ) -> dict[str, Any]:
    calls = [{"id": f"call_{i}", "type": "function",
              "function": {"name": name, "arguments": json.dumps(args)}}
             for i, call in enumerate(output) for name, args in call.items()]
    return {"prompt": "", "completion": [{"role": "assistant", "content": "",
                                          "tool_calls": calls}],
            "tools": [{"type": "function", "function": f} for f in functions],
            "reference": answer}


def run(data: Path, limit: int | None, texts: str = "bfcl",
        language: str = "category") -> dict[str, Any]:
    """Grade every category's outputs with BFCL's checker and ours; ``language``: the
    ``tool_call_match`` param (``category``: the category's own, as BFCL is told)."""
    check = load_checker(data)
    report: dict[str, Any] = {"categories": {}, "disagreements": []}
    seconds = 0.0
    for category, (file_name, written_in) in CATEGORIES.items():
        questions = read_jsonl(data / file_name)[:limit]
        answers = {row["id"]: row["ground_truth"]
                   for row in read_jsonl(data / "possible_answer" / file_name)}
        ours_language = written_in if language == "category" else language
        rs = RewardSet.from_dict({"rewards": {"match": {
            "reward": "tool_call_match",
            "params": {"texts": texts, "language": ours_language}}}})
        rows: list[tuple[str, str, str, bool, dict[str, Any]]] = []
        raised = 0
        for q in questions:
            functions, answer = q["function"], answers[q["id"]]
            variants = [("correct", how, out) for how, out in correct_outputs(answer, functions)]
            first = variants[0][2]
            variants += [("broken", how, out) for how, out in broken_outputs(first, functions)]
            for kind, how, out in variants:
                out = as_source(out, functions, written_in)
                try:
                    verdict = bool(check(functions, out, answer, category, written_in)["valid"])
                except Exception:  # the checker fails on a shape it never expects
                    raised += 1
                    continue
                rows.append((kind, how, q["id"], verdict, as_sample(out, functions, answer)))
        t0 = time.perf_counter()
        result = rs.score([r[4] for r in rows])
        seconds += time.perf_counter() - t0
        scores = result.scores("match")
        ours = [s.value == 1.0 for s in scores]
        stats: dict[str, Any] = {"questions": len(questions), "checker_raised": raised,
                                 "language": ours_language}
        for kind in ("correct", "broken"):
            picked = [(r, o, s) for r, o, s in zip(rows, ours, scores, strict=True)
                      if r[0] == kind]
            agree = sum(r[3] == o for r, o, _ in picked)
            stats[kind] = {"outputs": len(picked), "bfcl_accepts": sum(r[3] for r, _, _ in picked),
                           "ours_accepts": sum(o for _, o, _ in picked),
                           "ours_errors": sum(s.value is None for _, _, s in picked),
                           "agree": agree,
                           "agreement": agree / len(picked) if picked else 1.0}
            by_how = Counter(r[1] for r, o, _ in picked if r[3] != o)
            stats[kind]["disagree_by_construction"] = dict(by_how)
        for (kind, how, qid, verdict, _), o, score in zip(rows, ours, scores, strict=True):
            if verdict != o:
                report["disagreements"].append({"id": qid, "kind": kind, "how": how,
                                                "bfcl": verdict, "ours": o,
                                                "status": score.status.value,
                                                "reason": score.reason})
        report["categories"][category] = stats
    report["score_seconds"] = seconds
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="the bfcl_eval/data folder of bfcl-eval")
    parser.add_argument("--limit", type=int, help="questions per category (default: all)")
    parser.add_argument("--texts", default="bfcl", choices=["bfcl", "spaces", "exact"],
                        help="tool_call_match's text rule (default: BFCL's own)")
    parser.add_argument("--language", default="category",
                        choices=["category", "auto", "python", "java", "javascript"],
                        help="tool_call_match's language param (default: each category's "
                        "own, as BFCL's checker is told; python: every value read as "
                        "JSON, the reward before issue 36)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args()
    simple = CATEGORIES["simple"][0]
    if not (args.data / simple).is_file():
        sys.exit(f"{args.data}: no {simple}; pass the bfcl_eval/data folder "
                 "of an installed bfcl-eval")
    report = run(args.data, args.limit, args.texts, args.language)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{'category':<18} {'kind':<8} {'outputs':>7} {'BFCL ok':>7} {'ours ok':>7} "
          f"{'errors':>6} {'agree':>7}")
    for category, stats in report["categories"].items():
        for kind in ("correct", "broken"):
            s = stats[kind]
            print(f"{category:<18} {kind:<8} {s['outputs']:>7} {s['bfcl_accepts']:>7} "
                  f"{s['ours_accepts']:>7} {s['ours_errors']:>6} {s['agreement']:>7.1%}")
    print(f"disagreements: {len(report['disagreements'])}; scoring took "
          f"{report['score_seconds']:.2f} s")
    for row in report["disagreements"][:20]:
        print(f"  {row['id']} {row['kind']} ({row['how']}): BFCL {row['bfcl']}, ours "
              f"{row['ours']} ({row['status']}): {row['reason'][:160]}")


if __name__ == "__main__":
    main()
