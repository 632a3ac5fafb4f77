"""``rewardkit score --engine ray`` on a real three-node cluster: the same output as the
local engine for JSONL and parquet, groups whole, and a run killed mid-way (SIGKILL of
the driver process) resumed with no lost and no duplicated rows."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rewardkit.cli import main

CONFIG = {
    "rewards": {
        "format": {"reward": "soft_format", "weight": 0.5},
        "diversity": {"reward": "group_diversity", "weight": 0.5},
        "answer": {"reward": "math_answer", "mode": "process", "timeout": 10},
    }
}


#: the arguments that choose the Ray engine
RAY = ("--engine", "ray")


def score(config: Path | str, src: Path, out: Path, *extra: str) -> int:
    """``rewardkit score CONFIG SRC --out OUT EXTRA...`` in this process: its exit code."""
    return main(["score", str(config), str(src), "--out", str(out), *extra])


def write_inputs(tmp: Path, prompts: int, per_prompt: int = 4, bad_line: bool = False) -> Path:
    rng = random.Random(7)
    lines = []
    for p in range(prompts):
        gold = rng.randint(1, 50)
        for k in range(per_prompt):
            answer = gold if rng.random() < 0.5 else rng.randint(1, 50)
            body = rng.choice(["same", "same", f"variant {k}"])
            lines.append(json.dumps({
                "id": f"{p}-{k}", "prompt": f"question {p}", "reference": str(gold),
                "completion": f"<think>{body}</think><answer>{answer}</answer>"}))
        if bad_line and p == 3:
            lines.append("{not json")
    src = tmp / "samples.jsonl"
    src.write_text("\n".join(lines) + "\n")
    (tmp / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    return src


def scored(path: Path) -> dict[str, tuple]:
    found: dict[str, tuple] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        assert row["id"] not in found, f"row {row['id']} written twice"
        found[row["id"]] = (row["reward"], json.dumps(row["components"], sort_keys=True))
    return found


def run_local(tmp: Path, src: Path, batch_size: int) -> dict[str, tuple]:
    out = tmp / "local.jsonl"
    assert score(tmp / "config.yaml", src, out, "--batch-size", str(batch_size), "--json") == 0
    return scored(out)


def test_ray_engine_jsonl_matches_the_local_engine_with_groups_whole(
        ray_cluster: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_inputs(tmp_path, prompts=30, bad_line=True)
    local = run_local(tmp_path, src, batch_size=6)
    capsys.readouterr()
    out = tmp_path / "ray.jsonl"
    assert score(tmp_path / "config.yaml", src, out, *RAY, "--batch-size", "6", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert scored(out) == local
    assert summary["scored"] == 120 and summary["skipped_lines"] == 1
    assert summary["shards"] == 15  # 6 rows asked, cut where the prompt changes: 2 prompts
    assert summary["components"]["answer"]["count"]["ok"] == 120
    # a group cut in two would see fewer distinct completions: the values match local
    assert not (tmp_path / "ray.jsonl.progress").exists()


def test_ray_engine_reads_parquet(ray_cluster: object, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = write_inputs(tmp_path, prompts=12)
    rows = [json.loads(line) for line in src.read_text().splitlines()]
    parquet = tmp_path / "samples.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet, row_group_size=10)
    local = run_local(tmp_path, src, batch_size=5)
    out = tmp_path / "ray.jsonl"
    assert score(tmp_path / "config.yaml", parquet, out, *RAY, "--batch-size", "5", "--json") == 0
    assert scored(out) == local


def _score_command(tmp: Path, src: Path, out: Path, address: str, *extra: str) -> list[str]:
    return [str(Path(sys.executable).parent / "rewardkit"), "score", str(tmp / "config.yaml"),
            str(src), "--out", str(out), "--engine", "ray", "--batch-size", "4",
            "--ray-address", address, "--concurrency", "2", *extra]


def test_a_run_killed_mid_way_resumes_with_no_lost_and_no_duplicated_rows(
        ray_cluster: object, tmp_path: Path) -> None:
    src = write_inputs(tmp_path, prompts=150, per_prompt=4)
    out = tmp_path / "ray.jsonl"
    manifest = tmp_path / "ray.jsonl.progress"
    address = ray_cluster.address  # type: ignore[attr-defined]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(_score_command(tmp_path, src, out, address), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    committed = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if manifest.exists():
            committed = len(manifest.read_text().splitlines()) - 1
            if committed >= 5:
                break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed: " + \
        proc.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()  # type: ignore[union-attr]
    assert not out.exists()
    partial_rows = len((tmp_path / "ray.jsonl.partial").read_text().splitlines())
    assert 0 < partial_rows < 600

    refused = subprocess.run(_score_command(tmp_path, src, out, address), env=env,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--resume" in refused.stderr

    resumed = subprocess.run(_score_command(tmp_path, src, out, address, "--resume"),
                             env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "scored 600/600 rows" in resumed.stderr
    first_progress = next(ln for ln in resumed.stderr.splitlines() if ln.startswith("scored "))
    assert not first_progress.startswith("scored 0/")  # it started from the committed rows
    rows = scored(out)
    assert sorted(rows) == sorted(f"{p}-{k}" for p in range(150) for k in range(4))
    assert rows == run_local(tmp_path, src, batch_size=4)
    assert not manifest.exists()


def test_the_command_of_the_scale_page_runs_on_the_cluster(
        ray_cluster: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import shlex

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "scale.md").read_text()
    command = next(line for block in re.findall(r"```console\n(.*?)```", page, re.DOTALL)
                   for line in block.splitlines() if "--engine ray" in line)
    argv = shlex.split(command)
    assert argv[0] == "rewardkit"
    argv[argv.index("--out") + 1] = str(tmp_path / "scored.jsonl")
    monkeypatch.chdir(root)
    assert main([*argv[1:], "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    lines = (root / "examples" / "data" / "gsm8k-rlvr.jsonl").read_text().splitlines()
    assert summary["scored"] == len([ln for ln in lines if ln.strip()])


def test_a_second_run_on_the_same_out_refuses_while_the_first_runs(
        ray_cluster: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_inputs(tmp_path, prompts=60, per_prompt=4)
    out = tmp_path / "ray.jsonl"
    manifest = tmp_path / "ray.jsonl.progress"
    address = ray_cluster.address  # type: ignore[attr-defined]
    first = subprocess.Popen(_score_command(tmp_path, src, out, address),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not manifest.exists() and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.05)
    assert first.poll() is None, first.stderr.read()  # type: ignore[union-attr]
    assert score(tmp_path / "config.yaml", src, out, *RAY, "--batch-size", "4") == 2
    assert "is being written by another run" in capsys.readouterr().err
    _, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr[-3000:]
    assert len(scored(out)) == 240
    assert not (tmp_path / ".ray.jsonl.lock").exists()


def strict_json(text: str) -> object:
    """Parse standard JSON only: NaN / Infinity tokens fail."""
    def refuse(name: str) -> object:
        raise ValueError(f"non-standard JSON token {name}")
    return json.loads(text, parse_constant=refuse)


def both_engines(tmp_path: Path, src: Path, capsys: pytest.CaptureFixture[str]
                 ) -> tuple[dict[str, Any], dict[str, Any], str]:
    """``src`` scored with ``tmp_path/config.yaml`` by the local engine into local.jsonl
    and by the Ray engine (2-row shards) into ray.jsonl, the outputs byte for byte the
    same: (the Ray summary, the local one, the Ray run's stderr)."""
    local_out = tmp_path / "local.jsonl"
    assert score(tmp_path / "config.yaml", src, local_out, "--json") == 0
    local = json.loads(capsys.readouterr().out)
    out = tmp_path / "ray.jsonl"
    assert score(tmp_path / "config.yaml", src, out, *RAY, "--batch-size", "2", "--json") == 0
    captured = capsys.readouterr()
    assert out.read_bytes() == local_out.read_bytes()
    return json.loads(captured.out), local, captured.err


def test_hostile_lines_are_scored_or_reported_as_by_the_local_engine(
        ray_cluster: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.yaml").write_text("rewards:\n  fmt: {reward: soft_format}\n")
    good = '{"id": %d, "prompt": "p", "completion": "<think>a</think><answer>1</answer>"}'
    lines = [
        (good % 1).encode(),
        b'{"id": 2, "prompt": "p", "completion": "x \\ud83d"}',  # lone surrogate: scored
        b'{"id": 3, "prompt": "p", "completion": "y", "score": NaN}',  # reported
        b'{"id": 4, "prompt": "p", "completion": "z", "big": 1e400}',  # scored, big: null
        b'{"id": 5, "prompt": "p", "completion": "bad \xff byte"}',  # reported, line 5
        b'{"id": 6, "prompt": "p", "completion": "deep", "m": ' + b"[" * 5000
        + b"]" * 5000 + b"}",  # reported
        (good % 7).encode(),
    ]
    src = tmp_path / "hostile.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    summary, local, err = both_engines(tmp_path, src, capsys)
    out = tmp_path / "ray.jsonl"
    rows = [strict_json(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [1, 2, 4, 7]  # type: ignore[index]
    assert rows[1]["completion"] == "x \ud83d" and rows[2]["big"] is None  # type: ignore[index]
    assert [line for line, _ in summary["bad_lines"]] == [3, 5, 6]
    assert summary["bad_lines"] == local["bad_lines"]
    assert f"{src}:5: skipped: invalid UTF-8" in err
    assert "nested more than 100 levels" in summary["bad_lines"][2][1]


def test_the_output_path_rules_of_the_local_engine_hold_before_anything_is_scored(
        ray_cluster: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_inputs(tmp_path, prompts=3)
    before = src.read_bytes()
    config = str(tmp_path / "config.yaml")
    start = time.monotonic()
    assert score(config, src, src, *RAY) == 2
    assert "is the input file" in capsys.readouterr().err
    assert src.read_bytes() == before
    assert score(config, src, tmp_path, *RAY) == 2
    assert "is a folder" in capsys.readouterr().err
    assert time.monotonic() - start < 20  # refused before any scoring (no Ray start)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "ray.jsonl"
    (tmp_path / "ray.jsonl.partial").symlink_to(victim)
    (tmp_path / "ray.jsonl.progress").symlink_to(tmp_path / "victim2.txt")
    assert score(config, src, out, *RAY, "--resume") == 2
    assert "never followed" in capsys.readouterr().err
    (tmp_path / "ray.jsonl.progress").unlink()
    assert score(config, src, out, *RAY, "--json") == 0
    assert victim.read_text() == "precious" and not (tmp_path / "victim2.txt").exists()
    assert len(scored(out)) == 12


@pytest.mark.parametrize("damage", ["{}", "[1, 2]", "short partial"])
def test_a_damaged_manifest_or_partial_is_refused_naming_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str) -> None:
    from rewardkit.config import load_config
    from rewardkit.scoring.manifest import fingerprint

    src = write_inputs(tmp_path, prompts=3)
    config = tmp_path / "config.yaml"
    out = tmp_path / "ray.jsonl"
    header = json.dumps(fingerprint(load_config(config), src, 4, 0))
    partial = tmp_path / "ray.jsonl.partial"
    partial.write_bytes(b"x" * 10)
    entry = {"shard": 0, "rows": 4, "end_offset": 1000, "bad": [], "latencies": {}}
    body = json.dumps(entry) if damage == "short partial" else damage
    (tmp_path / "ray.jsonl.progress").write_text(f"{header}\n{body}\n")
    assert score(config, src, out, *RAY, "--batch-size", "4", "--resume") == 2
    err = capsys.readouterr().err
    if damage == "short partial":
        assert f"{partial} is 10 bytes" in err
    else:
        assert "ray.jsonl.progress: line 2 is not a shard record" in err
    assert partial.read_bytes() == b"x" * 10  # never extended nor cut


def test_parquet_rows_without_a_completion_are_reported_not_scored_as_empty(
        ray_cluster: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "config.yaml").write_text("rewards:\n  fmt: {reward: soft_format}\n")
    good = "<think>a</think><answer>1</answer>"
    with_null = tmp_path / "null.parquet"
    pq.write_table(pa.Table.from_pylist([
        {"id": 1, "prompt": "p", "completion": good},
        {"id": 2, "prompt": "p", "completion": None},
        {"id": 3, "prompt": "q", "completion": good}]), with_null)
    no_column = tmp_path / "nocol.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": 1, "prompt": "p", "text": good},
                                         {"id": 2, "prompt": "q", "text": good}]), no_column)
    for src, ids, bad in ((with_null, [1, 3], [[2, "'completion' is null"]]),
                          (no_column, [], [[1, "no 'completion'"], [2, "no 'completion'"]])):
        out = tmp_path / f"{src.stem}.jsonl"
        assert score(tmp_path / "config.yaml", src, out, *RAY, "--json") == 0
        summary = json.loads(capsys.readouterr().out)
        assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ids
        assert [n for n, _ in summary["bad_lines"]] == [n for n, _ in bad]
        assert all(why.startswith(want) for (_, why), (_, want) in
                   zip(summary["bad_lines"], bad, strict=True))


