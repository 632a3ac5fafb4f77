"""The judges the tests talk to: a tiny causal LM trained to grade the test's questions
(served over loopback by rewardkit_judge.chat_server in a subprocess, the OpenAI
chat-completions API), and the answers of a scripted judge server."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from judge_support import (
    JUDGE_LM,
    JUDGE_LM_CACHE,
    TRANSLATION_LM,
    ChatServer,
    Script,
    answer_for,
    fingerprint,
    reasoning_model_refusal,
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
                              reward_of("translation_judge", TRANSLATION_LM),
                              reward_of("llm_judge", {**JUDGE_LM, "verdict": "json"}))
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


@pytest.fixture
def scripted() -> Iterator[tuple[str, Script]]:
    """A scripted judge server on loopback (its answers: judge_support.answer_for), for
    the client's limits and for what a reward sends."""
    pytest.importorskip("httpx")
    from rewardkit_judge.chat_server import send_json

    script = Script()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            request = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            with script.lock:
                script.requests += 1
                script.times.append(time.perf_counter())
                script.bodies.append(json.loads(request))
                n = script.requests
                script.in_flight += 1
                script.most_in_flight = max(script.most_in_flight, script.in_flight)
            try:
                time.sleep(script.delay)
                refusal = (reasoning_model_refusal(json.loads(request))
                           if script.reasoning_model else None)
                if n <= script.fail_first:
                    status, body = 503, {"error": {"message": "busy"}}
                elif refusal is not None:
                    status, body = 400, refusal
                else:
                    status, body = 200, {"choices": [{"message": {
                        "role": "assistant", "content": answer_for(request)}}]}
                send_json(self, status, body)
            finally:
                with script.lock:
                    script.in_flight -= 1

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    server.shutdown()
    server.server_close()
