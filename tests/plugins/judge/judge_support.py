"""What the judge tests share: the params and answers of the scripted judge server, the
trained tiny judge's params, and a running chat_server subprocess (the fixtures that use
them are in conftest.py; a module of its own, so tests import it by a name no other
test folder uses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from judge_models import RUBRIC

#: llm_judge params of the scripted-server tests (base_url is filled in per server)
JUDGE = {"model": "tiny-judge", "rubric": "Is the capital right?", "min_score": 0,
         "max_score": 10, "retries": 1, "backoff": 0.05, "request_timeout": 20,
         "max_tokens": 8, "template": "{rubric} {prompt}: {completion}"}
CAPITAL = "capital of france"
#: completion -> what the scripted judge answers
ANSWERS = {"paris": "Score: 9", "lyon": "Score: 2", "banana": "I like it",
           "rome": "Score: 12"}

TRANSLATION = {"model": "tiny-judge", "retries": 1, "backoff": 0.05, "request_timeout": 20,
               "max_tokens": 24,
               "template": "rate into {target}: <src>{prompt}</src> {completion}"}
SOURCE = "The package weighs 3.5 kg."
#: translation -> the scripted judge's ratings
TRANSLATIONS = {"包裹重 3.5 公斤。": "my ratings is [5, 5, 5, 5, 5, 5, 5]",
                "包裹重 35 公斤。": "my ratings is [5, 5, 5, 5, 5, 1, 5]",
                "包裹": "my ratings is [5, 5]"}


def reasoning_model_refusal(body: dict[str, Any]) -> dict[str, Any] | None:
    """The error body OpenAI's API answers (with HTTP 400) to a reasoning model's request
    holding a field it does not take, or None."""
    if "max_tokens" in body:
        return {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported "
                          "with this model. Use 'max_completion_tokens' instead.",
                          "type": "invalid_request_error", "param": "max_tokens",
                          "code": "unsupported_parameter"}}
    if "temperature" in body and body["temperature"] != 1:
        return {"error": {"message": f"Unsupported value: 'temperature' does not support "
                          f"{body['temperature']} with this model. Only the default (1) "
                          "value is supported.", "type": "invalid_request_error",
                          "param": "temperature", "code": "unsupported_value"}}
    return None


def answer_for(request_text: str) -> str:
    """What the scripted judge answers to a request whose body contains these words."""
    for key, answer in {**ANSWERS, **TRANSLATIONS}.items():
        if json.dumps(key)[1:-1] in request_text or key in request_text:
            return answer
    return "Score: 5"


#: llm_judge params of the trained tiny judge: the default rubric prompt (base_url per server)
JUDGE_LM = {"model": "tiny-judge", "rubric": RUBRIC, "retries": 1, "backoff": 0.05,
            "request_timeout": 30, "max_tokens": 24}
#: translation_judge params of the trained tiny judge: the default template and criteria
TRANSLATION_LM = {"model": "tiny-judge", "retries": 1, "backoff": 0.05,
                  "request_timeout": 30, "max_tokens": 64}
JUDGE_LM_CACHE = Path(__file__).resolve().parents[3] / "build" / "judge-lm"


def reward_of(name: str, params: dict[str, Any]) -> Any:
    """The reward object a one-component config builds (``base_url`` is never asked)."""
    from rewardkit import RewardSet

    rs = RewardSet.from_dict({"rewards": {"judge": {
        "reward": name, "params": {**params, "base_url": "http://127.0.0.1:9/v1"}}}})
    return rs.components["judge"].stages[0].reward


def fingerprint(examples: list[Any]) -> str:
    import hashlib

    import torch
    import transformers

    digest = hashlib.sha256((Path(__file__).parent / "judge_models.py").read_bytes())
    digest.update(json.dumps([examples, torch.__version__, transformers.__version__],
                             ensure_ascii=False).encode())
    return digest.hexdigest()[:16]


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


class Script:
    """What the scripted server does: counts requests and requests in flight, and keeps
    the body of each request (the messages a reward sent)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.requests = 0
        self.fail_first = 0        # answer 503 to this many requests first
        self.delay = 0.0           # seconds before answering
        #: answer as OpenAI's reasoning models (o1, o3, o4-mini, gpt-5) do: HTTP 400 with
        #: an error body to a request holding max_tokens, or a temperature other than 1
        self.reasoning_model = False
        self.times: list[float] = []
        self.bodies: list[dict[str, Any]] = []
