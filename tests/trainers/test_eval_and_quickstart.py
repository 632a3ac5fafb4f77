"""`rewardkit eval` and the quickstart's generated data, tokenizer and tiny model."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytest.importorskip("transformers")

from backend_venvs import ROOT
from rewardkit_trainers.config import EvalConfig, TinyModel
from rewardkit_trainers.evaluate import (
    accuracy_component,
    evaluate_config,
    score_completions,
)
from rewardkit_trainers.quickstart import (
    build_tiny,
    build_tokenizer,
    generate_rows,
    is_built,
    load_tokenizer,
    target_text,
    tokenizer_corpus,
)

from rewardkit import RewardSet

GOOD = "<think>\n7\n</think>\n<answer>\n7\n</answer>"


def test_generated_rows_are_conversational_with_a_reference():
    rows = generate_rows(40, seed=1)
    assert rows == generate_rows(40, seed=1)
    for row in rows:  # the reference is what the prompt says to copy
        assert [m["role"] for m in row["prompt"]] == ["user"]
        assert row["prompt"][0]["content"] == f"copy {row['reference']}"
    assert {row["reference"] for row in rows} == {str(d) for d in range(10)}


def test_the_quickstart_rewards_pay_the_copy_and_nothing_else():
    """The policy's view: the right digit in the strict layout is the only output paid in
    full; the layout with the wrong digit pays the format only; reordered, repeated,
    padded or unclosed layouts (what a random policy meets) lose at least the format's
    0.25, and without a closed answer block there is no correctness to collect."""
    rs = RewardSet.from_file(ROOT / "examples" / "quickstart.yaml")
    prompt = [{"role": "user", "content": "copy 7"}]
    texts = {
        "right": GOOD,
        "wrong digit": "<think>\n7\n</think>\n<answer>\n3\n</answer>",
        "reordered tags": "\n</answer>\n</think>\n<answer>\n<think>\n7",
        "two answers": GOOD + "\n<answer>\n7\n</answer>",
        "padded": GOOD + "7777",
        "no close": "<think>\n7\n</think>\n<answer>\n77777",
        "bare digit": "7",
    }
    result = rs.score([{"prompt": prompt, "completion": t, "reference": "7"}
                       for t in texts.values()])
    paid = dict(zip(texts, result.totals, strict=True))
    assert paid["right"] == 2.0  # correct 1.5 + format 0.25 + partial_format 0.25
    assert paid["wrong digit"] == 0.5  # the layout in full, the answer not
    for name in ("reordered tags", "two answers", "padded", "no close", "bare digit"):
        assert result.values("format")[list(texts).index(name)] == 0.0, name
        assert paid[name] <= paid["right"] - 0.25, name  # at least the format's 0.25 short
    for name in ("reordered tags", "no close", "bare digit"):  # no answer block: not right
        assert result.values("correct")[list(texts).index(name)] == 0.0, name


@pytest.mark.parametrize(("text", "pieces"), [
    ("<think>\n3\n</think>\n<answer>\n3\n</answer>", 7),
    ("<think>\n3\n</think>\n<answer>\n3\n</answer>\n", 7),
    ("<think>\n3\n</think>\n<answer>\n3\n</answer>x", 6),
    ("<think>\n3\n</think>\n<answer>\n3", 5),
    ("<think>\n3\n</think>\n<answer>\n\n</answer>", 4),
    ("<think>\nhm\n</think>\n", 3),
    ("<think>\n<think>\n", 1),
    ("\n</answer>\n</think>\n<answer>\n<think>\n", 0),  # all four tags, out of order
    ("x<think>\n3\n</think>\n<answer>\n3\n</answer>", 0),
])
def test_layout_progress_counts_pieces_in_order_from_the_start(text: str, pieces: int):
    from rewardkit import get_reward

    got = get_reward("layout_progress")(text)
    assert got.value == pytest.approx(pieces / 7) and got.details == {"pieces": pieces}


def test_tokenizer_round_trips_the_answer_layout_and_has_a_chat_template():
    tok = build_tokenizer(tokenizer_corpus(generate_rows(8)))
    text = target_text(3)
    ids = tok(text)["input_ids"]
    assert tok.decode(ids) == text
    # the tags with their newlines are tokens: <think>, the digit, </think><answer>,
    # and the answer digit with </answer>
    assert len(ids) == 4
    assert "<think>\n" in tok.get_vocab() and "</answer>" not in tok.get_vocab()
    chat = tok.apply_chat_template([{"role": "user", "content": "copy 3"}],
                                   tokenize=False, add_generation_prompt=True)
    assert chat == "<|user|>copy 3<|end|><|assistant|>"


@pytest.mark.parametrize("build", ["qwen2", "llama"])
def test_a_saved_tiny_model_gives_eval_the_tokens_training_used(tmp_path: Path, build: str):
    """The tokenizer eval (and a run starting from a saved model) loads splits prompts
    and answers exactly as the in-memory one training used, for every built shape."""
    rows = generate_rows(16, seed=3)
    spec = TinyModel(build=build, hidden_size=16, num_layers=1, num_heads=2,
                     intermediate_size=32)
    _, trained_with = build_tiny(spec, rows, tmp_path / "model")
    loaded = load_tokenizer(tmp_path / "model")
    for row in rows:
        prompt = trained_with.apply_chat_template(row["prompt"], tokenize=False,
                                                  add_generation_prompt=True)
        assert loaded.apply_chat_template(row["prompt"], tokenize=False,
                                          add_generation_prompt=True) == prompt
        assert loaded(prompt, add_special_tokens=False)["input_ids"] == \
            trained_with(prompt, add_special_tokens=False)["input_ids"]
    ids = trained_with(target_text(3), add_special_tokens=False)["input_ids"]
    assert loaded.decode(ids) == target_text(3)
    assert (loaded.pad_token, loaded.eos_token) == (trained_with.pad_token,
                                                    trained_with.eos_token)


def test_a_built_model_is_generated_with_transformers_even_where_vllm_would_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """vLLM (no GPU here, so its choice is forced) would load a built model's tokenizer
    through AutoTokenizer and swap it: eval keeps such a model on transformers, with the
    tokenizer as saved."""
    from rewardkit_trainers import evaluate

    rows = generate_rows(4, seed=5)
    build_tiny(TinyModel(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32),
               rows, tmp_path / "model")
    monkeypatch.setattr(evaluate, "_use_vllm", lambda ev: True)

    def no_vllm(*args: object) -> list[str]:
        raise AssertionError("a built model went to vLLM")

    monkeypatch.setattr(evaluate, "_generate_vllm", no_vllm)
    out = evaluate.generate(str(tmp_path / "model"), rows[:2], EvalConfig(max_new_tokens=4))
    assert len(out) == 2 and all(isinstance(text, str) for text in out)
    # a hub id or a model without the mark is vLLM's where vLLM runs
    assert not is_built("Qwen/Qwen2.5-0.5B-Instruct")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "tokenizer_config.json").write_text("{}")
    assert not is_built(tmp_path / "other")
    assert is_built(tmp_path / "model")


def test_accuracy_counts_rows_where_the_accuracy_component_is_at_its_maximum():
    rs = RewardSet.from_dict({"rewards": {"accuracy": {"reward": "soft_format"},
                                          "tags": {"reward": "tag_count"}}})
    rows = [{"prompt": "p", "reference": "7"}] * 4
    report = score_completions(rs, rows, [GOOD, GOOD, "x", GOOD], "accuracy", 0, None)
    assert report["accuracy"] == 0.75
    assert report["components"]["tags"] == pytest.approx(0.375)
    assert report["full"]["accuracy"] == 0.75


def test_accuracy_component_defaults_to_conventional_names():
    assert accuracy_component(["format", "correctness"], None) == "correctness"
    assert accuracy_component(["format"], None) is None
    assert accuracy_component(["format"], "format") == "format"


def test_eval_reports_base_and_trained_models(tmp_path: Path, capfd):
    rows = generate_rows(16)
    build_tiny(TinyModel(hidden_size=32, intermediate_size=64), rows, tmp_path / "out" / "final")
    build_tiny(TinyModel(hidden_size=32, intermediate_size=64, seed=1), rows,
               tmp_path / "out" / "base-model")
    config = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text())
    config["train"]["output_dir"] = str(tmp_path / "out")
    config["eval"]["limit"] = 8
    path = tmp_path / "q.yaml"
    path.write_text(yaml.safe_dump(config))
    report = evaluate_config(path)
    assert report["rows"] == 8
    assert set(report["models"]) == {"base", "trained"}
    for info in report["models"].values():
        assert 0.0 <= info["accuracy"] <= 1.0
        assert set(info["components"]) == {"correct", "format", "partial_format"}
        assert set(info["full"]) == set(info["components"])
    printed = capfd.readouterr()
    assert "Loading weights" not in printed.out + printed.err  # no raw progress bars


def test_the_eval_table_shows_correctness_and_format_apart():
    """A policy that learned the layout but not the answer reads format 100%,
    accuracy 0%: each component's share paid in full has its own row."""
    from rewardkit_trainers.evaluate import print_report
    from rich.console import Console

    rs = RewardSet.from_file(ROOT / "examples" / "quickstart.yaml")
    rows = [{"prompt": [{"role": "user", "content": "copy 7"}], "reference": "7"}] * 2
    layout_only = "<think>\n7\n</think>\n<answer>\n3\n</answer>"
    report = {"rows": 2, "accuracy_component": "correct", "models": {
        "base": {"model": "base-model",
                 **score_completions(rs, rows, ["7", "x"], "correct", 0, None)},
        "trained": {"model": "final",
                    **score_completions(rs, rows, [layout_only] * 2, "correct", 0, None)}}}
    console = Console(record=True, width=100)
    print_report(console, report)
    lines = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
             for line in console.export_text().splitlines() if line.count("│") == 4}
    assert lines["accuracy"] == ["0.0%", "0.0%"]
    assert lines["correct in full"] == ["0.0%", "0.0%"]
    assert lines["format in full"] == ["0.0%", "100.0%"]
    assert lines["partial_format"] == ["0.000", "1.000"]


