"""A rewardkit config as a NeMo Gym resources server.

NeMo Gym's agents POST a finished rollout to a resources server's ``/verify``: the body
carries ``responses_create_params`` (the OpenAI Responses request: ``input`` is the prompt,
a string or a list of messages) and ``response`` (the Responses API answer: ``output``
holds ``message``, ``function_call``, ``function_call_output`` and ``reasoning`` items),
beside the dataset row's own fields. The answer is the request with ``reward`` (a number)
and, for several objectives, ``reward_components`` (objective name to number) added.
``/seed_session`` starts a rollout (nothing to set up here: ``{}``) and
``GET /reverify_mode`` says whether a rollout can be verified again (``stateless``).

How a request becomes a rewardkit :class:`~rewardkit.types.Sample`
(:func:`sample_of`): ``input`` is the prompt (``developer`` turns as ``system``);
``output`` the completion as chat messages (assistant text, assistant ``tool_calls``,
``tool`` results; reasoning items are left out); the field named ``reference_field``
(default ``expected_answer``) the reference; every other top-level field, and
``tools``, metadata. ``reward`` is the RewardSet's total; ``reward_components`` each
component's value (0 where it did not apply), each also a top-level field where the
name is free (NeMo Gym's aggregate metrics read top-level numbers). A failed grading
(a component or the total ``None``) answers ``fallback`` (default 0) in its place, with
``rewardkit_failed: true`` and each component's status and reason in
``rewardkit_scores``: a NeMo Gym reward is a number, so the failure is said, not hidden.

Shapes read from NVIDIA-NeMo/Gym at commit 07d6b0d07b22fcf530b4c211dae2ee23100428e4
(``nemo_gym/base_resources_server.py``: ``BaseVerifyRequest``,
``BaseMultiRewardVerifyResponse``, ``SimpleResourcesServer.setup_webserver``).
FastAPI and uvicorn are imported when the server is built, not before.

Run it: ``python -m rewardkit.adapters.nemo_gym CONFIG --port 8000`` (``--port 0
--port-file F``: a free port, written to F once listening).
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rewardkit.adapters._common import reward_set_of
from rewardkit.reward_set import RewardSet
from rewardkit.types import Sample

#: the dataset field NeMo Gym's own servers keep the answer in
DEFAULT_REFERENCE_FIELD = "expected_answer"
_ROLLOUT_KEYS = ("responses_create_params", "response")
_RESERVED = frozenset({"reward", "reward_components", "rewardkit_scores", "rewardkit_failed"})


class RequestError(ValueError):
    """A ``/verify`` body that is not a NeMo Gym verify request (answered 422)."""


def _text_of(content: Any) -> str:
    """A Responses API message content (a string, or parts with ``text``) as text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(part.get("text") or part.get("refusal") or "")
                       for part in content if isinstance(part, Mapping))
    raise RequestError(f"message content must be text or a list of parts, got "
                       f"{type(content).__name__}")


def _prompt_of(params: Mapping[str, Any]) -> str | list[dict[str, Any]]:
    prompt = params.get("input", "")
    messages: list[dict[str, Any]] = []
    if params.get("instructions"):
        messages.append({"role": "system", "content": str(params["instructions"])})
    if isinstance(prompt, str):
        if not messages:
            return prompt
        return [*messages, {"role": "user", "content": prompt}]
    if not isinstance(prompt, Sequence):
        raise RequestError("responses_create_params.input must be a string or a list of "
                           "messages")
    for item in prompt:
        if not isinstance(item, Mapping):
            raise RequestError("responses_create_params.input holds a non-object item")
        if item.get("type", "message") != "message" or "role" not in item:
            messages.extend(_turns_of([item]))
            continue
        role = "system" if item["role"] == "developer" else str(item["role"])
        messages.append({"role": role, "content": _text_of(item.get("content"))})
    return messages


def _turns_of(output: Sequence[Any]) -> list[dict[str, Any]]:
    """Responses API output items as chat messages: consecutive text and function calls
    of the assistant make one assistant turn; a call's output a ``tool`` turn."""
    turns: list[dict[str, Any]] = []

    def assistant() -> dict[str, Any]:
        if not turns or turns[-1]["role"] != "assistant":
            turns.append({"role": "assistant", "content": ""})
        return turns[-1]

    for item in output:
        if not isinstance(item, Mapping):
            raise RequestError("response.output holds a non-object item")
        kind = item.get("type")
        if kind == "message":
            turn = assistant()
            turn["content"] += _text_of(item.get("content"))
        elif kind == "function_call":
            arguments = item.get("arguments", "")
            assistant().setdefault("tool_calls", []).append({
                "id": str(item.get("call_id") or item.get("id") or ""),
                "type": "function",
                "function": {"name": str(item.get("name", "")),
                             "arguments": arguments if isinstance(arguments, str)
                             else json.dumps(arguments)}})
        elif kind == "function_call_output":
            output_value = item.get("output", "")
            turns.append({"role": "tool", "tool_call_id": str(item.get("call_id", "")),
                          "content": output_value if isinstance(output_value, str)
                          else json.dumps(output_value)})
        # reasoning and other items carry no answer
    return turns


