"""Labelled (gold, completion) pairs for the math-correctness benchmark, built from local
copies of the public sources named in ``math_eval_sources.toml``.

Nothing of those sources is stored in this repository: each file is read from the copy
the user points at (a git clone, a bare mirror, or a folder holding the files at their
paths), checked against the manifest's commit and SHA-256, and turned into pairs in
memory. Every pair says where it comes from, which category of answer it exercises, and
whether it is a real model output.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MANIFEST = Path(__file__).resolve().parent / "math_eval_sources.toml"


@dataclass(frozen=True)
class Pair:
    source: str
    category: str
    gold: str
    completion: str
    truth: bool
    model_output: bool
    prompt: str = ""


class SourceError(Exception):
    """A source copy is missing, at another commit, or altered."""


def manifest() -> list[dict]:
    return tomllib.loads(MANIFEST.read_text(encoding="utf-8"))["source"]


def _read(copy: Path, commit: str, path: str) -> bytes:
    """``path`` at ``commit`` from a git clone / mirror, else from a plain folder."""
    git_dir = copy / ".git" if (copy / ".git").exists() else copy
    if (git_dir / "HEAD").exists() and (git_dir / "objects").exists():
        done = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
                              capture_output=True, check=False)
        if done.returncode != 0:
            raise SourceError(f"{copy}: cannot read {path} at {commit[:12]}: "
                              f"{done.stderr.decode(errors='replace').strip()}")
        return done.stdout
    file = copy / path
    if not file.is_file():
        raise SourceError(f"{copy}: no file {path}")
    return file.read_bytes()


def load_files(copies: dict[str, Path]) -> dict[tuple[str, str], bytes]:
    """Every manifest file of the repositories in ``copies``, checksums verified."""
    out = {}
    for source in manifest():
        repo = source["repository"]
        if repo not in copies:
            continue
        for entry in source["files"]:
            data = _read(copies[repo], source["commit"], entry["path"])
            digest = hashlib.sha256(data).hexdigest()
            if digest != entry["sha256"]:
                raise SourceError(f"{repo}:{entry['path']} has SHA-256 {digest[:16]}..., the "
                                  f"manifest names {entry['sha256'][:16]}...: another version")
            out[(repo, entry["path"])] = data
    return out


def build(copies: dict[str, Path]) -> list[Pair]:
    files = load_files(copies)
    pairs: list[Pair] = []
    for (repo, path), data in files.items():
        if path.endswith("example_model_solutions.jsonl"):
            pairs += _gsm8k_model_solutions(repo, data)
        elif path.endswith("data/test.jsonl"):
            pairs += _gsm8k_references(repo, data)
        elif "gpt4-grading" in path:
            pairs += _mr_gsm8k(repo, path, data)
        elif path.startswith("tests/"):
            pairs += _math_verify_cases(repo, path, data)
        elif path.endswith("HardVerify-Math.json"):
            pairs += _hardverify(repo, data)
        elif path.endswith("math_result.json"):
            pairs += _mmlu_pro(repo, data)
    return _dedupe(pairs)


def _dedupe(pairs: list[Pair]) -> list[Pair]:
    seen: set[tuple[str, str]] = set()
    out = []
    for p in pairs:
        if (p.gold, p.completion) not in seen:
            seen.add((p.gold, p.completion))
            out.append(p)
    return out


_A_LINE = re.compile(r"^A:\s*(.+?)\s*$", re.MULTILINE)


def _gsm8k_model_solutions(repo: str, data: bytes) -> Iterator[Pair]:
    for line in data.decode("utf-8").splitlines():
        row = json.loads(line)
        gold = _A_LINE.findall(row["ground_truth"])[-1].replace(",", "")
        for value in row.values():
            if isinstance(value, dict) and "solution" in value:
                yield Pair(f"{repo} model solutions", "GSM8K model solutions (A: N, <<>> notes)",
                           gold, value["solution"], bool(value["is_correct"]), True)


def _gsm8k_references(repo: str, data: bytes) -> Iterator[Pair]:
    rows = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    golds = [r["answer"].rsplit("####", 1)[1].strip().replace(",", "") for r in rows]
    for i, row in enumerate(rows):
        cat = "GSM8K reference solutions (#### N, <<>> notes)"
        yield Pair(f"{repo} test", cat, golds[i], row["answer"], True, False)
        other = golds[(i + 1) % len(rows)]
        if other != golds[i]:
            yield Pair(f"{repo} test", cat, other, row["answer"], False, False)


def _mr_gsm8k(repo: str, path: str, data: bytes) -> Iterator[Pair]:
    for row in json.loads(data):
        if row.get("question_type") == "POT":
            continue
        if not re.fullmatch(r"-?[\d,]*\.?\d+", str(row["ground_truth_answer"]).strip()):
            continue  # a few reversed questions carry a sentence as their answer
        yield Pair(f"{repo} {Path(path).name}",
                   "MR-GSM8K model solutions (Step n, ####, The answer is)",
                   str(row["ground_truth_answer"]), "\n".join(row["model_output_steps"]),
                   row["model_output_answer_correctness"] == "correct", True)


#: test functions whose expectation holds only under a non-default setting
_SKIP = {"test_strict_variable_comparison", "test_set_rel_assymetry", "test_float_precision",
         "test_precision"}
_REAL_OUTPUTS = {"test_open_thoughts.py", "test_numina_cases.py", "test_boxed.py"}


def _math_verify_cases(repo: str, path: str, data: bytes) -> Iterator[Pair]:
    tree = ast.parse(data.decode("utf-8"))
    name = Path(path).name
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or node.name in _SKIP:
            continue
        for deco in node.decorator_list:
            if not (isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "parametrize"):
                continue
            try:
                cases = ast.literal_eval(deco.args[1])
            except ValueError:
                continue
            for case in cases:
                gold, pred, expected = case[0], case[1], case[2]
                if name == "test_boxed.py":  # there the model output stands first
                    gold, pred = pred, gold
                yield Pair(f"{repo} {name}::{node.name}", categorise(gold, pred, node.name),
                           gold, pred, bool(expected), name in _REAL_OUTPUTS)


def categorise(gold: str, pred: str, test: str) -> str:
    """The kind of answer a LaTeX pair exercises (the categories of the issue first)."""
    g_inner = gold.strip().strip("$").strip()
    if re.search(r"(?<!\$)\$\s*\n|\\\(\s*\n", pred):
        return "negative: math span split over lines"
    if re.search(r"[A-Za-z]\d+[A-Za-z]", pred) and re.fullmatch(r"[\d.]+", g_inner):
        return "negative: number glued into a word"
    if max(gold.count("boxed"), pred.count("boxed")) >= 2:
        return "several \\boxed forming the answer"
    if re.search(r"pmatrix|bmatrix|\\begin\{array\}", gold + pred):
        return "matrices (pmatrix, bmatrix, array)"
    if "\\$" in pred:
        return "\\$ inside a math span"
    if re.search(r",\\!|\d \d{3}\b", gold + pred):
        return "thin-space / space thousands"
    if test == "test_number_extraction" and any(
            re.search(r"\d,\d{1,2}(?!\d)|\d,\d{4,}|^0,\d", t) for t in (gold, pred)):
        return "decimal commas"
    if re.fullmatch(r"(?:\\text\{[^{}]*\}|[A-Za-z]+)", g_inner):
        return "word answers (\\text{odd}, Even)"
    if len(gold) < 80 and re.search(r"\d\s*\\text(?:bf)?\{\s*[a-z]|\d\s*(?:cm|m²|€|yuan)",
                                   gold + pred):
        return "number + unit"
    if "=" in g_inner or (re.search(r"(?<![<>])=", pred) and len(pred) < 80):
        return "equations and solution lists"
    if re.search(r"%|percent|pct", gold + pred):
        return "percent"
    if re.search(r"\\\{|\[|\(", g_inner) and "," in g_inner:
        return "tuples, sets, intervals"
    if len(pred) > 200 or re.search(r"[Aa]nswer", pred):
        return "answers in prose / long solutions"
    return "LaTeX expressions and numbers"


def _hardverify(repo: str, data: bytes) -> Iterator[Pair]:
    """TinyV's HardVerify-Math: per problem, a correct answer rule-based verifiers miss
    and a wrong one, both boxed as the model wrote them, the problem as the prompt."""
    for row in json.loads(data):
        gold = row["ground_truth"]
        for key, truth in (("fn_output", True), ("tn_output", False)):
            answer = str(row[key]).strip()
            yield Pair(f"{repo} HardVerify-Math {row['source']}", f"HardVerify-Math: {shape(gold)}",
                       gold, f"The final answer is $\\boxed{{{answer}}}$", truth, True,
                       row.get("question", ""))


def _mmlu_pro(repo: str, data: bytes) -> Iterator[Pair]:
    """MMLU-Pro's recorded GPT-4o answers: the prompt lists the options (``A. ...``
    lines, as MMLU-Pro writes them), the label is MMLU-Pro's own reading; rows it could
    not read are left out."""
    for row in json.loads(data):
        if row.get("pred") is None:
            continue
        options = ast.literal_eval(row["options"]) if isinstance(row["options"], str) \
            else row["options"]
        listed = "\n".join(f"{'ABCDEFGHIJ'[i]}. {o}" for i, o in enumerate(options[:10]))
        yield Pair(f"{repo} gpt4o math", "MMLU-Pro math, GPT-4o (ten options)",
                   row["answer"], row["response"], row["pred"] == row["answer"], True,
                   f"Question: {row['question']}\nOptions:\n{listed}")


_CHOICE_GOLD = re.compile(r"\s*\(?([A-J])\)?\s*")
_TEXT_WORDS = re.compile(r"\\(?:text|mbox|textbf|mathrm)\s*\{[^{}]*[A-Za-z]{3,}[^{}]*\}")


def shape(gold: str) -> str:
    """The shape of a gold answer, in the categories of issue 21: integer, decimal,
    fraction, radical, expression, equation, interval, set, tuple, matrix, multiple
    choice, text."""
    g = gold.strip().strip("$").strip()
    g = re.sub(r"^\\boxed\s*\{(.*)\}$", r"\1", g).strip()
    bare = re.sub(r"\\(?:text|mbox|mathrm)\s*\{\s*\}|\\[,;!]|\\quad|\s", "", g)
    if _CHOICE_GOLD.fullmatch(g) or re.fullmatch(r"\\text(?:bf)?\{\(?[A-J]\)?\}", bare):
        return "multiple choice"
    if re.search(r"pmatrix|bmatrix|\\begin\{array\}|\[[^\[\]]*;[^\[\]]*\]", g):
        return "matrix"
    number = re.sub(r"\\(?:text|mbox|mathrm)\s*\{[^{}]*\}|\^\{?\\circ\}?|\\%", "", bare)
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+|-?\d+", number):
        return "integer"
    if re.fullmatch(r"-?\d*\.\d+%?|-?\d+%", number):
        return "decimal"
    if re.search(r"[A-Za-z]{3,}\s+[A-Za-z]{2,}", re.sub(r"\\[A-Za-z]+", " ", g)) or (
            _TEXT_WORDS.search(g) and not re.search(r"\d", g)) or re.fullmatch(
            r"[A-Za-z]{2,}", bare):
        return "text"
    half_open = re.fullmatch(r"[(\[][^,()\[\]]+,[^,()\[\]]+[)\]]", bare) is not None \
        and bare[0] + bare[-1] in ("(]", "[)", "[]")
    if re.search(r"\\cup|\\infty|\\cap|<|>|\\[lg]eq?(?![a-z])", g) or half_open:
        return "interval"
    if "\\{" in g:
        return "set"
    if "," in bare:
        return "tuple"
    if "=" in g:
        return "equation"
    if re.search(r"\\sqrt|√", g):
        return "radical"
    if re.fullmatch(r"-?(?:\\[dt]?frac\{-?\d+\}\{\d+\}|\d+/\d+)", bare):
        return "fraction"
    return "expression"
