"""EasyR1 and multi-turn: EasyR1 (hiyouga/EasyR1 at b44b311) rolls out one generation per
prompt with vLLM (``verl/workers/rollout/vllm_rollout_spmd.py``; no agent or tool loop),
and its reward inputs are ``response`` (text), ``response_length`` and ``ground_truth``.
A reward that needs a trajectory gets status error through our EasyR1 reward file, and
``rewardkit train --backend easyr1`` refuses such a config."""

from __future__ import annotations

from pathlib import Path

from backend_venvs import ROOT, tool_use_rewards
from rewardkit_trainers.rewards.easyr1 import export_reward_file, pack_answer

# reuses the EasyR1 loader of test_easyr1 (spec_from_file_location, REWARD_TYPE, partial)
from test_easyr1 import load_like_easyr1

from rewardkit.config import parse_config

CONFIG = {"on_error": "ignore", "rewards": {
    "answer": {"reward": "math_answer"},
    "valid": {"reward": "tool_call_valid", "weight": 0.5},
    "non_stop": {"reward": "non_stop_penalty"}}}
TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}}}}}]
CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 7}}\n</tool_call>\nThe answer is 7.'


def test_trajectory_rewards_say_error_on_easyr1s_text_response(tmp_path: Path):
    """The response is text even when it holds a tool call: tool_call_valid fails (never
    parsed out of text), the answer still grades, the total is the answer's."""
    file = export_reward_file(parse_config(CONFIG), None, tmp_path / "reward.py")
    truth = pack_answer("7", 0, {"tools": TOOLS})
    [row] = load_like_easyr1(file)([{"response": CALL, "response_length": 12,
                                     "ground_truth": truth}])
    assert (row["valid_failed"], row["answer"], row["overall"]) == (1.0, 1.0, 1.0)


def test_the_rows_recorded_finish_reason_is_not_the_rollouts(tmp_path: Path):
    """Before: a packed ``finish_reason: stop`` (the dataset's recorded completion)
    reached the sample, so non_stop_penalty paid 0 for every rollout, cut off or not.
    EasyR1 says nothing of how a generation ended: now the penalty is status error."""
    file = export_reward_file(parse_config(CONFIG), None, tmp_path / "reward.py")
    truth = pack_answer("7", 0, {"finish_reason": "stop", "truncated": False})
    [row] = load_like_easyr1(file)([{"response": "The answer is", "response_length": 3,
                                     "ground_truth": truth}])
    assert row["non_stop_failed"] == 1.0


def test_train_refuses_a_config_needing_a_trajectory(tmp_path: Path, capsys):
    from rewardkit_trainers.cli import run as cli_run

    config = tmp_path / "tool-use.yaml"
    config.write_text(tool_use_rewards()
                      + "train:\n  model: m\n  dataset: {train: "
                      + str(ROOT / "examples/data/tool-use.jsonl") + "}\n")
    assert cli_run("train", [str(config), "--backend", "easyr1", "--dry-run"]) == 2
    err = capsys.readouterr().err
    for name in ("answer", "right_calls", "valid_calls", "tool_errors", "efficiency",
                 "non_stop"):
        assert f"rewards.{name}: needs a multi-turn trajectory" in err
    assert "EasyR1 rolls out text only" in err


def test_train_still_plans_a_config_that_needs_no_trajectory(tmp_path: Path):
    from rewardkit_trainers.launch.runner import jobs, load_run

    config = tmp_path / "answer.yaml"
    config.write_text("on_error: ignore\nrewards:\n  answer: {reward: math_answer}\n"
                      "train:\n  model: m\n  dataset: {train: "
                      + str(ROOT / "examples/data/tool-use.jsonl") + "}\n")
    plan = load_run(config, backend="easyr1", output_dir=str(tmp_path / "run"))
    assert len(jobs(plan)) == 1


def test_planning_runs_only_the_components_that_may_read_the_rollout(tmp_path: Path):
    """The refusal probe scores rewards at planning time: only those that may need a
    trajectory or the finish reason. Before, it scored every component, so a judge (an API
    call) or a sandboxed program ran when `rewardkit train` planned the run."""
    from rewardkit_trainers.launch.runner import load_run

    from rewardkit import Score, reward
    from rewardkit.registry import registry

    calls: list[str] = []

    @reward(name="planning_spy")
    def planning_spy(sample):  # stands for a judge: must not be called while planning
        calls.append(sample.text)
        return Score.ok(1.0)

    registry.register(planning_spy)
    try:
        import yaml
        from rewardkit_trainers.launch.easyr1 import rollout_needs

        data = yaml.safe_load(tool_use_rewards())
        data["rewards"]["spy"] = {"reward": "planning_spy", "weight": 0.1}
        data["train"] = {"model": "m",
                         "dataset": {"train": str(ROOT / "examples/data/tool-use.jsonl")}}
        config = tmp_path / "tool-use.yaml"
        config.write_text(yaml.safe_dump(data))

        plan = load_run(config, backend="easyr1", output_dir=str(tmp_path / "run"))
        row = {"prompt": "q", "reference": "7"}
        needs = rollout_needs(plan, row)
    finally:
        registry.unregister("planning_spy")
    assert "non_stop" in needs and "spy" not in needs
    assert calls == []


