"""An OpenAI-compatible judge that grades by the rule, for the judge-probe tests.

``python grading_stub.py [--gullible TEXT]... [--mute TEXT]...`` listens on loopback and
prints ``listening on http://127.0.0.1:PORT``. To each chat completion it answers
``Score: 10`` when the response block of the message (llm_judge's data block) is the
reference block's text, or ends with "the answer is <reference>", or is one of the
``--gullible`` texts (a judge fooled by that probe); ``--mute`` texts get an answer
without a score (a grading that fails); everything else gets ``Score: 0``. A
checklist request gets a verdict line per criterion ("says WORD": met when the response
holds WORD). A pairwise request (``<first-`` and ``<second-`` blocks) is won by the
response holding the reference (both or neither: a tie), or always by the first with
``--first-wins`` (a judge with a position bias). ``GET
/requests`` answers how many chat completions it has answered; ``GET /arrivals``, when
each arrived (CLOCK_MONOTONIC, one clock for every process of the machine) and its body.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BLOCK = re.compile(r"<(response|reference|first|second)-([0-9a-f]{16})>\n(.*?)\n</\1-\2>",
                   re.S)


def normal(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


def check(message: str, response: str) -> str:
    """A checklist's verdicts: "says WORD" (or "(pitfall) says WORD") is met when the
    response holds WORD."""
    criteria = re.findall(r"(?m)^(\d+)\. (?:\(pitfall\) )?says (\w+)$",
                          message.split("Checklist (", 1)[1])
    said = response.lower()
    return "I checked each one.\n" + "\n".join(
        f"{n}: {'yes' if word.lower() in said else 'no'}" for n, word in criteria)


def compare(message: str, first_wins: bool) -> str:
    """A pairwise verdict: the response that holds the reference wins (both or neither: a
    tie); with ``first_wins``, a judge that always prefers the first response."""
    blocks = {m.group(1): m.group(3) for m in BLOCK.finditer(message)}
    if first_wins:
        return "The first reads better.\nWinner: first"
    reference = normal(blocks.get("reference", ""))
    first, second = (reference in normal(blocks.get(k, "")) for k in ("first", "second"))
    return "Compared.\nWinner: " + ("tie" if first == second else
                                     "first" if first else "second")


def grade(message: str, gullible: set[str], mute: set[str]) -> str:
    blocks = {m.group(1): m.group(3) for m in BLOCK.finditer(message)}
    response, reference = blocks.get("response", ""), blocks.get("reference", "")
    if response in mute:
        return "I cannot grade this."
    if "Checklist (" in message:
        return check(message, response)
    if response in gullible:
        return "Looks like a solid start.\nScore: 10"
    said = normal(response)
    if reference and (said == normal(reference) or
                      said.endswith(f"the answer is {normal(reference)}")):
        return "Correct.\nScore: 10"
    return "Wrong.\nScore: 0"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gullible", action="append", default=[])
    parser.add_argument("--mute", action="append", default=[])
    parser.add_argument("--first-wins", action="store_true")
    args = parser.parse_args()
    gullible, mute = set(args.gullible), set(args.mute)
    asked: list[str] = []
    arrivals: list[tuple[float, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *a: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            with lock:
                arrivals.append((time.monotonic(), body))
            message = body["messages"][-1]["content"]
            content = compare(message, args.first_wins) if "<first-" in message else \
                grade(message, gullible, mute)
            answer = {"choices": [{"message": {"role": "assistant", "content": content},
                                   "finish_reason": "stop"}]}
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            with lock:
                asked.append(message)

        def do_GET(self) -> None:  # /requests: how many chat completions were answered
            with lock:
                data = json.dumps({"requests": len(asked)} if self.path != "/arrivals"
                                  else {"arrivals": arrivals}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


class Stub:
    """This server running in a subprocess (for the tests): ``base_url`` is its API root."""

    def __init__(self, *extra: str) -> None:
        self.process = subprocess.Popen([sys.executable, __file__, *extra],
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("listening on "):
            self.close()
            raise RuntimeError(f"the grading stub did not start: {line!r}")
        self.base_url = line.split("listening on ", 1)[1].strip() + "/v1"

    def requests_answered(self) -> int:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/requests") as got:
            count: int = json.load(got)["requests"]
        return count

    def arrivals(self) -> list[tuple[float, Any]]:
        """(when, body) of each chat completion that arrived, in order."""
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/arrivals") as got:
            return [(when, body) for when, body in json.load(got)["arrivals"]]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


if __name__ == "__main__":
    main()
