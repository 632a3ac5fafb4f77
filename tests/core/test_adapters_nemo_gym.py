"""The NeMo Gym adapter: a real resources server process on 127.0.0.1, real HTTP.

NeMo Gym itself needs Python >= 3.12 (PyPI's nemo-gym), so the request and response
shapes are the ones its source uses (NVIDIA-NeMo/Gym at 07d6b0d07b22fcf530b4c211dae2ee23100428e4:
``BaseVerifyRequest`` = ``responses_create_params`` + ``response`` + the row's fields;
``BaseMultiRewardVerifyResponse`` adds ``reward: float`` and
``reward_components: dict[str, float]``), checked here with pydantic models of those
fields. The server is FastAPI + uvicorn (skipped where they are absent).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

pytest.importorskip("fastapi", reason="the NeMo Gym adapter serves through FastAPI")
pytest.importorskip("uvicorn", reason="the NeMo Gym adapter serves through uvicorn")

from rewardkit import RewardSet
from rewardkit.adapters.nemo_gym import RequestError, sample_of, verify

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "gsm8k-rlvr.yaml"
START_TIMEOUT = 60.0


class VerifyResponse(BaseModel):
    """What NeMo Gym reads back from /verify (BaseMultiRewardVerifyResponse's own fields;
    extra fields are allowed there too)."""

    model_config = ConfigDict(extra="allow")
    responses_create_params: dict[str, Any]
    response: dict[str, Any]
    reward: float
    reward_components: dict[str, float]


def rollout(text: str, expected: str = "4", **extra: Any) -> dict[str, Any]:
    """A verify request as a NeMo Gym agent sends it: the Responses API request and
    answer (a reasoning item, then the assistant's message) and the row's fields."""
    return {
        "responses_create_params": {
            "input": [
                {"role": "developer", "content": "Answer with #### N.", "type": "message"},
                {"role": "user", "content": "What is 2 + 2?", "type": "message"},
            ],
            "tools": None, "temperature": None, "parallel_tool_calls": True,
        },
        "response": {
            "id": "resp_1", "object": "response", "created_at": 1.0, "model": "m",
            "output": [
                {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": None},
                {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": text, "annotations": [],
                              "logprobs": None}]},
            ],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        },
        "expected_answer": expected,
        **extra,
    }


def post(url: str, body: bytes, timeout: float = 30.0) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port_file = tmp_path_factory.mktemp("nemo-gym") / "port"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rewardkit.adapters.nemo_gym", str(CONFIG), "--port", "0",
         "--port-file", str(port_file)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"server exited: {proc.stdout.read()!r}")  # type: ignore[union-attr]
            if port_file.is_file() and port_file.read_text().strip():
                port = int(port_file.read_text())
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            if time.monotonic() > deadline:
                raise AssertionError("server did not start")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
        proc.terminate()
        assert proc.wait(timeout=20) == 0  # SIGTERM drains and exits 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_verify_answers_reward_and_components_over_http(server: str) -> None:
    status, right = post(f"{server}/verify", json.dumps(
        rollout("2 + 2 = 4\n#### The final answer is 4")).encode())
    assert status == 200
    checked = VerifyResponse.model_validate(right)
    assert checked.reward == 1.5
    assert checked.reward_components == {"format": 0.5, "correctness": 1.0}
    assert right["expected_answer"] == "4"  # the request comes back with the scores
    assert (right["format"], right["correctness"]) == (0.5, 1.0)  # top-level for metrics
    assert "rewardkit_failed" not in right

    status, wrong = post(f"{server}/verify", json.dumps(
        rollout("2 + 2 = 5\n#### The final answer is 5")).encode())
    assert status == 200
    assert VerifyResponse.model_validate(wrong).reward_components == {
        "format": 0.5, "correctness": 0.0}
    assert wrong["reward"] == 0.5


def test_verifiers_nemo_gym_client_seeds_and_verifies(server: str) -> None:
    """verifiers 0.4's NeMo Gym taskset (``verifiers.v1.tasksets.nemo_gym``) is a real
    client of resources servers: its per-rollout state posts ``/seed_session`` with the
    row and ``/verify`` with the row and the response. Where it is installed, it talks
    to this server; what its reward hook then reads (``reward``, the numeric top-level
    fields as metrics) is checked on its answer."""
    import asyncio

    toolset = pytest.importorskip(
        "verifiers.v1.tasksets.nemo_gym.toolset",
        reason="verifiers >= 0.4 (its NeMo Gym taskset) is not installed")
    state = toolset.NeMoGymState(resources_url=server, request_timeout=30.0)
    row = rollout("")
    response = row.pop("response")
    response["output"][1]["content"][0]["text"] = "2 + 2 = 4\n#### The final answer is 4"

    async def drive() -> tuple[Any, Any]:
        seeded = await state.post("seed_session", row)
        verified = await state.post("verify", row | {"response": response})
        return seeded, verified

    seeded, verified = asyncio.run(drive())
    seeded.raise_for_status()
    verified.raise_for_status()
    assert seeded.json().get("mcp") is None  # no MCP tools offered
    result = verified.json()
    assert result.pop("reward") == 1.5
    del result["responses_create_params"], result["response"]
    metrics = {k: float(v) for k, v in result.items() if isinstance(v, bool | int | float)}
    assert metrics == {"format": 0.5, "correctness": 1.0}


def test_seed_session_and_reverify_mode(server: str) -> None:
    assert post(f"{server}/seed_session", b"{}") == (200, {})
    with urllib.request.urlopen(f"{server}/reverify_mode", timeout=30) as answer:
        assert json.loads(answer.read()) == "stateless"


def test_bad_requests_get_a_clear_error_not_a_traceback(server: str) -> None:
    status, body = post(f"{server}/verify", b"{not json")
    assert status == 400 and "not JSON" in body["detail"]
    status, body = post(f"{server}/verify", json.dumps({"response": {"output": []}}).encode())
    assert status == 422 and "responses_create_params" in body["detail"]
    status, body = post(f"{server}/verify", json.dumps(
        {"responses_create_params": {"input": 3}, "response": {"output": []}}).encode())
    assert status == 422 and "input" in body["detail"]
    assert "Traceback" not in json.dumps(body)


def test_tool_calls_and_outputs_become_the_trajectory() -> None:
    body = rollout("done")
    body["response"]["output"][1:1] = [
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add",
         "arguments": "{\"a\": 2, \"b\": 2}", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_1", "output": "4", "id": None},
    ]
    body["responses_create_params"]["tools"] = [
        {"type": "function", "name": "add", "parameters": {"type": "object"}}]
    sample = sample_of(body)
    assert sample.prompt == [{"role": "system", "content": "Answer with #### N."},
                             {"role": "user", "content": "What is 2 + 2?"}]
    assert sample.completion == [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 2}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "4"},
        {"role": "assistant", "content": "done"},
    ]
    assert sample.reference == "4"
    assert sample.metadata["tools"][0]["name"] == "add"
    with pytest.raises(RequestError, match="output"):
        sample_of({"responses_create_params": {}, "response": {"output": "text"}})


def test_a_failed_grading_is_flagged_not_hidden() -> None:
    rs = RewardSet.from_dict({"rewards": {"ok": {"reward": "good", "weight": 0.0},
                                          "boom": {"reward": "raises"}},
                              "on_error": "null"})
    answer = verify(rs, rollout("boom"), fallback=-1.0)
    assert answer["rewardkit_failed"] is True
    assert answer["reward"] == -1.0
    assert answer["reward_components"]["boom"] == -1.0
    assert answer["rewardkit_scores"]["boom"]["status"] == "error"
    assert "rewardkit_failed" not in verify(rs, rollout("fine"))


def test_the_cli_refuses_a_bad_config_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rewards:\n  x:\n    reward: no_such_reward\n")
    done = subprocess.run([sys.executable, "-m", "rewardkit.adapters.nemo_gym", str(bad)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2
    assert "no_such_reward" in done.stderr and "Traceback" not in done.stderr


def test_without_fastapi_the_cli_says_what_to_install() -> None:
    code = ("import sys; sys.modules['fastapi'] = None; "
            "from rewardkit.adapters.nemo_gym import main; "
            f"sys.exit(main([{str(CONFIG)!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 2
    assert "rewardkit[nemo-gym]" in done.stderr and "Traceback" not in done.stderr
