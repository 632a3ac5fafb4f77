"""Hostile answers to code_execution are contained: right statuses, nothing leaks, the
sandbox keeps serving, and no process of theirs survives (checked in /proc).

Each hostile program is written so that its test *passes only if the attack worked*:
a value of 0 with status ok means contained and scored as a wrong answer.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator

import pytest

from rewardkit import RewardSet, Sample, Status

SECRET = "rk-test-secret-7f3a"


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    """A TCP server on this host's loopback; records every connection it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted: list[str] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, peer = server.accept()
            except TimeoutError:
                continue
            accepted.append(str(peer))
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def hostile_samples(port: int) -> dict[str, Sample]:
    empty_case = [{"stdin": "", "stdout": "escaped\n"}]
    programs = {
        "infinite_loop": ("while True:\n    pass", empty_case),
        "sleeping_forever": ("import time\ntime.sleep(3600)", empty_case),
        "fork_bomb": (
            "import os\nwhile True:\n    try:\n        os.fork()\n"
            "    except OSError:\n        pass",
            empty_case,
        ),
        "memory_bomb": ("blocks = [bytearray(2 ** 30) for _ in range(64)]", empty_case),
        "shadow_file": ("def leak():\n    return open('/etc/shadow').read()",
                        ["assert leak()"]),
        "env_secret": (
            "import os\ndef leak():\n    return os.environ.get('RK_CODE_TEST_SECRET')",
            [f"assert leak() == {SECRET!r}"],
        ),
        "network": (
            "import socket\ndef leak():\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=1).close()\n"
            "    return True",
            ["assert leak()"],
        ),
        "daemon_left_behind": (
            "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(3600)\n"
            "print('parent done')",
            [{"stdin": "", "stdout": "parent done\n"}],
        ),
        "output_flood": ("while True:\n    print('x' * 65536)", empty_case),
    }
    return {
        name: Sample(prompt=name, completion=fenced(code), reference=reference)
        for name, (code, reference) in programs.items()
    }


@pytest.mark.usefixtures("no_leftovers")
def test_hostile_programs_are_contained(
    listener: tuple[int, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RK_CODE_TEST_SECRET", SECRET)
    port, accepted = listener
    rs = RewardSet.from_dict(
        {"rewards": {"code": {"reward": "code_execution",
                              "params": {"timeout_s": 1, "memory_mb": 256}}}}
    )
    samples = hostile_samples(port)
    result = rs.score(list(samples.values()))
    scores = dict(zip(samples, result.scores("code"), strict=True))
    # a correct program that leaves a daemon behind keeps its score; the daemon is
    # killed with the task (no_leftovers checks /proc)
    assert scores.pop("daemon_left_behind").value == 1.0
    for name, score in scores.items():
        assert (score.status, score.value) == (Status.OK, 0.0), (name, score)
    assert "timeout" in scores["infinite_loop"].reason
    assert "timeout" in scores["sleeping_forever"].reason
    assert "memory" in scores["memory_bomb"].reason
    assert "PermissionError" in scores["shadow_file"].reason
    assert "AssertionError" in scores["env_secret"].reason
    # the host's listener is out of reach: the sandbox's namespace has only its own
    # loopback, where nothing listens on that port (or, without a namespace, seccomp's EPERM)
    assert any(
        marker in scores["network"].reason
        for marker in ("Connection refused", "Network is unreachable", "PermissionError",
                       "Operation not permitted")
    ), scores["network"].reason
    assert "output_limit" in scores["output_flood"].reason
    assert accepted == []

    # the pool keeps serving, on every slot
    good = Sample(completion=fenced("print(6 * 7)"), reference=[{"stdin": "", "stdout": "42"}])
    assert rs.score([good] * 4).values("code") == [1.0] * 4


@pytest.mark.usefixtures("no_leftovers")
def test_a_hostile_program_does_not_cost_its_neighbours_their_scores() -> None:
    rs = RewardSet.from_dict(
        {"rewards": {"code": {"reward": "code_execution", "params": {"timeout_s": 1}}}}
    )
    bomb = Sample(completion=fenced("import os\nwhile True:\n    os.fork()"),
                  reference=["assert True"])
    good = Sample(completion=fenced("def f():\n    return 1"), reference=["assert f() == 1"])
    values = rs.score([good, bomb, good, bomb, good]).values("code")
    assert values == [1.0, 0.0, 1.0, 0.0, 1.0]


def test_the_trainer_environment_is_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    # a pool of its own, started after the secret entered this process's environment
    rs = RewardSet.from_dict(
        {"rewards": {"code": {"reward": "code_execution", "params": {"concurrency": 5}}}}
    )
    program = "import os\ndef leak():\n    return os.environ.get('AWS_SECRET_ACCESS_KEY')"
    probe = Sample(completion=fenced(program), reference=[f"assert leak() == {SECRET!r}"])
    score = rs.score([probe]).scores("code")[0]
    assert (score.status, score.value) == (Status.OK, 0.0)
    assert os.environ["AWS_SECRET_ACCESS_KEY"] == SECRET
