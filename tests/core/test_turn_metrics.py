"""Per-turn metrics (issue 23 item 3): the same turn keys on every batch of a run, from the
public API, ``rewardkit score``'s summary, ``rewardkit report`` and the TRL adapter."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rewardkit import RewardSet
from rewardkit.config import ConfigError
from rewardkit.report import svg
from rewardkit.reward_set import turn_buckets

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tool-use.yaml"
EXAMPLE_DATA = ROOT / "examples" / "data" / "tool-use.jsonl"
TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}}}}}]
CONFIG: dict[str, Any] = {"turn_metrics": 3, "rewards": {
    "valid": {"reward": "tool_call_valid", "params": {"per_turn": True}, "turns": "mean"},
    "fmt": {"reward": "soft_format"}}}


def rollout(calls: list[bool], **columns: Any) -> dict[str, Any]:
    """A trajectory: one assistant turn per call (valid or not: per-turn value 1 or 0),
    then the answer (value 1)."""
    messages: list[dict[str, Any]] = []
    for i, ok in enumerate(calls):
        args = '{"a": 1}' if ok else '{"a": "x"}'
        messages.append({"role": "assistant", "tool_calls": [
            {"id": str(i), "function": {"name": "add", "arguments": args}}]})
        messages.append({"role": "tool", "tool_call_id": str(i), "content": "1"})
    messages.append({"role": "assistant", "content": "done"})
    return {"prompt": "q", "tools": TOOLS, "completion": messages, **columns}


SHORT = [rollout([True])]                                  # 2 turns
LONG = [rollout([True] * 6), rollout([False] * 4)]         # 7 and 5 turns


def turn_keys(flat: dict[str, float]) -> set[str]:
    return {k for k in flat if "/turn_" in k}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rewardkit.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_every_batch_has_the_same_turn_keys_whatever_its_trajectory_lengths() -> None:
    rs = RewardSet.from_dict(CONFIG)
    short, long = rs.score(SHORT).flat_metrics(), rs.score(LONG).flat_metrics()
    expected = {f"rewards/valid/turn_{b}/{m}" for b in ("0", "1", "2", "3plus")
                for m in ("mean", "count")}
    assert turn_keys(short) == turn_keys(long) == expected  # fmt gives no turn values
    assert short["rewards/valid/turn_2/count"] == 0.0      # nobody reached turn 2 ...
    assert math.isnan(short["rewards/valid/turn_2/mean"])  # ... so no mean (as `mean`)
    assert long["rewards/valid/turn_0/mean"] == 0.5        # one valid call, one invalid
    assert long["rewards/valid/turn_0/count"] == 2.0
    # turns 3.. of each sample averaged first: [1, 1, 1, 1] -> 1 and [0, 1] -> 0.5, so the
    # 7-turn sample weighs as much as the 5-turn one
    assert long["rewards/valid/turn_3plus/mean"] == 0.75
    assert long["rewards/valid/turn_3plus/count"] == 2.0


def test_the_default_is_eight_turns_and_zero_keeps_only_the_bucket() -> None:
    default = RewardSet.from_dict({"rewards": CONFIG["rewards"]}).score(LONG)
    assert list(default.metrics["components"]["valid"]["turns"]) == turn_buckets(8)
    zero = RewardSet.from_dict({**CONFIG, "turn_metrics": 0}).score(LONG)
    assert zero.metrics["components"]["valid"]["turns"] == {
        "0plus": {"mean": pytest.approx((1.0 + 0.2) / 2), "count": 2}}
    for bad in (-1, "x", 65):
        with pytest.raises(ConfigError, match="turn_metrics"):
            RewardSet.from_dict({**CONFIG, "turn_metrics": bad})


def test_a_per_turn_component_keeps_its_keys_on_a_batch_without_turn_values() -> None:
    config = {**CONFIG, "rewards": {"valid": {**CONFIG["rewards"]["valid"],
                                              "when": {"task": "tools"}}}}
    unrouted = [rollout([True], task="chat")]
    fresh = RewardSet.from_dict(config)
    assert turn_keys(fresh.score(unrouted).flat_metrics()) == set()  # never per-turn yet
    rs = RewardSet.from_dict(config)
    seen = rs.score([rollout([True], task="tools")]).flat_metrics()
    later = rs.score(unrouted).flat_metrics()
    assert turn_keys(later) == turn_keys(seen)
    assert all(later[k] == 0.0 for k in turn_keys(later) if k.endswith("/count"))


def test_score_summary_reports_turns_as_one_batch_would(tmp_path: Path) -> None:
    data = tmp_path / "varying.jsonl"
    rows = SHORT + LONG + [rollout([False, True, True])]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = tmp_path / "c.yaml"  # JSON is YAML
    config.write_text(json.dumps(CONFIG))
    proc = cli("score", str(config), str(data), "--json", "--batch-size", "1")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)["components"]["valid"]["turns"]
    whole = RewardSet.from_dict(CONFIG).score(rows).metrics["components"]["valid"]["turns"]
    assert list(summary) == turn_buckets(3)
    for key, stats in whole.items():  # four batches of one merged = the batch of four
        assert summary[key]["count"] == stats["count"]
        assert summary[key]["mean"] == pytest.approx(stats["mean"])
    assert "turns" not in json.loads(proc.stdout)["components"]["fmt"]


def test_score_on_the_example_prints_turns_and_writes_them_for_the_report(tmp_path: Path
                                                                            ) -> None:
    scored = tmp_path / "x.jsonl"
    proc = cli("score", str(EXAMPLE), str(EXAMPLE_DATA), "--out", str(scored))
    assert proc.returncode == 0, proc.stderr
    assert "per turn: mean (samples that reached the turn)" in proc.stdout
    assert "turn 8+" in proc.stdout
    rows = [json.loads(line) for line in EXAMPLE_DATA.read_text().splitlines()]
    result = RewardSet.from_file(EXAMPLE).score(rows)
    out = [json.loads(line) for line in scored.read_text().splitlines()]
    for i, row in enumerate(out):
        details = result.scores("valid_per_turn")[i].details or {}
        assert row["components"]["valid_per_turn"].get("turn_values") == \
            details.get("turn_values")
        assert "turn_values" not in row["components"]["answer"]
    page_path = tmp_path / "r.html"
    proc = cli("report", str(scored), "--out", str(page_path))
    assert proc.returncode == 0, proc.stderr
    page = page_path.read_text()
    table = re.search(r"id='turns'>Per turn</h3>.*?<table class='grid'>(.*?)</table>",
                      page, re.S)
    assert table, "no per-turn table"
    turns = result.metrics["components"]["valid_per_turn"]["turns"]
    reached = [k for k, s in turns.items() if s["count"]]
    cells = re.findall(r"<td>([^<]*)</td>", table.group(1))
    assert cells == ["valid_per_turn"] + [
        f"{svg.fmt(turns[k]['mean'])} ({turns[k]['count']})" for k in reached]


def test_trl_log_metric_gets_every_count_and_no_nan_mean() -> None:
    trl = pytest.importorskip("rewardkit_trainers.rewards.trl")
    funcs = {f.name: f for f in trl.trl_rewards(CONFIG).funcs}
    valid = funcs["valid"]
    valid.attached = True
    logged_per_batch = []
    for step, batch in enumerate((SHORT, LONG)):
        logged: dict[str, float] = {}
        valid(prompts=[r["prompt"] for r in batch], completions=[r["completion"] for r in batch],
              trainer_state=SimpleNamespace(global_step=step),
              log_metric=logged.__setitem__, tools=[r["tools"] for r in batch])
        logged_per_batch.append(logged)
    short, long = logged_per_batch
    counts = {f"rewards/valid/turn_{b}/count" for b in turn_buckets(3)}
    assert counts <= set(short) and counts <= set(long)
    assert short["rewards/valid/turn_2/count"] == 0.0
    assert "rewards/valid/turn_2/mean" not in short  # a NaN would blank the log window
    assert not any(math.isnan(v) for v in short.values())
    assert long["rewards/valid/turn_3plus/mean"] == 0.75


def test_the_ray_engines_summary_reads_the_turns_back_from_its_output(tmp_path: Path) -> None:
    from rewardkit.scoring.jsonl import score_jsonl
    from rewardkit.scoring.ray import summarize

    rows = SHORT + LONG
    data, scored = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rs = RewardSet.from_dict(CONFIG)
    local = score_jsonl(rs, data, scored)["components"]["valid"]["turns"]
    # the Ray engine rebuilds its summary from the rows it wrote, shard by shard
    rebuilt = summarize(rs.config, scored, [{"rows": 1}, {"rows": 2}], 0).metrics()
    assert rebuilt["components"]["valid"]["turns"] == local


# -- what a policy can do to the per-turn metrics (docs/agents.md, "Per-turn rewards") --
def test_a_sample_scored_without_turn_values_is_in_no_bucket() -> None:
    """tool_call_valid pays a rollout with no call a plain 0, not per-turn values: it is in
    no turn bucket, so a policy that stops calling tools leaves the turn means as they
    were; only turn_0/count (8) below the samples scored (9) shows it."""
    rows = [json.loads(line) for line in EXAMPLE_DATA.read_text().splitlines()]
    m = RewardSet.from_file(EXAMPLE).score(rows).metrics["components"]["valid_per_turn"]
    no_call = [r["id"] for r in rows if r["id"].startswith("hack: no call")]
    assert m["count"]["ok"] == 9 and m["turns"]["0"]["count"] == 8 and len(no_call) == 1
    assert m["turns"]["0"]["mean"] == 0.875
    assert m["mean"] == pytest.approx(7.5 / 9)  # 0.83 in docs/agents.md


def test_padding_turns_adds_one_sample_to_the_later_bucket_not_one_per_turn() -> None:
    chatter = rollout([False])
    chatter["completion"][2:2] = [{"role": "assistant", "content": "hmm"}] * 60
    rs = RewardSet.from_dict(CONFIG)
    turns = rs.score([rollout([True] * 9)] * 3 + [chatter]).metrics["components"]["valid"]
    later = turns["turns"]["3plus"]
    # chatter turns are 0 (not the answer); its 59 later turns count as one sample
    assert later["count"] == 4
    assert later["mean"] == pytest.approx((3 * 1.0 + 1 / 59) / 4)


def test_ms_swift_pending_metrics_hold_a_count_per_batch_and_only_real_means() -> None:
    swift = pytest.importorskip("rewardkit_trainers.rewards.swift")
    from rewardkit_trainers.rewards.scoring import SharedScorer

    component = swift.SwiftComponent(SharedScorer(CONFIG), "valid")
    swift.drain_metrics()
    for step, batch in enumerate((SHORT, LONG)):
        component([r["completion"] for r in batch], tools=[r["tools"] for r in batch],
                  trainer_state=SimpleNamespace(global_step=step))
    pending = swift.drain_metrics()  # what the rewardkit_metrics callback averages
    assert pending["rewards/valid/turn_2/count"] == [0.0, 2.0]
    assert pending["rewards/valid/turn_2/mean"] == [0.5]  # LONG's; SHORT had none to give


def test_values_that_break_the_contract_are_in_no_bucket_nor_in_the_output(tmp_path: Path
                                                                           ) -> None:
    from rewardkit import reward
    from rewardkit.registry import registry
    from rewardkit.trajectory import turn_score

    @reward(name="test_three_turn_values")
    def three(sample):  # type: ignore[no-untyped-def]
        return turn_score([1.0, 1.0, 1.0])  # right only for three-turn rollouts

    registry.register(three)
    try:
        rs = RewardSet.from_dict({"turn_metrics": 3, "rewards": {
            "t": {"reward": "test_three_turn_values"}}})
        result = rs.score([rollout([True, True]), rollout([True])])
        assert [s.status for s in result.scores("t")] == ["ok", "error"]
        turns = result.metrics["components"]["t"]["turns"]
        assert [turns[k]["count"] for k in turn_buckets(3)] == [1, 1, 1, 0]
        data, scored = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
        data.write_text(json.dumps(rollout([True])) + "\n")
        from rewardkit.scoring.jsonl import score_jsonl
        score_jsonl(rs, data, scored)
        assert "turn_values" not in json.loads(scored.read_text())["components"]["t"]
    finally:
        registry.unregister("test_three_turn_values")
