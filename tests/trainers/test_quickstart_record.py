"""The quickstart reproduces, says how long it took and on what, and its record is one
command (``make demo-record``: trainers/scripts/record_quickstart.py)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

from backend_venvs import ROOT
from rewardkit_trainers.cli import run as cli_run
from rewardkit_trainers.launch.hardware import MAX_CPU_THREADS, CpuPlan, cpu_plan

SCRIPT = ROOT / "trainers" / "scripts" / "record_quickstart.py"


def _config(tmp_path: Path, name: str) -> Path:
    config = tmp_path / f"{name}.yaml"
    config.write_text((ROOT / "examples" / "quickstart.yaml").read_text().replace(
        "output_dir: ../runs/quickstart", f"output_dir: {tmp_path / name}"))
    return config


def test_the_quickstart_reproduces_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]):
    """Same seed, same machine: the same curves to the last digit (tolerance zero), and
    the tiny model trains on one thread whatever the load (a thread count picked from
    the load would round differently on a busier machine)."""
    monkeypatch.delenv("REWARDKIT_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    curves = []
    for run in ("a", "b"):
        assert cli_run("train", [str(_config(tmp_path, run)), "--max-steps", "4"]) == 0
        out = capsys.readouterr().out
        assert re.search(r"done in \d+s \(\d+s training on \d+ cores?, 1 "
                         r"thread, load \d+\.\d\), 4 steps", out), out
        curves.append((tmp_path / run / "reward_curves.csv").read_text())
    assert curves[0] == curves[1]
    assert len(curves[0].splitlines()) == 5


def test_threads_follow_the_free_cores_and_a_users_choice():
    assert cpu_plan({}, cores=2, load=0.1).threads == 2      # a quiet machine: every core
    assert cpu_plan({}, cores=2, load=1.2).threads == 1      # one core busy elsewhere
    assert cpu_plan({}, cores=2, load=9.5).threads == 1      # never fewer than one
    assert cpu_plan({}, cores=64, load=0.0).threads == MAX_CPU_THREADS
    assert cpu_plan({}, cores=64, load=0.0, tiny=True).threads == 1   # the quickstart's
    assert cpu_plan({"REWARDKIT_THREADS": "2"}, cores=2, load=0, tiny=True).threads == 2
    assert cpu_plan({"OMP_NUM_THREADS": "3"}, cores=2, load=9).threads == 3
    assert cpu_plan({"REWARDKIT_THREADS": "1", "OMP_NUM_THREADS": "3"}, cores=2,
                    load=0).threads == 1
    with pytest.raises(ValueError, match="REWARDKIT_THREADS='many'"):
        cpu_plan({"REWARDKIT_THREADS": "many"}, cores=2, load=0)
    assert CpuPlan(2, 3.14, 1).describe() == "2 cores, 1 thread, load 3.1"


def test_torch_waits_passively_unless_the_user_chose():
    """OMP_WAIT_POLICY is read once, when torch loads: a fresh process shows it."""
    probe = ("from rewardkit_trainers.launch.hardware import passive_waits; import os; "
             "passive_waits(); import torch; print(os.environ['OMP_WAIT_POLICY'])")
    env = {k: v for k, v in __import__("os").environ.items() if k != "OMP_WAIT_POLICY"}
    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout.strip()
    assert got == "PASSIVE"
    kept = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**env, "OMP_WAIT_POLICY": "ACTIVE"}, timeout=120,
                          check=True).stdout.strip()
    assert kept == "ACTIVE"


def _script():
    spec = importlib.util.spec_from_file_location("record_quickstart", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # ~37 s: a short quickstart training run
def test_the_record_is_one_command_and_the_page_quotes_it(tmp_path: Path):
    """A short run through the script: the record holds both outputs under a header with
    the machine and the load; the figures give the docs' block."""
    records = tmp_path / "records"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--max-steps", "3", "--output-dir",
                           str(tmp_path / "run"), "--records", str(records), "--no-docs"],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    text = (records / "quickstart-cpu.txt").read_text()
    assert text.startswith("# make demo-record: rewardkit train + eval")
    assert "# load average (1, 5, 15 min) before: " in text
    assert "$ rewardkit train examples/quickstart.yaml\n" in text and "evaluated in" in text
    fig = json.loads((records / "quickstart-cpu.json").read_text())
    assert fig["steps"] == 3 and fig["rows"] == 64 and fig["accuracy_component"] == "correct"
    assert set(fig["correct"]) == set(fig["format"]) == {"base", "trained"}
    module = _script()
    page = tmp_path / "page.md"
    page.write_text(f"before\n{module.MARK}\nold\n{module.MARK}\nafter\n")
    module.rewrite_page(module.page_block(fig, "now"), page)
    written = page.read_text()
    assert written.startswith("before\n") and written.endswith("after\n")
    assert "old" not in written
    assert f"| correct (right digit in the answer block) | {100 * fig['correct']['base']:.1f}%" \
        in written


def test_the_quickstart_page_quotes_the_recorded_run():
    """docs/quickstart.md's figures are the record's (make demo-record writes both)."""
    module = _script()
    fig = json.loads((ROOT / "docs" / "records" / "quickstart-cpu.json").read_text())
    page = (ROOT / "docs" / "quickstart.md").read_text()
    assert module.page_block(fig, fig["recorded"]) in page


def test_the_seed_record_trains_each_seed_apart_and_tables_the_range(tmp_path: Path):
    """``--seeds 0-4`` (make demo-seeds): one config per seed, in its own folder, the
    rest of the quickstart as is; the table gives each seed's figures and the range."""
    import yaml

    module = _script()
    assert module.parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert module.parse_seeds("0-1,7") == [0, 1, 7]
    path = module.seed_config(3, tmp_path / "seed3", tmp_path)
    config = yaml.safe_load(path.read_text())
    original = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text())
    assert config["train"]["seed"] == 3
    assert config["train"]["output_dir"] == str(tmp_path / "seed3")
    assert {k: v for k, v in config["train"].items() if k not in ("seed", "output_dir")} \
        == {k: v for k, v in original["train"].items() if k not in ("seed", "output_dir")}
    assert config["eval"] == original["eval"]
    run = {"seed": 0, "correct": 0.984375, "format": 1.0, "mean_reward": 1.984,
           "curve_correct": (0.001, 0.998), "steps": 1200, "train_seconds": 140,
           "seconds": 180, "load": 2.1, "rows": 64}
    table = module.seeds_table([run, {**run, "seed": 1, "correct": 0.921875,
                                      "mean_reward": 1.9}])
    assert "lowest 92.2%, highest 98.4%; mean reward 1.900-1.984 of 2.0" in table
    assert table.splitlines()[1].split()[:3] == ["0", "98.4%", "100.0%"]


def test_the_expected_range_of_the_quickstart_is_the_seed_records():
    """eval.expected of examples/quickstart.yaml holds every recorded seed (make
    demo-seeds): the range `rewardkit eval` prints is measured, not guessed."""
    import yaml

    seeds = json.loads((ROOT / "docs" / "records" / "quickstart-seeds.json").read_text())
    config = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text())
    low, high = config["eval"]["expected"]["accuracy"]
    assert len(seeds["runs"]) >= 5
    assert all(low <= run["correct"] <= high for run in seeds["runs"])
    assert all(run["steps"] == config["train"]["max_steps"] for run in seeds["runs"])
