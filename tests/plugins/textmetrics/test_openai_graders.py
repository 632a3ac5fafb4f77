"""``rewardkit import openai-graders``: each grader type of OpenAI's graders (examples
written here in the shape of the graders guide's), imported, loaded by RewardSet and scored
on rows whose expected values are computed independently (Python's own string operations,
rapidfuzz, sacrebleu, nltk and rouge-score called directly, the grader's own ``grade``
function called in this process); the judge graders against a loopback chat endpoint; and
every piece without a faithful counterpart refused by name (exit 2, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rewardkit import RewardSet
from rewardkit.importers.openai_graders import GraderImportError, import_graders

pytest.importorskip("rewardkit_textmetrics")

ROOT = Path(__file__).resolve().parents[3]
OUTPUT = "{{sample.output_text}}"


def string_check(op: str, reference: str = "{{item.answer}}", inp: str = OUTPUT,
                 name: str = "check") -> dict[str, Any]:
    return {"type": "string_check", "name": name, "input": inp, "reference": reference,
            "operation": op}


def similarity(metric: str, reference: str = "{{item.answer}}") -> dict[str, Any]:
    return {"type": "text_similarity", "name": f"sim {metric}", "input": OUTPUT,
            "reference": reference, "evaluation_metric": metric}


def scored(grader: dict[str, Any], rows: list[dict[str, Any]],
           **options: Any) -> tuple[dict[str, Any], Any]:
    config, _ = import_graders(grader, **options)
    reward_set = RewardSet.from_dict(config, "imported")
    return config, reward_set.score(rows)


# -- string_check ----------------------------------------------------------------------------

ANSWERS = ["Paris", "paris", "The capital is Paris.", "Lyon", " Paris", ""]


@pytest.mark.parametrize("op", ["eq", "ne", "like", "ilike"])
def test_string_check_operations_pay_what_pythons_string_operations_say(op: str) -> None:
    expected = {"eq": lambda a, r: a == r, "ne": lambda a, r: a != r,
                "like": lambda a, r: r in a, "ilike": lambda a, r: r.lower() in a.lower()}[op]
    rows = [{"prompt": "Capital of France?", "completion": a, "answer": "Paris"}
            for a in ANSWERS]
    config, result = scored(string_check(op), rows)
    assert config["rewards"]["check"]["reward"] == "string_match"
    assert result.values("check") == [float(expected(a, "Paris")) for a in ANSWERS]
    assert result.totals == result.values("check")


def test_string_check_on_a_json_field_of_the_output_runs_as_python_in_the_sandbox() -> None:
    pytest.importorskip("rewardkit_code")
    grader = string_check("eq", inp="{{sample.output_json.city}}", reference="{{item.answer}}")
    outputs = ['{"city": "Paris"}', '{"city": "Lyon"}', "Paris", '{"town": "Paris"}']
    rows = [{"prompt": "p", "completion": o, "answer": "Paris"} for o in outputs]
    config, result = scored(grader, rows)
    assert config["rewards"]["check"]["reward"] == "python"
    assert result.values("check")[:2] == [1.0, 0.0]
    # not JSON, or no such field: the template has no value, an error (never a 0 or 1)
    assert [s.status for s in result.scores("check")[2:]] == ["error", "error"]


def test_a_literal_reference_against_an_item_field() -> None:
    pytest.importorskip("rewardkit_code")
    grader = string_check("ilike", inp="{{item.verdict}}: {{sample.output_text}}",
                          reference="pass: yes")
    rows = [{"prompt": "p", "completion": c, "verdict": "PASS"} for c in ("Yes", "no")]
    _, result = scored(grader, rows)
    assert result.values("check") == [1.0, 0.0]


# -- text_similarity -------------------------------------------------------------------------

REFERENCE = "The quick brown fox jumps over the lazy dog near the river bank."
CANDIDATES = ["The quick brown fox jumped over a lazy dog near the river bank.",
              "A fast brown fox leaps over the sleepy dog near the bank of the river.",
              "Cats sleep all day long in the warm afternoon sun by the window."]


def library_value(metric: str, hyp: str, ref: str) -> float:
    if metric == "fuzzy_match":
        from rapidfuzz import fuzz
        return fuzz.ratio(hyp, ref) / 100
    if metric == "bleu":
        import sacrebleu
        return sacrebleu.sentence_bleu(hyp, [ref]).score / 100
    if metric == "gleu":
        from nltk.translate.gleu_score import sentence_gleu
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
        tok = Tokenizer13a()
        return sentence_gleu([tok(ref).split()], tok(hyp).split())
    from rouge_score.rouge_scorer import RougeScorer
    variant = "rougeL" if metric == "rouge_l" else "rouge" + metric[-1]
    return RougeScorer([variant]).score(ref, hyp)[variant].fmeasure


@pytest.mark.parametrize("metric", ["fuzzy_match", "bleu", "gleu", "rouge_1", "rouge_2",
                                    "rouge_3", "rouge_4", "rouge_5", "rouge_l"])
def test_text_similarity_is_the_metrics_library_value(metric: str) -> None:
    rows = [{"prompt": "Describe the picture.", "completion": c, "answer": REFERENCE}
            for c in CANDIDATES]
    config, result = scored(similarity(metric), rows)
    assert config["rewards"][f"sim_{metric}"]["params"]["reference_column"] == "answer"
    got = result.values(f"sim_{metric}")
    want = [library_value(metric, c, REFERENCE) for c in CANDIDATES]
    assert got == pytest.approx(want, abs=1e-9)
    assert got[0] > got[2]  # the metric separates a close paraphrase from another sentence


def test_an_item_field_named_as_the_reference_reads_the_rows_reference() -> None:
    rows = [{"prompt": "p", "completion": CANDIDATES[0], "reference": REFERENCE}]
    grader = similarity("rouge_l", reference="{{item.reference_answer}}")
    config, result = scored(grader, rows, reference_field="reference_answer")
    assert "reference_column" not in config["rewards"]["sim_rouge_l"]["params"]
    assert result.values("sim_rouge_l") == pytest.approx(
        [library_value("rouge_l", CANDIDATES[0], REFERENCE)])


def test_a_nested_item_field_is_a_dotted_column() -> None:
    rows = [{"prompt": "p", "completion": CANDIDATES[1], "gold": {"text": REFERENCE}}]
    _, result = scored(similarity("fuzzy_match", "{{item.gold.text}}"), rows)
    assert result.values("sim_fuzzy_match") == pytest.approx(
        [library_value("fuzzy_match", CANDIDATES[1], REFERENCE)])


def test_the_guards_of_textmetrics_still_refuse_the_echoed_prompt() -> None:
    """OpenAI's text_similarity pays an echo of the prompt when the prompt holds the
    reference; the imported reward keeps the textmetrics guards."""
    prompt = f"Paraphrase: {REFERENCE}"
    rows = [{"prompt": prompt, "completion": prompt, "answer": REFERENCE}]
    _, result = scored(similarity("bleu"), rows)
    assert library_value("bleu", prompt, REFERENCE) > 0.5
    assert result.values("sim_bleu") == [0.0]
    assert "prompt" in result.scores("sim_bleu")[0].reason


# -- multi -----------------------------------------------------------------------------------

def test_multi_is_a_weighted_sum_of_its_graders() -> None:
    grader = {"type": "multi", "name": "combined",
              "graders": {"exact": string_check("eq", name="exact"),
                          "close": similarity("fuzzy_match")},
              "calculate_output": "(3 * exact + close) / 4"}
    rows = [{"prompt": "p", "completion": c, "answer": "Canberra"}
            for c in ("Canberra", "Canbera", "Sydney")]
    config, result = scored(grader, rows)
    assert {k: c["weight"] for k, c in config["rewards"].items()} == {"exact": 0.75,
                                                                       "close": 0.25}
    from rapidfuzz import fuzz
    for row, total in zip(rows, result.totals, strict=True):
        exact = float(row["completion"] == "Canberra")
        close = fuzz.ratio(row["completion"], "Canberra") / 100
        assert total == pytest.approx((3 * exact + close) / 4)


def test_a_grader_the_formula_leaves_out_is_logged_with_weight_zero() -> None:
    grader = {"type": "multi", "name": "m", "graders": {"a": string_check("eq"),
                                                        "b": string_check("ilike")},
              "calculate_output": "a - 0.5 * -a"}
    config, notes = import_graders(grader)
    assert config["rewards"]["a"]["weight"] == 1.5
    assert config["rewards"]["b"]["weight"] == 0.0
    assert any("b: not in calculate_output" in n for n in notes)


@pytest.mark.parametrize("formula,named", [
    ("max(a, b)", "calls max()"), ("a * b", "multiplies graders"), ("a ^ 2", "'a ** 2'"),
    ("a / b", "divides by a grader"), ("a + 1", "adds a constant"),
    ("a + c", "'c' is not a grader"), ("a +", "does not parse"), ("a > b", "'a > b'")])
def test_a_formula_that_is_not_a_weighted_sum_is_refused_by_name(formula: str,
                                                                   named: str) -> None:
    grader = {"type": "multi", "name": "m", "graders": {"a": string_check("eq"),
                                                        "b": string_check("ne")},
              "calculate_output": formula}
    with pytest.raises(GraderImportError, match="calculate_output") as caught:
        import_graders(grader)
    assert named in str(caught.value)


# -- python ----------------------------------------------------------------------------------

GRADE_SOURCE = '''\
def grade(sample, item):
    words = sample["output_text"].lower().split()
    wanted = item["keywords"]
    found = sum(1 for w in wanted if w in words)
    return found / len(wanted)
'''


def test_a_python_grader_runs_its_grade_function_in_the_sandbox() -> None:
    pytest.importorskip("rewardkit_code")
    grader = {"type": "python", "name": "keywords", "source": GRADE_SOURCE}
    rows = [{"prompt": "p", "completion": c, "keywords": ["red", "green", "blue"]}
            for c in ("Red and blue", "green red blue", "nothing")]
    config, result = scored(grader, rows)
    assert config["rewards"]["keywords"]["reward"] == "python"
    namespace: dict[str, Any] = {}
    exec(GRADE_SOURCE, namespace)  # the grader's own function, run here as OpenAI would
    want = [namespace["grade"]({"output_text": r["completion"]}, r) for r in rows]
    assert result.values("keywords") == pytest.approx(want)
    assert want == pytest.approx([2 / 3, 1.0, 0.0])


def test_a_python_grader_sees_output_json_and_the_reference() -> None:
    pytest.importorskip("rewardkit_code")
    source = ('def grade(sample, item):\n'
              '    got = (sample["output_json"] or {}).get("total")\n'
              '    return 1.0 if got == item["reference_answer"] else 0.0\n')
    rows = [{"prompt": "p", "completion": c, "reference": 12}
            for c in ('{"total": 12}', '{"total": 13}', "twelve")]
    _, result = scored({"type": "python", "name": "total", "source": source}, rows,
                       reference_field="reference_answer")
    assert result.values("total") == [1.0, 0.0, 0.0]


def test_python_source_with_a_module_outside_the_sandbox_is_a_config_error() -> None:
    pytest.importorskip("rewardkit_code")
    from rewardkit.config import ConfigError

    source = "import os\n\ndef grade(sample, item):\n    return 1.0\n"
    config, _ = import_graders({"type": "python", "name": "p", "source": source})
    with pytest.raises(ConfigError, match="os"):
        RewardSet.from_dict(config, "imported")


# -- score_model / label_model against a loopback endpoint ------------------------------------

class Endpoint:
    def __init__(self, url: str) -> None:
        self.url = url
        self.bodies: list[dict[str, Any]] = []
        self.answer = "Score: 1"


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    pytest.importorskip("httpx")
    state = Endpoint("")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.bodies.append(body)
            data = json.dumps({"choices": [{"message": {"role": "assistant",
                                                        "content": state.answer}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()
    server.server_close()


SCORE_MODEL = {
    "type": "score_model", "name": "grounded", "model": "o4-mini",
    "range": [0, 10], "sampling_params": {"temperature": 0.2, "max_completions_tokens": 300},
    "input": [
        {"role": "system", "content": "You grade answers about {set theory}."},
        {"role": "user", "content": [
            {"type": "input_text", "text": "Reference: {{ item.reference_answer }}"},
            {"type": "input_text", "text": "Answer: {{sample.output_text}}"}]},
    ],
}


def test_a_score_model_asks_llm_judge_with_its_messages_and_range(endpoint: Endpoint) -> None:
    pytest.importorskip("rewardkit_judge")
    endpoint.answer = "Mostly right.\nScore: 7.5"
    rows = [{"prompt": "What is the empty set?", "completion": "A set with no elements.",
             "reference": "The set that has no members."}]
    config, result = scored(SCORE_MODEL, rows, judge_base_url=endpoint.url, api_key_env=None,
                            reference_field="reference_answer")
    params = config["rewards"]["grounded"]["params"]
    assert (params["min_score"], params["max_score"], params["normalize"]) == (0, 10, False)
    assert result.values("grounded") == [7.5]  # the grader's range, not rescaled
    body = endpoint.bodies[0]
    # the limit under the name OpenAI's reasoning models take (they refuse max_tokens)
    assert (body["model"], body["temperature"], body["max_completion_tokens"]) == \
        ("o4-mini", 0.2, 300)
    assert "max_tokens" not in body
    system, user = body["messages"]
    assert system == {"role": "system", "content": "You grade answers about {set theory}."}
    text = user["content"]
    assert "Reference: " in text and "The set that has no members." in text
    assert "A set with no elements." in text and "Score: N" in text
    assert "{{" not in text and "item." not in text


def test_a_label_model_pays_one_for_a_passing_labels_code(endpoint: Endpoint) -> None:
    pytest.importorskip("rewardkit_judge")
    grader = {"type": "label_model", "name": "tone", "model": "gpt-4o-mini",
              "labels": ["polite", "neutral", "rude"], "passing_labels": ["polite", "neutral"],
              "input": [{"role": "user", "content": "Classify the tone: {{sample.output_text}}"}]}
    rows = [{"prompt": "p", "completion": "Thanks a lot!"}]
    _, result = scored(grader, rows, judge_base_url=endpoint.url, api_key_env=None)
    assert result.values("tone") == [1.0]
    text = endpoint.bodies[0]["messages"][-1]["content"]
    assert '"polite" = 1; "neutral" = 1; "rude" = 0' in text
    endpoint.answer = "Score: 0"
    _, result = scored(grader, [{"prompt": "p", "completion": "Go away."}],
                       judge_base_url=endpoint.url, api_key_env=None)
    assert result.values("tone") == [0.0]


# -- refusals --------------------------------------------------------------------------------

@pytest.mark.parametrize("grader,named", [
    (similarity("meteor"), "evaluation_metric 'meteor' is not supported"),
    (similarity("cosine"), "evaluation_metric 'cosine' is not supported"),
    (similarity("rouge_9"), "unknown evaluation_metric 'rouge_9'"),
    (string_check("regex"), "operation 'regex'"),
    ({**string_check("eq"), "pass_threshold": 1}, "unknown field(s) pass_threshold"),
    ({k: v for k, v in string_check("eq").items() if k != "reference"}, "missing field(s) "
     "reference"),
    (string_check("eq", inp="{{sample.output_tools}}"), "sample.output_tools"),
    (string_check("eq", inp="{{row.answer}}"), "{{row.answer}}"),
    ({**similarity("bleu"), "reference": "a fixed text"}, "only one {{item.<field>}}"),
    ({**SCORE_MODEL, "sampling_params": {"seed": 3}}, "sampling_params.seed"),
    ({**SCORE_MODEL, "input": [{"role": "user", "content": "{{item.notes}} "
                                "{{sample.output_text}}"}]}, "--reference-field notes"),
    ({**SCORE_MODEL, "input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": "https://example.com/a.png"}, OUTPUT]}]},
     "'input_image'"),
    ({**SCORE_MODEL, "input": [{"role": "assistant", "content": OUTPUT}]}, "role 'assistant'"),
    ({**SCORE_MODEL, "input": [{"role": "user", "content": "Grade it."}]},
     "the judge would not see the completion"),
    ({"type": "label_model", "name": "l", "model": "m", "labels": ["a"],
      "passing_labels": ["b"], "input": [{"role": "user", "content": OUTPUT}]},
     "passing_labels must be a non-empty subset"),
    ({"type": "python", "name": "p", "source": "def score(s, i):\n    return 1\n"},
     "defines no grade"),
    ({"type": "python", "name": "p", "source": "def grade(s, i)\n"}, "does not parse"),
    ({"type": "multi", "name": "m", "calculate_output": "a",
      "graders": {"a": {"type": "multi", "name": "inner", "graders": {},
                        "calculate_output": "0"}}}, "multi grader inside a multi"),
    ({"type": "endpoint_check", "name": "x"}, "grader type 'endpoint_check'"),
    ({**string_check("eq"), "input": ["{{sample.output_text}}"]}, "input must be a string"),
    ({**string_check("eq"), "operation": ["eq"]}, "operation must be a string"),
    ({**similarity("bleu"), "evaluation_metric": {"name": "bleu"}},
     "evaluation_metric must be a string"),
    ({**SCORE_MODEL, "range": [1, 0]}, "range must be two increasing numbers"),
    ({**SCORE_MODEL, "input": "{{sample.output_text}}"}, "non-empty list of messages"),
])
def test_unsupported_pieces_are_refused_by_name(grader: dict[str, Any], named: str) -> None:
    with pytest.raises(GraderImportError) as caught:
        import_graders(grader, reference_field="reference_answer")
    assert named in str(caught.value)


# -- the command -----------------------------------------------------------------------------

def rewardkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rewardkit.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_the_command_writes_a_config_that_scores_the_example_rows(tmp_path: Path) -> None:
    example = ROOT / "examples" / "openai-graders"
    done = rewardkit("import", "openai-graders", str(example / "rft-multi.json"), "-o",
                     str(tmp_path / "c.yaml"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = RewardSet.from_file(tmp_path / "c.yaml").score(
        [json.loads(line) for line in (example / "rows.jsonl").read_text().splitlines()])
    from rapidfuzz import fuzz
    want = [0.7 * (c == "Canberra") + 0.3 * fuzz.ratio(c, "Canberra") / 100
            for c in ("Canberra", "Canbera", "Sydney")]
    assert result.totals == pytest.approx(want)


def test_the_command_refuses_without_a_traceback_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"grader": similarity("meteor")}))
    done = rewardkit("import", "openai-graders", str(path), "-o", str(tmp_path / "c.yaml"),
                     cwd=tmp_path)
    assert done.returncode == 2
    assert "meteor" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "c.yaml").exists()
    path.write_text("{not json")
    done = rewardkit("import", "openai-graders", str(path), cwd=tmp_path)
    assert done.returncode == 2 and "not JSON" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_fine_tuning_jobs_method_holds_the_grader(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"method": {"type": "reinforcement", "reinforcement": {
        "grader": string_check("eq"), "hyperparameters": {}}}}))
    done = rewardkit("import", "openai-graders", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "reward: string_match" in done.stdout


# -- the exploit probes bite on imported graders ----------------------------------------------

@pytest.mark.parametrize("op,paid", [("ilike", {"echo_prompt", "hedged"}), ("eq", set())])
def test_the_exploit_probes_find_what_a_like_check_pays(op: str, paid: set[str],
                                                        tmp_path: Path) -> None:
    """`rewardkit test`'s exploit probes, derived from two golden cases, on the component an
    imported string_check becomes: `ilike` pays the prompt echoed and a hedged answer as
    much as the honest one; `eq` pays neither."""
    import yaml

    from rewardkit.testing.cases import load_cases
    from rewardkit.testing.exploits import run_exploits

    config, _ = import_graders(string_check(op, reference="{{item.answer}}"),
                               reference_field="answer")
    component = config["rewards"]["check"]
    prompt = "Which city is the capital of Australia: Sydney, Canberra or Melbourne?"
    cases = {"reward": component["reward"], "params": component["params"], "cases": [
        {"name": "honest", "prompt": prompt, "reference": "Canberra",
         "completion": "Canberra", "expect": 1.0},
        {"name": "wrong", "prompt": prompt, "reference": "Canberra",
         "completion": "Sydney", "expect": 0.0}]}
    path = tmp_path / "city.cases.yaml"
    path.write_text(yaml.safe_dump(cases))
    report = run_exploits(load_cases(path))
    assert {r.name for r in report.failed} == paid
    tried = {r.name for r in report.results if r.inputs}
    assert {"echo_prompt", "hedged"} <= tried  # tried on eq too: passed, not skipped


def test_a_malformed_grader_is_always_refused_by_name_never_a_crash() -> None:
    """Seeded mutations of valid graders (fields deleted, replaced by other JSON types,
    unknown fields, broken templates and formulas): each imports or is refused with
    GraderImportError; no other exception (a traceback at the command line)."""
    import copy
    import random

    valid = [string_check("eq"), similarity("bleu"), SCORE_MODEL,
             {"type": "label_model", "name": "d", "model": "m", "labels": ["a", "b"],
              "passing_labels": ["a"], "input": [{"role": "user", "content": OUTPUT}]},
             {"type": "python", "name": "e", "source": GRADE_SOURCE}]
    valid.append({"type": "multi", "name": "m", "calculate_output": "a + b - 2 * c + e / 3",
                  "graders": dict(zip("abce", [valid[0], valid[1], valid[2], valid[4]],
                                      strict=True))})
    values: list[Any] = [None, 1, 1.5, True, "x", [], {}, [1], {"a": 1}, "{{item.}}", "{{}}",
                         "{{sample}}", "{{ item.a.b }}", "{{sample.output_json.a}}",
                         "{{item.prompt}}", "a ** b", "max(a, b)", "a / 0", "1e999 * a"]
    rng = random.Random(7)

    def mutate(node: Any) -> None:
        if isinstance(node, dict) and node:
            key, roll = rng.choice(list(node)), rng.random()
            if roll < 0.3:
                node[key] = rng.choice(values)
            elif roll < 0.4:
                del node[key]
            elif roll < 0.5:
                node[rng.choice(["extra", "type", "name"])] = rng.choice(values)
            else:
                mutate(node[key])
        elif isinstance(node, list) and node:
            i = rng.randrange(len(node))
            if rng.random() < 0.4:
                node[i] = rng.choice(values)
            else:
                mutate(node[i])

    outcomes = {"imported": 0, "refused": 0}
    for _ in range(3000):
        grader = copy.deepcopy(rng.choice(valid))
        for _ in range(rng.randint(1, 3)):
            mutate(grader)
        try:
            import_graders(grader, reference_field="reference_answer")
            outcomes["imported"] += 1
        except GraderImportError:
            outcomes["refused"] += 1
    assert min(outcomes.values()) > 100, outcomes  # both paths were exercised
