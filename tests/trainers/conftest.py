"""Fixtures for the trainer-adapter tests (backend venv helpers: backend_venvs.py)."""

from __future__ import annotations

from pathlib import Path

import check_rewards  # noqa: F401  (registers check_graded, check_longest)
import pytest

from rewardkit import Sample, Score, registry, reward


@reward(description="test reward: fails to grade when the reference is 'unparseable'")
def grades_or_fails(sample: Sample) -> Score:
    """1.0 when the completion contains the reference, 0.0 when not; error when the
    reference is the string 'unparseable'."""
    if sample.reference == "unparseable":
        return Score.error("reference unparseable")
    return Score.ok(1.0 if str(sample.reference) in sample.text else 0.0)


@pytest.fixture(scope="module", autouse=True)
def trainer_test_rewards() -> None:
    """Register the test-only rewards for this folder's tests."""
    if "grades_or_fails" not in registry.names():
        registry.register(grades_or_fails, "tests-trainers")
    yield
    if "grades_or_fails" in registry.names():
        registry.unregister("grades_or_fails")


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved word-level tokenizer (the quickstart's, plus the words and bare tags the
    backend checks write: the quickstart's copy task has no "plus" or "add") for backend
    checks, so ``decode(encode(text)) == text`` for every text they score."""
    pytest.importorskip("transformers")
    from rewardkit_trainers.quickstart import build_tokenizer, generate_rows, tokenizer_corpus

    path = tmp_path_factory.mktemp("tokenizer")
    words = ["add 3 and 4", "3 plus 4 is 7", "no tags", "add add add"]
    tokenizer = build_tokenizer(tokenizer_corpus(generate_rows(32)) + words)
    # the quickstart's tokenizer knows its tags only as parts of its layout; the checks
    # also write them alone ("<answer>\n7\n</answer>")
    tokenizer.add_tokens(["<think>", "</think>", "<answer>", "</answer>"])
    tokenizer.save_pretrained(path)
    return path