def test_export_refuses_a_config_needing_a_trajectory(tmp_path: Path, capsys):
    """Before: `rewardkit export easyr1 examples/tool-use.yaml` wrote the file and exited 0
    with no warning, and EasyR1's reward manager then failed every component on every row.
    Export refuses as `rewardkit train --backend easyr1` does, probing the config's own
    first training row, and writes nothing."""
    from rewardkit_trainers.cli import run as cli_run

    out = tmp_path / "reward.py"
    code = cli_run("export", ["easyr1", str(ROOT / "examples/tool-use.yaml"), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    for name in ("answer", "right_calls", "valid_calls", "tool_errors", "efficiency",
                 "non_stop", "valid_per_turn"):
        assert f"rewards.{name}: needs a multi-turn trajectory" in err
    assert "EasyR1 rolls out text only" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_what_export_refuses_fails_every_row_through_easyr1s_loader(tmp_path: Path):
    """The refusal is not a guess: the same config, exported anyway (the file writer is
    not the CLI), fails each refused component on the example's own rows as EasyR1's
    manager calls it (text response, packed ground truth)."""
    import json

    import yaml

    data = yaml.safe_load((ROOT / "examples/tool-use.yaml").read_text(encoding="utf-8"))
    config = parse_config({k: v for k, v in data.items() if k != "train"})
    file = export_reward_file(config, None, tmp_path / "reward.py")
    rows = [json.loads(line) for line in
            (ROOT / "examples/data/tool-use.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    batch = []
    for i, row in enumerate(rows):
        final = row["completion"][-1]["content"] or ""
        meta = {k: row[k] for k in ("tools", "reference_calls") if k in row}
        batch.append({"response": final, "response_length": len(final.split()),
                      "ground_truth": pack_answer(row["reference"], i, meta)})
    scored = load_like_easyr1(file)(batch)
    for name in config.rewards:
        assert all(r[f"{name}_failed"] == 1.0 for r in scored), name
    assert all(r["overall"] == 0.0 for r in scored)


def test_export_without_a_dataset_probes_a_made_up_row(tmp_path: Path, capsys):
    """A reward config with no train section: the probe row is made up (prompt ``q``,
    reference ``7``); a penalty that needs the finish reason is still refused."""
    from rewardkit_trainers.cli import run as cli_run

    config = tmp_path / "penalty.yaml"
    config.write_text("on_error: ignore\nrewards:\n  answer: {reward: math_answer}\n"
                      "  non_stop: {reward: non_stop_penalty, weight: 0.5}\n")
    out = tmp_path / "reward.py"
    assert cli_run("export", ["easyr1", str(config), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "rewards.non_stop: needs a multi-turn trajectory" in err
    assert "rewards.answer" not in err and not out.exists()


def test_export_still_writes_a_config_that_needs_no_trajectory(tmp_path: Path):
    from rewardkit_trainers.cli import run as cli_run

    config = tmp_path / "answer.yaml"
    config.write_text("on_error: ignore\nrewards:\n  answer: {reward: math_answer}\n"
                      "train:\n  model: m\n  dataset: {train: "
                      + str(ROOT / "examples/data/tool-use.jsonl") + "}\n")
    out = tmp_path / "reward.py"
    assert cli_run("export", ["easyr1", str(config), "-o", str(out)]) == 0
    assert "def compute_score" in out.read_text(encoding="utf-8")


def test_export_without_a_dataset_refuses_tool_call_valid(tmp_path: Path, capsys):
    """The made-up probe row carries no ``tools`` column, and tool_call_valid is an error
    without one whatever the response: it failed both probes and was not refused, so
    `rewardkit export easyr1` wrote a reward file whose tool_call_valid errs on every row
    (EasyR1 passes text only). The probe now offers an empty tools column."""
    from rewardkit_trainers.cli import run as cli_run

    config = tmp_path / "tools.yaml"
    config.write_text("rewards:\n  valid: {reward: tool_call_valid}\n")
    out = tmp_path / "reward.py"
    assert cli_run("export", ["easyr1", str(config), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "rewards.valid: needs a multi-turn trajectory" in err and not out.exists()