def sample_of(body: Mapping[str, Any],
              reference_field: str = DEFAULT_REFERENCE_FIELD) -> Sample:
    """One ``/verify`` body as a Sample (see the module docstring); RequestError when it
    is not one."""
    if not isinstance(body, Mapping):
        raise RequestError("the body must be a JSON object")
    missing = [key for key in _ROLLOUT_KEYS if not isinstance(body.get(key), Mapping)]
    if missing:
        raise RequestError(f"missing or not an object: {', '.join(missing)}")
    params = body["responses_create_params"]
    output = body["response"].get("output", [])
    if not isinstance(output, Sequence) or isinstance(output, str):
        raise RequestError("response.output must be a list of output items")
    metadata = {k: v for k, v in body.items() if k not in _ROLLOUT_KEYS
                and k != reference_field}
    if params.get("tools"):
        metadata.setdefault("tools", params["tools"])
    return Sample(prompt=_prompt_of(params), completion=_turns_of(output),
                  reference=body.get(reference_field), metadata=metadata)


def verify(reward_set: RewardSet, body: Mapping[str, Any],
           reference_field: str = DEFAULT_REFERENCE_FIELD,
           fallback: float = 0.0) -> dict[str, Any]:
    """The ``/verify`` answer for one body: the body with ``reward``,
    ``reward_components`` and, on a failed grading, ``rewardkit_failed`` added."""
    result = reward_set.score([sample_of(body, reference_field)])[0]
    components: dict[str, float] = {}
    failed = result.total is None
    for name, score in result.scores.items():
        value = score.value
        if score.status == "skipped":
            value = 0.0
        elif value is None or not math.isfinite(value):
            failed = True
            value = fallback
        components[name] = float(value)
    answer = dict(body)
    answer["reward"] = fallback if result.total is None else float(result.total)
    answer["reward_components"] = components
    # NeMo Gym's metrics (and verifiers' NeMo Gym tasks) read top-level numbers only:
    # each component there too, unless the name is taken by a field of the request
    answer.update({name: value for name, value in components.items()
                   if name not in answer and name not in _RESERVED})
    answer["rewardkit_scores"] = {name: {"status": s.status, "reason": s.reason}
                                  for name, s in result.scores.items()}
    if failed:
        answer["rewardkit_failed"] = True
    return answer


def create_app(config: RewardSet | str | Path | Mapping[str, Any],
               reference_field: str = DEFAULT_REFERENCE_FIELD, fallback: float = 0.0) -> Any:
    """A FastAPI app serving ``/verify``, ``/seed_session`` and ``/reverify_mode``."""
    try:
        from fastapi import FastAPI, Request
        from fastapi.responses import JSONResponse
    except ImportError as exc:
        raise RuntimeError("the NeMo Gym adapter serves through FastAPI: "
                           "pip install 'rewardkit[nemo-gym]' (fastapi, uvicorn)") from exc
    from starlette.concurrency import run_in_threadpool

    reward_set = reward_set_of(config)
    app = FastAPI(title="rewardkit NeMo Gym resources server")

    @app.post("/seed_session")
    async def seed_session() -> dict[str, Any]:
        return {}

    @app.get("/reverify_mode")
    async def reverify_mode() -> str:
        return "stateless"

    async def verify_route(request: Request) -> Any:
        try:
            body = json.loads(await request.body())
            return await run_in_threadpool(verify, reward_set, body, reference_field,
                                           fallback)
        except json.JSONDecodeError as exc:
            return JSONResponse({"detail": f"the body is not JSON: {exc}"}, status_code=400)
        except RequestError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=422)
        except Exception as exc:  # a bug: one line, no traceback
            return JSONResponse({"detail": f"scoring failed: {type(exc).__name__}: {exc}"},
                                status_code=500)

    # this module's annotations are strings FastAPI cannot resolve (Request is imported
    # here, lazily): hand it the class
    verify_route.__annotations__["request"] = Request
    app.post("/verify")(verify_route)
    return app


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rewardkit.adapters.nemo_gym",
        description="Serve a rewardkit config as a NeMo Gym resources server.")
    parser.add_argument("config", help="the rewardkit config file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0: a free port")
    parser.add_argument("--port-file", type=Path,
                        help="write the bound port here once listening (with --port 0)")
    parser.add_argument("--reference-field", default=DEFAULT_REFERENCE_FIELD,
                        help="the request field holding the reference "
                             f"(default {DEFAULT_REFERENCE_FIELD})")
    parser.add_argument("--fallback", type=float, default=0.0,
                        help="the reward a failed grading answers (flagged rewardkit_failed)")
    args = parser.parse_args(argv)
    from rewardkit.config import ConfigError
    try:
        app = create_app(args.config, args.reference_field, args.fallback)
        import uvicorn
        listener = socket.create_server((args.host, args.port))
    except (ConfigError, OSError, RuntimeError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))

    def stop(signum: int, frame: Any) -> None:
        server.should_exit = True

    # SIGTERM / SIGINT drain and exit 0, also when they come before uvicorn listens for
    # them (uvicorn raises a signal it handled again once done: this handler takes it)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)
    port = listener.getsockname()[1]
    if args.port_file:
        args.port_file.write_text(f"{port}\n")
    print(f"NeMo Gym resources server for {args.config} on http://{args.host}:{port}",
          file=sys.stderr, flush=True)
    server.run(sockets=[listener])
    return 0


if __name__ == "__main__":
    sys.exit(main())
