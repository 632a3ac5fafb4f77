"""The judges the tests talk to: a tiny causal LM trained to grade the test's questions
(served over loopback by rewardkit_judge.chat_server in a subprocess, the OpenAI
chat-completions API), and the answers of a scripted judge server."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from judge_support import (
    JUDGE_LM,
    JUDGE_LM_CACHE,
    TRANSLATION_LM,
    ChatServer,
    fingerprint,
    reward_of,
)


@pytest.fixture(scope="session")
def judge_model_dir() -> Path:
    """A tiny causal LM trained (seconds, on CPU) to judge the test's questions with the
    real prompts of llm_judge and translation_judge; kept in build/judge-lm, rebuilt when
    the examples, the builder or the library versions change."""
    pytest.importorskip("transformers")
    from judge_models import build_judge_lm, judge_examples

    examples = judge_examples(reward_of("llm_judge", JUDGE_LM),
                              reward_of("translation_judge", TRANSLATION_LM))
    out = JUDGE_LM_CACHE / fingerprint(examples)
    if not (out / "config.json").is_file():
        JUDGE_LM_CACHE.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(dir=JUDGE_LM_CACHE, prefix=".building-"))
        build_judge_lm(building, examples)
        try:
            building.rename(out)
        except OSError:  # another run finished first: its copy is the same
            shutil.rmtree(building, ignore_errors=True)
        # judges built for older examples, builders or library versions
        for stale in JUDGE_LM_CACHE.iterdir():
            if stale != out and not stale.name.startswith("."):
                shutil.rmtree(stale, ignore_errors=True)
    return out


@pytest.fixture(scope="session")
def chat_server(judge_model_dir: Path) -> Iterator[ChatServer]:
    server = ChatServer(judge_model_dir)
    yield server
    server.close()


@pytest.fixture
def start_server(judge_model_dir: Path) -> Iterator[Any]:
    """Start extra servers (e.g. one that dies); all are stopped after the test."""
    started: list[ChatServer] = []

    def start(*extra: str) -> ChatServer:
        server = ChatServer(judge_model_dir, *extra)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()