#: the summary of each scored file, its traced peak, in a process of its own: in the test
#: process, the threads of the Ray session earlier tests started allocate meanwhile and
#: count in the peak (0.13 MB at 20k rows, 0.32 at 100k in a run of this file)
SUMMARY_PEAKS = """
import json, sys, tracemalloc
from pathlib import Path
from rewardkit.config import RewardConfig
from rewardkit.scoring.ray import summarize
config = RewardConfig.model_validate({"rewards": {
    "a": {"reward": "soft_format"}, "b": {"reward": "strict_format"}}})
found = []
for path, shards in json.loads(sys.argv[1]):
    entries = [{"shard": k, "rows": 1000, "bad": [], "latencies": {"a": [0.001]}}
               for k in range(shards)]
    tracemalloc.start()
    summary = summarize(config, Path(path), entries, 0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    found.append([peak, summary.samples, summary.metrics()])
print(json.dumps(found))
"""


def test_the_final_summary_is_built_in_flat_memory(tmp_path: Path) -> None:
    files = []
    for shards in (1, 20, 100):  # 1: imports and first-use caches
        scored_file = tmp_path / f"scored-{shards}.jsonl"
        with scored_file.open("w") as fh:
            for i in range(shards * 1000):
                value = (i % 10) / 10
                fh.write(json.dumps({"completion": "x", "reward": 2 * value, "components": {
                    "a": {"value": value, "status": "ok", "reason": ""},
                    "b": {"value": value, "status": "ok", "reason": ""}}}) + "\n")
        files.append([str(scored_file), shards])
    done = subprocess.run([sys.executable, "-c", SUMMARY_PEAKS, json.dumps(files)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (_, _, _), (small, _, _), (large, samples, metrics) = json.loads(done.stdout)
    assert samples == 100_000
    assert metrics["total"]["mean"] == pytest.approx(0.9) and metrics["total"]["max"] == 1.8
    assert metrics["components"]["b"]["count"]["ok"] == 100_000
    # one shard's rows at a time: 100k rows cost what 20k do (before: 5 times as much)
    assert large < 1.3 * small, f"{small / 1e6:.2f} MB at 20k rows, {large / 1e6:.2f} at 100k"


@pytest.fixture
def engine_rewards() -> None:
    """The plugin's rewards known to this process too: the nodes find them through its
    entry point (their PYTHONPATH has this folder), but this process's registry may have
    loaded its plugins before conftest put the folder on ``sys.path``."""
    from ray_engine_rewards import inline_exit, inline_pid

    from rewardkit import registry

    for cls in (inline_exit, inline_pid):
        if cls.name not in registry.names():
            registry.register(cls, "rewardkit-ray-engine-test")


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_row_that_kills_its_scoring_process_is_reported_and_the_run_ends(
        ray_cluster: object, engine_rewards: None, tmp_path: Path, fmt: str) -> None:
    # an inline reward runs in the scoring actor: os._exit on one row killed the actor,
    # Ray Data restarted it and sent the same shard again, forever
    (tmp_path / "config.yaml").write_text(
        "rewards:\n  exit: {reward: ray_inline_exit}\n  fmt: {reward: soft_format}\n")
    good = "<think>a</think><answer>1</answer>"
    records = [{"id": i, "prompt": f"p{i // 2}", "completion": "die" if i == 5 else good}
               for i in range(16)]
    src = tmp_path / f"samples.{fmt}"
    if fmt == "parquet":  # row 6 (rows are numbered from 1, as lines are)
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(records), src)
    else:
        src.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "ray.jsonl"
    address = ray_cluster.address  # type: ignore[attr-defined]
    started = time.monotonic()
    done = subprocess.run([*_score_command(tmp_path, src, out, address), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - started < 60
    # the summary alone: Ray's driver prints its notes on the dead actors ("(raylet) A
    # worker died ...") to stdout, and the run sends them to stderr
    summary = json.loads(done.stdout)
    assert summary["bad_lines"] == [[6, "the scoring process died on this row (a reward "
                                     "that ends its process: os._exit, a segfault, an OOM "
                                     "kill); not scored"]]
    assert f"{src}:6: skipped: the scoring process died on this row" in done.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [i for i in range(16) if i != 5]  # input order
    assert all(r["components"]["exit"]["value"] == 1.0 for r in rows)
    # the killed row's partner (same prompt, same shard) is scored
    assert summary["scored"] == 15 and summary["components"]["exit"]["count"]["ok"] == 15
    assert not (tmp_path / "ray.jsonl.progress").exists()


def test_a_reward_that_kills_its_process_on_every_row_stops_the_run_by_the_breaker(
        ray_cluster: object, engine_rewards: None, tmp_path: Path) -> None:
    """The search for the killing rows costs an actor a try: once the process died on
    nearly every try (the executors' breaker, counted in tries) the run stops with an
    error. Before, it searched every shard and ended "ok" (98 s for these 40 rows on the
    test cluster, and longer the longer the file; 32 s now, whatever its length)."""
    from rewardkit.execution.executor import BREAKER_MIN_FAILURES

    (tmp_path / "config.yaml").write_text("rewards:\n  exit: {reward: ray_inline_exit}\n")
    src = tmp_path / "samples.jsonl"
    src.write_text("".join(json.dumps({"id": i, "prompt": f"p{i // 2}", "completion": "die"})
                           + "\n" for i in range(40)))
    out = tmp_path / "ray.jsonl"
    address = ray_cluster.address  # type: ignore[attr-defined]
    done = subprocess.run([*_score_command(tmp_path, src, out, address), "--json"],
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 2 and done.stdout == "", done.stderr[-3000:]
    stopped = re.search(r"error: scoring stopped: the scoring process died on (\d+) of the "
                        r"(\d+) tries in this run", done.stderr)
    assert stopped, done.stderr[-3000:]
    assert int(stopped[1]) == int(stopped[2]) == BREAKER_MIN_FAILURES
    assert "run again with --resume" in done.stderr
    assert not out.exists() and (tmp_path / "ray.jsonl.progress").exists()


def test_a_line_over_the_byte_cap_is_reported_as_by_the_local_engine(
        ray_cluster: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.yaml").write_text(
        "limits: {max_line_bytes: 1000}\nrewards:\n  fmt: {reward: soft_format}\n")
    good = '{"id": %d, "prompt": "p%d", "completion": "<think>a</think><answer>1</answer>"}'
    lines = [good % (i, i) for i in range(8)]
    lines[2] = json.dumps({"id": 2, "prompt": "p2", "completion": "x" * 5000})
    lines[6] = json.dumps({"id": 6, "prompt": "p6", "completion": "y" * 990})  # 1,029 B
    src = tmp_path / "samples.jsonl"
    src.write_text("\n".join(lines) + "\n")
    summary, local, err = both_engines(tmp_path, src, capsys)
    assert summary["bad_lines"] == local["bad_lines"]
    assert [n for n, _ in summary["bad_lines"]] == [3, 7]
    assert f"{src}:3: skipped: line longer than 1,000 bytes (limits.max_line_bytes)" \
        in err


def test_no_line_over_the_byte_cap_is_read_whole(tmp_path: Path) -> None:
    import tracemalloc

    from rewardkit.scoring.shards import plan_shards, read_shard

    src = tmp_path / "long.jsonl"
    with src.open("w") as fh:
        fh.write('{"prompt": "p", "completion": "short"}\n')
        fh.write('{"prompt": "q", "completion": "' + "z" * 30_000_000 + '"}\n')
        fh.write('{"prompt": "r", "completion": "short"}\n')
    cap = 1_000_000
    tracemalloc.start()
    shards = plan_shards(src, "jsonl", 1, cap)
    bad: list[tuple[int, str]] = []
    rows = [n for shard in shards for n, _ in read_shard(src, "jsonl", shard, bad, cap)]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert rows == [1, 3] and [n for n, _ in bad] == [2]
    assert sum(s.rows for s in shards) == 3
    assert peak < 8 * cap, f"peak {peak / 1e6:.1f} MB reading a 30 MB line under a 1 MB cap"


def _rchar() -> int:
    """Bytes this process has read through read(2) and pread(2), page cache or not."""
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))


def test_each_parquet_row_group_is_read_once_whatever_the_shards(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rewardkit.scoring.shards import parquet_reads, plan_shards, read_unit

    rng = random.Random(3)
    rows = [{"id": i, "prompt": f"q{i // 2}", "completion": "".join(
        rng.choice("abcdefghij ") for _ in range(120))} for i in range(20_000)]
    src = tmp_path / "one-group.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src)  # pyarrow's default: one row group
    assert pq.ParquetFile(src).metadata.num_row_groups == 1
    shards = plan_shards(src, "parquet", 200, 1 << 20)
    assert len(shards) == 100
    units = parquet_reads(src, shards)
    assert [len(u) for u in units] == [100]  # all shards share the group: one read
    before = _rchar()
    got = []
    for unit in units:
        for shard, payload in read_unit(src, unit):
            part = pa.ipc.open_stream(payload).read_all().to_pylist()
            assert len(part) == shard.rows
            got.extend(part)
    read = _rchar() - before
    assert got == rows
    size = src.stat().st_size
    # before: each of the 100 shards read the whole group (100 times the file)
    assert read < 3 * size, f"read {read / size:.1f} times the file's {size} bytes"
    # a shard set after a resume: only the pending shards' rows, groups still read once
    pending = shards[10:20] + shards[60:61]
    parts = [shard for unit in parquet_reads(src, pending) for shard, _ in read_unit(src, unit)]
    assert parts == pending


def test_a_parquet_file_of_one_row_group_is_scored_as_locally(
        ray_cluster: object, engine_rewards: None, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = write_inputs(tmp_path, prompts=20)
    rows = [json.loads(line) for line in src.read_text().splitlines()]
    parquet = tmp_path / "samples.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)  # one row group, 20 shards
    local = run_local(tmp_path, src, batch_size=4)
    out = tmp_path / "ray.jsonl"
    assert score(tmp_path / "config.yaml", parquet, out, *RAY, "--batch-size", "4", "--json") == 0
    assert scored(out) == local
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == [r["id"] for r in rows]
    # the group is read once, and its shards are shared by the scoring actors (one block
    # of 20 shards went to one actor)
    (tmp_path / "pid.yaml").write_text("rewards:\n  pid: {reward: ray_inline_pid}\n")
    out = tmp_path / "pid.jsonl"
    assert score(tmp_path / "pid.yaml", parquet, out, *RAY, "--batch-size", "4", "--json") == 0
    pids = {json.loads(x)["reward"] for x in out.read_text().splitlines()}
    assert len(pids) >= 2, f"one actor scored every shard: {pids}"
