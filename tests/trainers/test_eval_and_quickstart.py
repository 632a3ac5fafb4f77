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

GOOD = "<think>\n3 plus 4 is 7\n</think>\n<answer>\n7\n</answer>"


def test_generated_rows_are_conversational_with_a_reference():
    rows = generate_rows(4, seed=1)
    assert rows == generate_rows(4, seed=1)
    assert rows[0]["prompt"][0]["role"] == "system"
    assert int(rows[0]["reference"]) == sum(
        int(w) for w in rows[0]["prompt"][1]["content"].split() if w.isdigit())


def test_tokenizer_round_trips_the_answer_layout_and_has_a_chat_template():
    tok = build_tokenizer(tokenizer_corpus(generate_rows(8)))
    text = target_text(3, 4)
    assert tok.decode(tok(text)["input_ids"]) == text
    assert "<think>\n" in tok.get_vocab()  # tag + newline is one token
    chat = tok.apply_chat_template([{"role": "user", "content": "add 3 and 4"}],
                                   tokenize=False, add_generation_prompt=True)
    assert chat == "<|user|>add 3 and 4<|end|><|assistant|>"


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
    ids = trained_with(target_text(3, 4), add_special_tokens=False)["input_ids"]
    assert loaded.decode(ids) == target_text(3, 4)
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
        assert set(info["components"]) == {"tags", "format", "number"}
    printed = capfd.readouterr()
    assert "Loading weights" not in printed.out + printed.err  # no raw progress bars
