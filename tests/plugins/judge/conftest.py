"""A tiny judge LM taught the answers the tests need, served over loopback by
rewardkit_judge.chat_server in a subprocess (the OpenAI chat-completions API)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

#: llm_judge params shared by the tests (base_url is filled in per server)
JUDGE = {"model": "tiny-judge", "rubric": "Is the capital right?", "min_score": 0,
         "max_score": 10, "retries": 1, "backoff": 0.05, "request_timeout": 20,
         "max_tokens": 8, "template": "{rubric} {prompt}: {completion}"}
CAPITAL = "capital of france"
#: completion -> what the tiny judge answers
ANSWERS = {"paris": "Score: 9", "lyon": "Score: 2", "banana": "I like it",
           "rome": "Score: 12"}

TRANSLATION = {"model": "tiny-judge", "retries": 1, "backoff": 0.05, "request_timeout": 20,
               "max_tokens": 24,
               "template": "rate into {target}: <src>{prompt}</src> {completion}"}
SOURCE = "The package weighs 3.5 kg."
#: translation -> the tiny judge's ratings
TRANSLATIONS = {"包裹重 3.5 公斤。": "my ratings is [5, 5, 5, 5, 5, 5, 5]",
                "包裹重 35 公斤。": "my ratings is [5, 5, 5, 5, 5, 1, 5]",
                "包裹": "my ratings is [5, 5]"}


def answer_for(request_text: str) -> str:
    """What the scripted judge answers to a request whose body contains these words."""
    for key, answer in {**ANSWERS, **TRANSLATIONS}.items():
        if json.dumps(key)[1:-1] in request_text or key in request_text:
            return answer
    return "Score: 5"


@pytest.fixture(scope="session")
def judge_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny causal LM built from a config (random weights) and a local tokenizer."""
    pytest.importorskip("transformers")
    from rewardkit_trainers.config import TinyModel
    from rewardkit_trainers.quickstart import build_model, build_tokenizer

    out = tmp_path_factory.mktemp("judge-lm")
    tokenizer = build_tokenizer([JUDGE["rubric"], CAPITAL, *ANSWERS, *ANSWERS.values()])
    model = build_model(TinyModel(hidden_size=32, intermediate_size=64), tokenizer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


class ChatServer:
    """A running chat_server subprocess."""

    def __init__(self, model_dir: Path, *extra: str) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rewardkit_judge.chat_server", "--model", str(model_dir),
             "--port", "0", "--served-model-name", "tiny-judge", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("listening on "):
            self.close()
            raise RuntimeError(f"chat server did not start: {line!r} "
                               f"{self.process.stderr.read() if self.process.stderr else ''}")
        self.base_url = line.split("listening on ", 1)[1].strip() + "/v1"

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


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