def test_eval_says_whether_the_trained_model_is_in_the_expected_range():
    """Issue 43: `eval.expected` (the quickstart's measured range) is printed beside the
    trained figure, so a run that did not converge reads as one; a range in percents,
    or upside down, is a config error."""
    from pydantic import ValidationError
    from rewardkit_trainers.config import Expected
    from rewardkit_trainers.evaluate import expected_line, expected_verdict, print_report
    from rich.console import Console

    expected = Expected(accuracy=(0.9, 1.0), measured="5 seeds")
    good = expected_verdict(expected, {"accuracy": 0.984375})
    assert good == {"accuracy": [0.9, 1.0], "measured": "5 seeds",
                    "trained_accuracy": 0.984375, "in_range": True}
    assert expected_line(good) == ("trained accuracy 98.4%: in the expected range "
                                   "90.0%-100.0% (5 seeds)")
    bad = expected_verdict(expected, {"accuracy": 0.421875})
    assert bad["in_range"] is False
    console = Console(record=True, width=200)
    print_report(console, {"rows": 64, "accuracy_component": "correct", "expected": bad,
                           "models": {"trained": {"model": "final", "accuracy": 0.421875}}})
    assert ("trained accuracy 42.2%: below the expected range 90.0%-100.0% (5 seeds): "
            "this run did not learn what measured runs of this config learn"
            in console.export_text())
    assert expected_verdict(expected, None)["in_range"] is None  # no trained model
    for wrong in ((90, 100), (1.0, 0.9)):
        with pytest.raises(ValidationError, match="0 <= low <= high <= 1"):
            Expected(accuracy=wrong)
    quickstart = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text())
    assert EvalConfig.model_validate(quickstart["eval"]).expected is not None
