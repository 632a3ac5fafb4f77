"""The output of ``rewardkit score`` (local engine) under attack: the lock on ``--out``
and the output-path rules, checked before anything is scored. The Ray engine keeps the
same rules (tests/ray/test_ray_engine.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
FAULTY_CLI = str(HERE / "faulty_cli.py")


def test_a_second_run_on_the_same_out_refuses_while_the_first_runs(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  e: {reward: echo_after}\n")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"completion": str(i), "v": i, "sleep": 1}) + "\n"
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
