"""A small OpenAI-compatible chat server for a local transformers causal LM.

``python -m rewardkit_judge.chat_server --model DIR [--port 8000]`` answers
``POST /v1/chat/completions`` (messages rendered with the tokenizer's chat template,
greedy at temperature 0, sampled otherwise, ``max_tokens`` honoured) and
``GET /v1/models``. It prints ``listening on http://HOST:PORT`` once ready. One request
generates at a time; requests wait their turn on a thread each.

It serves a judge where vLLM is not available (no GPU, a laptop, CI) and is what the
tests of ``llm_judge`` talk to; for throughput, use ``vllm serve``. ``--exit-after N``
makes the process die abruptly (no reply, connections cut) when request N+1 arrives:
a server crash on demand, to check that clients survive one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatModel:
    """A causal LM and its tokenizer, generating one chat completion at a time."""

    def __init__(self, path: str, device: str = "cpu") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        self.tokenizer: Any = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model: Any = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        self.model.to(device).eval()  # type: ignore[arg-type]
        self.device = device
        self._lock = threading.Lock()

    def complete(self, messages: list[dict[str, Any]], max_tokens: int,
                 temperature: float) -> tuple[str, int, int, str]:
        """(text, prompt tokens, completion tokens, finish reason)."""
        tok = self.tokenizer
        prompt_ids: Any = tok.apply_chat_template(messages, add_generation_prompt=True,
                                             return_tensors="pt", return_dict=True)
        inputs = {k: v.to(self.device) for k, v in prompt_ids.items()}
        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens,
                                  "pad_token_id": tok.pad_token_id or tok.eos_token_id}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature)
        else:
            kwargs.update(do_sample=False)
        with self._lock, self._torch.no_grad():
            out = self.model.generate(**inputs, **kwargs)
        n_prompt = inputs["input_ids"].shape[1]
        new = out[0, n_prompt:].tolist()
        eos = tok.eos_token_id
        finish = "stop" if eos in new else "length"
        if eos in new:
            new = new[: new.index(eos)]
        text: str = tok.decode(new, skip_special_tokens=True)
        return text, int(n_prompt), len(new), finish


def send_json(handler: BaseHTTPRequestHandler, status: int, body: dict[str, Any]) -> None:
    """Answer the request ``handler`` is serving with ``body`` as JSON (keep-alive safe:
    the length is sent)."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def make_handler(model: ChatModel, name: str, exit_after: int | None) -> type:
    served = {"count": 0}
    count_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet by default
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            send_json(self, status, body)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list",
                                 "data": [{"id": name, "object": "model", "owned_by": "local"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            with count_lock:
                served["count"] += 1
                if exit_after is not None and served["count"] > exit_after:
                    os._exit(3)  # a crash: no reply, every connection cut
            try:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                messages = body["messages"]
                if not isinstance(messages, list) or not messages:
                    raise ValueError("messages must be a non-empty list")
                max_tokens = int(body.get("max_tokens") or 64)
                temperature = float(body.get("temperature") or 0.0)
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": {"message": f"bad request: {exc}"}})
                return
            try:
                text, n_prompt, n_new, finish = model.complete(messages, max_tokens,
                                                               temperature)
            except Exception as exc:
                self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
                return
            self._send(200, {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", name),
                "choices": [{"index": 0, "finish_reason": finish,
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_new,
                          "total_tokens": n_prompt + n_new},
            })

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rewardkit_judge.chat_server",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="local model directory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0: any free port")
    parser.add_argument("--served-model-name", default=None,
                        help="name reported by /v1/models (default: the directory name)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--exit-after", type=int, default=None,
                        help="die abruptly when this many requests have been served")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.model):
        print(f"error: {args.model} is not a local model directory", file=sys.stderr)
        return 2
    model = ChatModel(args.model, args.device)
    name = args.served_model_name or os.path.basename(os.path.normpath(args.model))
    server = ThreadingHTTPServer((args.host, args.port),
                                 make_handler(model, name, args.exit_after))
    server.daemon_threads = True
    host, port = args.host, server.server_address[1]
    print(f"listening on http://{host}:{port}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
