"""The environment reaches the reward: examples/agent-workspace.yaml trained on TRL.

``rewardkit train`` runs one real GRPOTrainer step (CPU) of the example config: TRL's
``environment_factory`` is the example's ``NotesEnv`` (one instance per rollout, a private
folder seeded from the row), its methods are the tools TRL renders, parses and runs, and
``workspace_criteria`` reads the folder each rollout left, handed over in-process. What is
scripted is the policy only (as in test_trl_multiturn.py: a random tiny model calls no
tool): transformers' ``generate`` gets a logits processor forcing the text of each turn,
chosen by the question the policy read from the workspace. Rows: an honest agent writes
the right answer (paid 1), one only says the answer (no file: 0), one writes a wrong
answer (0), one writes outside its folder (the tool refuses: 0). The reward reads the
state, so only the honest rollouts are paid.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
pytest.importorskip("rewardkit_workspace")

from rewardkit_trainers.environments import (
    WORKSPACES_ENV,
    WorkspaceEnvironment,
    apply_environments,
    hoist_workspace,
    load_environment_factory,
    refuse_environment_factory,
)

from rewardkit import ConfigError, Sample

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agent-workspace.yaml"


def call(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + \
        "\n</tool_call>"


READ = call("read_file", path="question.txt")
#: the question a rollout read -> its later turns
SCRIPTS: dict[str, list[str]] = {
    "What is 6 times 7?": [call("write_file", path="answer.txt", content="42"), "Done."],
    "What is 9 plus 8?": ["The answer is 17, written to answer.txt."],
    "What is 20 minus 5?": [call("write_file", path="answer.txt", content="16"), "Done."],
    "What is 3 times 4?": [call("write_file", path="../answer.txt", content="12"),
                           "Done."],
}


def scripted(model: Any, tokenizer: Any) -> Any:
    """``model`` whose ``generate`` forces each turn's text: the first turn reads
    question.txt, the later ones follow :data:`SCRIPTS` for the question read."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    eos = tokenizer.eos_token_id
    start, assistant = tokenizer.convert_tokens_to_ids(["<|im_start|>", "assistant"])

    def ids(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    questions = {tuple(ids(q)): [[*ids(t), eos] for t in turns]
                 for q, turns in SCRIPTS.items()}
    first = [*ids(READ), eos]

    def holds(row: list[int], part: tuple[int, ...]) -> bool:
        return any(tuple(row[i:i + len(part)]) == part for i in range(len(row)))

    class Script(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            forced = torch.full_like(scores, -float("inf"))
            for r, row in enumerate(input_ids.tolist()):
                headers = [i for i in range(len(row) - 1)
                           if row[i] == start and row[i + 1] == assistant]
                turns = [first, *next((t for q, t in questions.items() if holds(row, q)), [])]
                text = turns[min(len(headers), len(turns)) - 1]
                done = len(row) - headers[-1] - 3  # after "<|im_start|>assistant\n"
                forced[r, text[done] if done < len(text) else eos] = 0.0
            return forced

    generate = model.generate

    def forced_generate(*args: Any, **kwargs: Any) -> Any:
        kwargs["logits_processor"] = LogitsProcessorList([Script()])
        return generate(*args, **kwargs)

    model.generate = forced_generate
    return model


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`rewardkit train` of the example config (its output folder moved, 4 prompts in the
    one step), the policy scripted; the scored samples it wrote."""
    import yaml
    from rewardkit_trainers.cli import run as cli_run
    from rewardkit_trainers.environments import build_tiny_for_tools
    from rewardkit_trainers.launch import trl_train

    tmp = tmp_path_factory.mktemp("agent-workspace")
    shutil.copytree(EXAMPLE.parent, tmp / "examples")
    config = yaml.safe_load(EXAMPLE.read_text())
    config["train"].update(output_dir=str(tmp / "out"), batch_size=4,
                           max_completion_length=160)
    path = tmp / "examples" / "agent-workspace.yaml"
    path.write_text(yaml.safe_dump(config))

    def build(spec: Any, rows: list[dict[str, Any]], tools: list[Any], save_to: Path
              ) -> tuple[Any, Any]:
        # the vocabulary also covers the questions and the scripted turns
        texts = [{"prompt": [{"role": "user", "content": " ".join(
            [q, READ, *turns])}]} for q, turns in SCRIPTS.items()]
        model, tokenizer = build_tiny_for_tools(spec, rows + texts, tools, save_to)
        return scripted(model, tokenizer), tokenizer

    saved = os.environ.pop(WORKSPACES_ENV, None)
    patch = pytest.MonkeyPatch()
    patch.setattr("rewardkit_trainers.environments.build_tiny_for_tools", build)
    try:
        assert cli_run("train", [str(path)]) == 0
    finally:
        patch.undo()
        given = os.environ.pop(WORKSPACES_ENV, None)
        if saved is not None:
            os.environ[WORKSPACES_ENV] = saved
    assert trl_train  # the adapter under test
    scored = [json.loads(line) for line in
              (tmp / "out" / "scored_samples.jsonl").read_text().splitlines()]
    return {"scored": scored, "out": tmp / "out", "root": given}


def question(row: dict[str, Any]) -> str:
    files = row["files"]
    return (json.loads(files) if isinstance(files, str) else files)["question.txt"]


def test_the_reward_pays_for_the_file_the_environment_tool_wrote(run):
    by_question: dict[str, list[dict[str, Any]]] = {}
    for row in run["scored"]:
        by_question.setdefault(question(row), []).append(row)
    assert sorted(by_question) == sorted(SCRIPTS) and len(run["scored"]) == 8
    for q, rows in by_question.items():
        for row in rows:
            score = row["components"]["task_done"]
            assert score["status"] == "ok", (q, score)
            # the tools ran: the question's text came back from read_file
            tool_results = [m["content"] for m in row["completion"] if m["role"] == "tool"]
            assert tool_results[0] == q
            assert score["value"] == (1.0 if q == "What is 6 times 7?" else 0.0), (q, score)
    # the one that only said the answer: no file in its folder
    said = by_question["What is 9 plus 8?"][0]["components"]["task_done"]
    assert "answer.txt" in said["reason"]
    # the write outside the folder was refused as a failed call
    escape = by_question["What is 3 times 4?"][0]["completion"]
    assert "error" in [m for m in escape if m["role"] == "tool"][1]["content"]


def test_the_reward_read_each_rollouts_own_folder_under_the_runs_root(run):
    root = run["out"] / "workspaces"
    assert run["root"] == str(root)  # rewardkit train set $REWARDKIT_WORKSPACES
    folders = {row["workspace"] for row in run["scored"]}
    assert len(folders) == 8  # one instance (folder) per rollout of the batch
    assert all(Path(f).parent == root for f in folders)
    assert not (root / "answer.txt").exists()  # ../answer.txt was not written
    assert list(root.iterdir()) == []  # the folders went with their environments


# -- the hand-over parts, without a trainer ----------------------------------------------
class Notes(WorkspaceEnvironment):
    def write(self, path: str, text: str) -> str:
        """Write a file.

        Args:
            path: where
            text: what
        """
        self._path(path).write_text(text)
        return "ok"


def test_apply_environments_hands_each_sample_its_own_workspace(tmp_path, monkeypatch):
    monkeypatch.setenv(WORKSPACES_ENV, str(tmp_path))
    envs = [Notes(), Notes()]
    for env, files in zip(envs, ({"a.txt": "1"}, json.dumps({"a.txt": "2", "b": None})),
                          strict=True):
        env.reset(prompt="p", files=files)
    samples = [Sample("p", "c", metadata={"workspace": "/stale"}) for _ in envs]
    apply_environments(samples, envs)
    assert [s.metadata["workspace"] for s in samples] == [e.workspace for e in envs]
    assert (Path(envs[1].workspace) / "a.txt").read_text() == "2"
    assert not (Path(envs[1].workspace) / "b").exists()
    with pytest.raises(ValueError, match="not a path inside"):
        envs[0].write("../x", "1")
    with pytest.raises(ValueError, match="not a path inside"):
        envs[0].write("/etc/x", "1")
    (Path(envs[0].workspace) / "out").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="leads out"):
        envs[0].write("out/x", "1")
    envs[0].reset()  # emptied, links included
    assert list(Path(envs[0].workspace).iterdir()) == []


def test_swift_and_verl_state_is_hoisted_to_the_workspace_column():
    meta = {"rollout_infos": {"num_turns": 2, "workspace": "/w/1"}}
    hoist_workspace(meta, "rollout_infos")
    assert meta["workspace"] == "/w/1"
    meta = {"rollout_infos": {"num_turns": 2}}
    hoist_workspace(meta, "rollout_infos")
    assert "workspace" not in meta


def test_verl_agent_loop_extra_fields_reach_workspace_criteria(tmp_path, monkeypatch):
    """verl's reward managers merge the agent loop's ``extra_fields`` into ``extra_info``;
    compute_score reads a ``workspace`` there like any column."""
    from rewardkit_trainers.rewards.verl import compute_score

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "answer.txt").write_text("42\n")
    config = tmp_path / "r.yaml"
    config.write_text(json.dumps({"on_error": "ignore", "rewards": {"done": {
        "reward": "workspace_criteria", "params": {"allowed_roots": ["$WS_ROOT"], "criteria": [
            {"type": "file_matches", "path": "answer.txt", "pattern": "\\A42\\s*\\Z"}]}}}}))
    monkeypatch.setenv("WS_ROOT", str(tmp_path))
    info = {"workspace": str(tmp_path / "ws"), "turn_scores": [], "tool_rewards": []}
    assert compute_score("agent", "Done.", None, info, config=str(config))["done"] == 1.0
    (tmp_path / "ws" / "answer.txt").unlink()
    assert compute_score("agent", "Done.", None, info, config=str(config))["done"] == 0.0
    monkeypatch.delenv("WS_ROOT")
    out = compute_score("agent", "Done.", None, info, config=str(config))
    assert out["done_failed"] == 1.0


def test_environment_factory_is_loaded_or_refused_with_the_entry_named(tmp_path):
    (tmp_path / "envs.py").write_text("class Good:\n    def reset(self, **row): pass\n"
                                      "class NoReset:\n    pass\n")
    config = tmp_path / "c.yaml"
    assert load_environment_factory("envs:Good", config).__name__ == "Good"
    assert set(load_environment_factory({"a": "envs:Good"}, config)) == {"a"}
    for spec, problem in (("envs:Missing", "envs:Missing: AttributeError"),
                          ("envs:NoReset", "has no reset method"),
                          ("nowhere:Env", "nowhere:Env: ModuleNotFoundError"),
                          (["envs:Good"], "a 'module:Class' import path")):
        with pytest.raises(ConfigError) as caught:
            load_environment_factory(spec, config)
        assert problem in caught.value.render()
    refuse_environment_factory("trl", {"environment_factory": "envs:Good"}, "c.yaml")
    for backend, how in (("swift", "rollout_infos"), ("verl", "extra_fields"),
                         ("easyr1", "workspace column")):
        with pytest.raises(ConfigError) as caught:
            refuse_environment_factory(backend, {"environment_factory": "envs:Good"},
                                       "c.yaml")
        assert how in caught.value.render() and backend in caught.value.render()


@pytest.mark.parametrize("backend", ["swift", "verl", "easyr1"])
def test_other_backends_refuse_the_environment_factory(tmp_path, capsys, backend):
    """`rewardkit train --backend X` of the example (on a hub model: the tiny one is TRL's
    only) stops before planning, naming the key and each backend's own way."""
    import yaml
    from rewardkit_trainers.cli import run as cli_run

    config = yaml.safe_load(EXAMPLE.read_text())
    config["train"].update(model="Qwen/Qwen2.5-0.5B-Instruct",
                           output_dir=str(tmp_path / "out"),
                           dataset={"train": str(EXAMPLE.parent / "data" /
                                                 "agent-workspace.jsonl")})
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    assert cli_run("train", [str(path), "--backend", backend, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "train.extra_args.environment_factory" in err and f"backend {backend}" in err
    assert "Traceback" not in err


def test_a_swift_schedulers_rollout_infos_workspace_reaches_workspace_criteria(tmp_path):
    """ms-swift passes each row's ``rollout_infos`` (what its multi-turn scheduler's
    ``step`` / ``on_turn_end`` returned) to the ORMs; a ``workspace`` there becomes the
    sample's workspace column, which workspace_criteria reads."""
    from rewardkit_trainers.rewards.swift import swift_samples
    from rewardkit_workspace.reward import WorkspaceCriteria

    done, empty = tmp_path / "done", tmp_path / "empty"
    done.mkdir()
    empty.mkdir()
    (done / "answer.txt").write_text("42")
    samples = swift_samples(["Done.", "Done."], {"rollout_infos": [
        {"num_turns": 2, "workspace": str(done)}, {"num_turns": 2, "workspace": str(empty)}]})
    assert [s.metadata["workspace"] for s in samples] == [str(done), str(empty)]
    reward = WorkspaceCriteria({"allowed_roots": [str(tmp_path)], "criteria": [
        {"type": "file_contains", "path": "answer.txt", "text": "42"}]})
    assert [reward.grade(s).value for s in samples] == [1.0, 0.0]


def test_an_environments_get_reward_keeps_weight_1_beside_scheduled_components(tmp_path,
                                                                             monkeypatch):
    """An environment with ``get_reward`` is TRL's own reward column (weight 1) after
    rewardkit's; the weight schedule callback moves rewardkit's weights only and keeps
    that one (a weight vector one short would broadcast and scale it instead)."""
    import sys

    import torch
    from datasets import Dataset
    from rewardkit_trainers.environments import build_tiny_for_tools, environment_tools
    from rewardkit_trainers.quickstart import TinyModel
    from rewardkit_trainers.rewards.trl import trl_rewards
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv(WORKSPACES_ENV, str(tmp_path / "ws"))
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        from agent_workspace_env import NotesEnv
    finally:
        sys.path.remove(str(EXAMPLE.parent))

    class ScoredNotes(NotesEnv):
        def get_reward(self) -> float:
            return 0.25 if (Path(self.workspace) / "question.txt").is_file() else 0.0

    rows = [json.loads(line) for line in
            (EXAMPLE.parent / "data" / "agent-workspace.jsonl").read_text().splitlines()][:2]
    model, tokenizer = build_tiny_for_tools(TinyModel(hidden_size=16, num_layers=1,
                                                      num_heads=2, intermediate_size=32),
                                            rows, environment_tools(ScoredNotes),
                                            tmp_path / "base")
    rewards = trl_rewards({"rewards": {"done": {
        "reward": "workspace_criteria", "params": {"allowed_roots": ["$" + WORKSPACES_ENV]},
        "weight": {"schedule": "piecewise", "boundaries": [1], "values": [0.5, 2.0]}}}})
    torch.set_num_threads(2)
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4,
                      num_generations=2, max_completion_length=8, max_steps=2,
                      report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True,
                      logging_steps=1, **rewards.grpo_kwargs())
    trainer = GRPOTrainer(model=model, reward_funcs=rewards.funcs, args=args,
                          train_dataset=Dataset.from_list(arrow_safe(rows)),
                          processing_class=tokenizer, environment_factory=ScoredNotes)
    rewards.attach(trainer)
    assert trainer.reward_weights.tolist() == [0.5, 1.0]
    trainer.train()
    assert trainer.reward_weights.tolist() == [2.0, 1.0]
    logged = [h for h in trainer.state.log_history if "rewards/ScoredNotes/mean" in h]
    assert [h["rewards/ScoredNotes/mean"] for h in logged] == [0.25, 0.25]
    assert [h["rewards/done/mean"] for h in logged] == [0.0, 0.0]  # no answer.txt
    result = rewards.scorer._last[1]
    done = result.outcomes["done"]
    assert {done.score(i).status.value for i in range(len(result.samples))} == {"ok"}


def arrow_safe(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**row, "files": json.dumps(row["files"])} for row in rows]


def test_dry_run_shows_the_environments_tools(tmp_path, capsys, monkeypatch):
    from rewardkit_trainers.cli import run as cli_run

    monkeypatch.setenv(WORKSPACES_ENV, str(tmp_path / "ws"))  # the probe instance's folder

    assert cli_run("train", [str(EXAMPLE), "--dry-run", "--json",
                             "--output-dir", str(tmp_path / "out")]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["environment_factory"] == "agent_workspace_env:NotesEnv"
    assert [t["name"] for t in shown["environment_tools"]] == ["read_file", "write_file"]
    assert shown["environment_tools"][1]["parameters"]["required"] == ["path", "content"]
    assert "environment_factory" not in shown["grpo_config"]


def test_an_allowed_root_naming_an_unset_variable_is_an_error_naming_it(tmp_path,
                                                                       monkeypatch):
    from rewardkit_workspace.reward import WorkspaceCriteria

    monkeypatch.setenv(WORKSPACES_ENV, "")  # recorded, so undone after the test
    monkeypatch.delenv(WORKSPACES_ENV)
    (tmp_path / "a.txt").write_text("1")
    reward = WorkspaceCriteria({"allowed_roots": ["$" + WORKSPACES_ENV], "criteria": [
        {"type": "file_exists", "path": "a.txt"}]})
    score = reward.grade(Sample("", "", metadata={"workspace": str(tmp_path)}))
    assert score.status.value == "error" and "not set" in score.reason
    assert WORKSPACES_ENV in score.reason
    monkeypatch.setenv(WORKSPACES_ENV, str(tmp_path.parent))
    assert reward.grade(Sample("", "", metadata={"workspace": str(tmp_path)})).value == 1.0


def test_ms_swift_scheduler_workspace_through_swifts_own_rollout_and_orms(tmp_path):
    """ms-swift's run_multi_turn with a scheduler that works in a folder per trajectory and
    reports it in ``rollout_infos``; ms-swift's compute_rewards_per_func calls the ORM
    exported for workspace_criteria: the rollout that wrote the answer is paid 1, the one
    that only said it, the wrong one and the one writing outside its folder 0."""
    import yaml
    from backend_venvs import run_in_venv, venv_python
    from rewardkit_trainers.rewards.swift import export_plugin, func_name

    from rewardkit import parse_config

    venv_python("swift")  # skips, saying how to build it, when .venv-swift is absent
    config = {"on_error": "ignore", "rewards": {"done": {
        "reward": "workspace_criteria", "params": {
            "allowed_roots": [str(tmp_path / "workspaces")],
            "criteria": [{"type": "file_matches", "path": "answer.txt",
                          "pattern": "\\A42\\s*\\Z"}]}}}}
    info = export_plugin(parse_config(yaml.safe_load(yaml.safe_dump(config))), None,
                         tmp_path / "plugin.py")
    result = run_in_venv("swift", "swift_workspace_check.py", str(info.plugin),
                         str(tmp_path), func_name("done"), timeout=600)
    got = dict(zip(result["rollouts"], result["rewards"], strict=True))
    assert got == {"writes": [1.0], "says": [0.0], "wrong": [0.0], "escapes": [0.0]}
    infos = dict(zip(result["rollouts"], result["rollout_infos"], strict=True))
    assert infos["writes"]["workspace"] == str(tmp_path / "workspaces" / "writes")
    assert not result["outside"]


def test_verl_tool_workspace_through_verls_own_agent_loop_and_reward_loop(tmp_path):
    """verl's AgentLoopWorker runs rewardkit's tool agent loop with a stateful tool that
    writes into a folder per trajectory and records it in ``agent_data.extra_fields``;
    the reward loop hands it to compute_score in ``extra_info``: wrote the answer 1, wrong
    answer 0, wrote outside its folder 0; the rollout that called no tool left no folder,
    so its reward failed (0, flagged failed), not passed."""
    from backend_venvs import run_in_venv, venv_python

    venv_python("verl")  # skips, saying how to build it, when .venv-verl is absent
    config = tmp_path / "rewards.yaml"
    config.write_text(json.dumps({"on_error": "ignore", "rewards": {"done": {
        "reward": "workspace_criteria", "params": {
            "allowed_roots": [str(tmp_path / "workspaces")],
            "criteria": [{"type": "file_matches", "path": "answer.txt",
                          "pattern": "\\A42\\s*\\Z"}]}}}}))
    result = run_in_venv("verl", "verl_workspace_check.py", str(tmp_path),
                         env={"REWARDKIT_CONFIG": str(config)}, timeout=600)
    score = dict(zip(result["cases"], result["score"], strict=True))
    failed = dict(zip(result["cases"], result["extra"]["done_failed"], strict=True))
    assert score == {"writes": 1.0, "says": 0.0, "wrong": 0.0, "escapes": 0.0}
    assert failed == {"writes": 0.0, "says": 1.0, "wrong": 0.0, "escapes": 0.0}
    assert not result["outside"]
    folders = dict(zip(result["cases"], result["workspaces"], strict=True))
    assert folders["says"] is None  # no call, no folder
    assert Path(folders["writes"]).parent == (tmp_path / "workspaces").resolve()


def test_easyr1_refuses_a_workspace_reward_without_a_workspace_column(tmp_path, capsys):
    """EasyR1 rolls out text only: a workspace_criteria component whose column the rows
    lack is refused at planning (naming the component and the count), and planned when
    every row names its workspace."""
    import yaml
    from rewardkit_trainers.cli import run as cli_run

    rows = [json.loads(line) for line in
            (EXAMPLE.parent / "data" / "agent-workspace.jsonl").read_text().splitlines()]
    config = yaml.safe_load(EXAMPLE.read_text())
    config["train"].update(model="Qwen/Qwen2.5-0.5B-Instruct", extra_args={},
                           output_dir=str(tmp_path / "out"),
                           dataset={"train": str(tmp_path / "rows.jsonl")})
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli_run("train", [str(path), "--backend", "easyr1", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "rewards.task_done" in err and "4 of 4 rows lack" in err and "EasyR1" in err
    (tmp_path / "rows.jsonl").write_text("".join(
        json.dumps({**r, "workspace": str(tmp_path)}) + "\n" for r in rows))
    assert cli_run("train", [str(path), "--backend", "easyr1", "--dry-run"]) == 0


def test_a_script_of_ones_own_gets_a_root_the_reward_reads(monkeypatch):
    """Without `rewardkit train` (no $REWARDKIT_WORKSPACES), the first environment picks
    the default root and sets the variable, so ``allowed_roots: [$REWARDKIT_WORKSPACES]``
    reads its folders."""
    from rewardkit_workspace.reward import WorkspaceCriteria

    monkeypatch.setenv(WORKSPACES_ENV, "")  # recorded, so undone after the test
    monkeypatch.delenv(WORKSPACES_ENV)
    env = Notes()
    env.reset(files={"a.txt": "1"})
    assert Path(env.workspace).parent == Path(os.environ[WORKSPACES_ENV])
    sample = Sample("", "")
    apply_environments([sample], [env])
    reward = WorkspaceCriteria({"allowed_roots": ["$" + WORKSPACES_ENV], "criteria": [
        {"type": "file_exists", "path": "a.txt"}]})
    assert reward.grade(sample).value == 1.0
