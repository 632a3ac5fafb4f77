"""``rewardkit serve --instances N``: N real server processes on one port (SO_REUSEPORT),
supervised by the parent; real HTTP on 127.0.0.1, fresh connections (so the kernel spreads
them over the instances). Every wait is bounded and polled, never a fixed sleep that a
busy machine could outrun."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_serve import FAULTY_CLI, GOOD, REQUEST_TIMEOUT, START_TIMEOUT, Server, request
from test_serve import start as start_serve

CONFIG = """
rewards:
  fmt:
    reward: soft_format
  length:
    reward: good
    weight: 0.1
"""
SLOW = """
rewards:
  slow:
    reward: slow_async
    params: {delay: 6.0}
"""


def start(tmp_path: Path, config: str, *args: str) -> Server:
    """``rewardkit serve`` once the parent has written the port file: every instance
    accepts connections (given twice a lone server's start time)."""
    return start_serve(tmp_path, config, *args, timeout=START_TIMEOUT * 2)


def health(url: str) -> dict[str, Any]:
    status, _, body = request(url + "/health")
    assert status == 200, body
    answer: dict[str, Any] = json.loads(body)
    return answer


def poll(what: str, check: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {seconds:g} s: {what}")
        time.sleep(0.05)


def pids_of(url: str, instances: int) -> dict[int, int]:
    """Each instance's pid, from /health over fresh connections until every one answered."""
    seen: dict[int, int] = {}

    def all_seen() -> bool:
        h = health(url)
        seen[h["instance"]] = h["pid"]
        return len(seen) == instances

    poll(f"/health answered by each of {instances} instances", all_seen)
    return seen


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_instances_share_one_port_and_score_as_one_service(tmp_path: Path) -> None:
    server = start(tmp_path, CONFIG, "--instances", "2")
    try:
        rows = [{"prompt": "q", "completion": GOOD if i % 2 else f"plain {i}"}
                for i in range(40)]
        samples = tmp_path / "rows.jsonl"
        samples.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        subprocess.run([sys.executable, FAULTY_CLI, "score", str(tmp_path / "rewards.yaml"),
                        str(samples), "--out", str(tmp_path / "out.jsonl"), "--json"],
                       check=True, capture_output=True, timeout=120)
        expected = [json.loads(line)["reward"]
                    for line in (tmp_path / "out.jsonl").read_text().splitlines()]
        answered: list[tuple[int, str | None, Any]] = []
        lock = threading.Lock()

        def post(i: int) -> None:
            status, headers, body = request(server.url + "/score", {"samples": [rows[i]]})
            with lock:
                answered.append((status, headers.get("X-Rewardkit-Instance"),
                                 (i, json.loads(body))))

        threads = [threading.Thread(target=post, args=(i,)) for i in range(len(rows))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert len(answered) == len(rows)
        assert {status for status, _, _ in answered} == {200}
        # fresh connections: the kernel gave some to each instance
        assert {instance for _, instance, _ in answered} == {"0", "1"}
        for _, _, (i, body) in answered:
            assert body["rewards"] == [expected[i]], (i, body)
        h = health(server.url)
        assert h["instances"] == 2 and h["instance"] in (0, 1) and h["status"] == "ok"
    finally:
        assert server.stop() == 0


def reaped(pid: int) -> bool:
    """``pid`` is gone for good: its parent has reaped it. A process's thread-group
    leader shows as a zombie while its other threads may still be exiting, with the
    descriptors they share (a listening socket among them) still open; the parent reaps
    it only after the last one has gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_killed_instance_is_started_again_while_the_other_answers(tmp_path: Path) -> None:
    server = start(tmp_path, CONFIG, "--instances", "2")
    try:
        before = pids_of(server.url, 2)
        os.kill(before[0], signal.SIGKILL)
        # until it has exited, its socket still takes connections, which die with it (a
        # connection in its accept queue is reset): the requests below go after that.
        # Reaped, not a zombie: its leader is one while its other threads still hold the
        # socket open (a clean-clone run met that reset once)
        poll("the killed instance reaped", lambda: reaped(before[0]))
        statuses: list[int] = []

        def restarted() -> bool:
            # the port keeps answering meanwhile: the dead socket left the port's group
            status, _, _ = request(server.url + "/score",
                                      {"samples": [{"prompt": "q", "completion": GOOD}]})
            statuses.append(status)
            h = health(server.url)
            return h["instance"] == 0 and h["pid"] != before[0]

        poll("instance 0 answering again with a new pid", restarted, seconds=90)
        assert set(statuses) == {200}, statuses
        assert alive(before[1])  # the other instance was left alone
    finally:
        code = server.stop()
    _, err = server.proc.communicate(timeout=10)
    assert code == 0, err
    assert f"instance 0 (pid {before[0]}) exited (-9)" in err and "starting it again" in err


def test_sigterm_drains_every_instance_then_the_parent_exits_0(tmp_path: Path) -> None:
    server = start(tmp_path, SLOW, "--instances", "2")
    pids = pids_of(server.url, 2)
    answers: list[tuple[int, str | None]] = []
    lock = threading.Lock()

    def post(i: int) -> None:
        status, headers, _ = request(server.url + "/score", {"samples": [
            {"prompt": "q", "completion": f"slow {i}"}]})
        with lock:
            answers.append((status, headers.get("X-Rewardkit-Instance")))

    threads = [threading.Thread(target=post, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    busy: set[int] = set()

    def both_busy() -> bool:
        h = health(server.url)
        if h["in_flight"] + h["queued"]:
            busy.add(h["instance"])
        return busy == {0, 1}

    poll("both instances scoring a slow request", both_busy, seconds=5)
    server.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(timeout=60)
    server.proc.wait(timeout=60)
    _, err = server.proc.communicate(timeout=10)
    # every request in flight on either instance was answered, then all exited 0
    assert len(answers) == 12, answers
    assert {status for status, _ in answers} == {200}, answers
    assert {instance for _, instance in answers} == {"0", "1"}
    assert server.proc.returncode == 0, err
    assert not any(alive(pid) for pid in pids.values())
    assert "SIGTERM: draining 2 instance(s)" in err


def test_a_killed_parent_leaves_no_instance_holding_the_port(tmp_path: Path) -> None:
    server = start(tmp_path, CONFIG, "--instances", "2")
    pids = pids_of(server.url, 2)
    server.proc.kill()
    server.proc.wait(timeout=10)
    poll("every instance gone after its parent was killed",
         lambda: not any(alive(pid) for pid in pids.values()))


@pytest.mark.parametrize("value", ["0", "257", "-1"])
def test_instances_out_of_range_are_refused(tmp_path: Path, value: str) -> None:
    cfg = tmp_path / "rewards.yaml"
    cfg.write_text(CONFIG, encoding="utf-8")
    proc = subprocess.run([sys.executable, FAULTY_CLI, "serve", str(cfg), "--instances",
                           value], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "--instances must be from 1 to 256" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_slimes_pooled_client_with_the_token_in_its_url_reaches_every_instance(
        tmp_path: Path) -> None:
    """The trainers' client (aiohttp: slime's one session of at most 64 kept-alive
    connections) with the token in the URL, as docs/serve.md says to pass it: 256 samples
    at once are all answered 200 over both instances (each checks the token); without
    the token, 401 from each."""
    aiohttp = pytest.importorskip("aiohttp")
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n", encoding="utf-8")
    server = start(tmp_path, CONFIG, "--instances", "2", "--token-file", str(token_file),
                   "--queue", "256")
    host = server.url.removeprefix("http://")
    sample = {"prompt": "q", "response": GOOD, "label": None}

    async def burst(url: str, n: int) -> list[tuple[int, str | None]]:
        connector = aiohttp.TCPConnector(limit=64)
        timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT * 2)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

            async def one() -> tuple[int, str | None]:
                async with session.post(url, json=sample) as resp:
                    await resp.read()
                    return resp.status, resp.headers.get("X-Rewardkit-Instance")

            return await asyncio.gather(*(one() for _ in range(n)))

    try:
        with_token = asyncio.run(burst(f"http://rk:s3cret-token@{host}/slime", 256))
        without = [asyncio.run(burst(f"http://{host}/slime", 1))[0] for _ in range(20)]
    finally:
        assert server.stop() == 0
    assert {status for status, _ in with_token} == {200}
    assert {instance for _, instance in with_token} == {"0", "1"}
    assert {status for status, _ in without} == {401}
    assert {instance for _, instance in without} == {"0", "1"}


def test_a_port_another_program_listens_on_is_refused_in_one_line(tmp_path: Path) -> None:
    """Another program's socket (no SO_REUSEPORT) on the port: the instances cannot share
    it, and the service says so at once (exit 2, no instance started, no traceback)."""
    cfg = tmp_path / "rewards.yaml"
    cfg.write_text(CONFIG, encoding="utf-8")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([sys.executable, FAULTY_CLI, "serve", str(cfg), "--instances",
                               "2", "--port", str(port)], capture_output=True, text=True,
                              timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"cannot bind 127.0.0.1:{port}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "instance 0" not in proc.stderr
