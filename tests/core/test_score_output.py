"""The output of ``rewardkit score`` (local engine) under attack: the lock on ``--out``
and the output-path rules, checked before anything is scored. The Ray engine keeps the
same rules (tests/ray/test_ray_engine.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent
FAULTY_CLI = str(HERE / "faulty_cli.py")


def test_a_second_run_on_the_same_out_refuses_while_the_first_runs(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  e: {reward: echo_after}\n")
    src = tmp_path / "in.jsonl"
    # the last row waits for the gate, opened once the second run has been refused: the
    # first run is still running then however slow the machine (with rows of 1 s each
    # it could finish before the second run had started, under load or pytest -n 2)
    gate = tmp_path.parent / f"{tmp_path.name}.gate"
    src.write_text("".join(json.dumps({"completion": str(i), "v": i, "sleep": 0.2,
                                       **({"gate": str(gate)} if i == 5 else {})}) + "\n"
                           for i in range(6)))
    out = tmp_path / "out.jsonl"
    first = subprocess.Popen([sys.executable, FAULTY_CLI, "score", str(cfg), str(src),
                              "--out", str(out), "--batch-size", "2"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".out.jsonl.*.partial")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first.poll() is None, first.stderr.read()  # type: ignore[union-attr]
    second = subprocess.run([sys.executable, FAULTY_CLI, "score", str(cfg), str(src),
                             "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert second.returncode == 2
    assert "is being written by another run" in second.stderr
    gate.touch()
    _, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    assert [json.loads(x)["reward"] for x in out.read_text().splitlines()] == \
        [float(i) for i in range(6)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "in.jsonl", "out.jsonl"]


def test_a_null_completion_is_reported_not_scored_as_empty(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  g: {reward: good}\n")
    src = tmp_path / "in.jsonl"
    src.write_text('{"completion": "abc"}\n{"completion": null}\n')
    out = tmp_path / "out.jsonl"
    proc = subprocess.run([sys.executable, FAULTY_CLI, "score", str(cfg), str(src), "--out",
                           str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"{src}:2: skipped: 'completion' is null" in proc.stderr
    assert len(out.read_text().splitlines()) == 1


#: ``rewardkit score`` with a real SIGINT (Ctrl-C) sent to itself right after one step of
#: setting up the output: where a Ctrl-C lands once in many tries, made to land every time
INTERRUPTED_SCORE = """
import fcntl, os, signal, sys, tempfile
from rewardkit.cli import main

# Ctrl-C as a terminal's user sends it to a process started from a shell: the default
# handler, the signal not blocked (a test runner's ignored or blocked SIGINT is inherited)
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
point = sys.argv.pop(1)
fired = []

def then_ctrl_c(fn, wanted):
    def wrapped(*args, **kwargs):
        result = fn(*args, **kwargs)
        if not fired and wanted(*args, **kwargs):
            fired.append(point)
            signal.raise_signal(signal.SIGINT)
        return result
    return wrapped

if point == "lock":  # the lock file open and locked, not yet held by the run
    fcntl.flock = then_ctrl_c(fcntl.flock,
                              lambda fd, op: op == fcntl.LOCK_EX | fcntl.LOCK_NB)
elif point == "partial":  # the hidden partial file created, its name not yet kept
    tempfile.mkstemp = then_ctrl_c(tempfile.mkstemp,
                                   lambda **kw: kw.get("suffix") == ".partial")
elif point == "mode":  # the partial file's mode set, its file object not yet made
    os.fchmod = then_ctrl_c(os.fchmod, lambda fd, mode: True)
code = main()
print("fired:", ",".join(fired), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize("point", ["lock", "partial", "mode"])
def test_a_ctrl_c_while_the_output_is_set_up_leaves_no_file(tmp_path: Path,
                                                            point: str) -> None:
    """A Ctrl-C between creating the lock or the ``.OUT.XXXX.partial`` file and the
    ``try`` that removes them left both behind (1 in 15 tries): it is held back until
    the run can clean up, then ends the run (exit 130) with nothing left beside --out."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  f: {reward: soft_format}\n")
    src = tmp_path / "in.jsonl"
    src.write_text('{"completion": "a"}\n')
    proc = subprocess.run([sys.executable, "-c", INTERRUPTED_SCORE, point, "score", str(cfg),
                           str(src), "--out", str(tmp_path / "out.jsonl")],
                          capture_output=True, text=True, timeout=60)
    assert f"fired: {point}" in proc.stderr, proc.stderr
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml", "in.jsonl"]
