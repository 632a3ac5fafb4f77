"""examples/tool-use.yaml is a complete example on every backend.

Its tools (examples/tool_use_tools.py) give the results recorded in its rollouts and
refuse what is not arithmetic; ``rewardkit train examples/tool-use.yaml --dry-run`` plans
each backend with that backend's own tool wiring (``train.backend_args``), run by the
``rewardkit`` of the backend's own venv, and each backend's own loader reads the tools
file it is handed (TRL's schemas, ms-swift's scheduler registry and argument parser,
verl's ``function_tool_path`` loader and Hydra config). EasyR1 refuses it: it has no
multi-turn rollout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from backend_venvs import ROOT, run_in_venv, venv_python

EXAMPLES = ROOT / "examples"
CONFIG = EXAMPLES / "tool-use.yaml"
ROLLOUTS = EXAMPLES / "data" / "tool-use.jsonl"
#: the components that read the trajectory or the finish reason (all but none)
TRAJECTORY_REWARDS = ("answer", "right_calls", "valid_calls", "tool_errors", "efficiency",
                      "non_stop", "valid_per_turn")

sys.path.insert(0, str(EXAMPLES))
import tool_use_tools  # noqa: E402  (examples/ is no package: the module a user imports)


def recorded_calls() -> list[tuple[str, dict, str]]:
    """(tool, arguments, recorded result) of every call in the rollouts that has a
    result, matched by ``tool_call_id``."""
    out = []
    for line in ROLLOUTS.read_text(encoding="utf-8").splitlines():
        messages = json.loads(line)["completion"]
        calls = {c["id"]: c["function"] for m in messages for c in m.get("tool_calls") or []}
        for m in messages:
            if m["role"] == "tool":
                call = calls[m["tool_call_id"]]
                out.append((call["name"], json.loads(call["arguments"]), m["content"]))
    return out


def test_the_tools_give_the_results_recorded_in_the_rollouts():
    calls = recorded_calls()
    assert len(calls) == 14
    for name, arguments, recorded in calls:
        tool = getattr(tool_use_tools, name)
        if recorded.startswith("{"):  # a failed call: {"error": ...}
            with pytest.raises(ValueError) as failed:
                tool(**arguments)
            assert json.loads(recorded) == {"error": str(failed.value)}
        else:
            assert tool(**arguments) == recorded, (name, arguments)


def test_the_schemas_get_json_schema_reads_are_the_rollouts_tools():
    """What TRL and verl render (transformers' ``get_json_schema``) is what the rows offer:
    the same names, required arguments, types and enums, so ``tool_call_valid`` judges a
    call the same way against either."""
    from transformers.utils import get_json_schema

    offered = json.loads(ROLLOUTS.read_text(encoding="utf-8").splitlines()[0])["tools"]
    for row_tool in offered:
        name = row_tool["function"]["name"]
        ours = get_json_schema(getattr(tool_use_tools, name))["function"]
        theirs = row_tool["function"]
        assert ours["description"] == theirs["description"]
        assert ours["parameters"]["required"] == theirs["parameters"]["required"]
        for arg, spec in theirs["parameters"]["properties"].items():
            got = ours["parameters"]["properties"][arg]
            assert (got["type"], got.get("enum")) == (spec["type"], spec.get("enum")), arg


@pytest.mark.parametrize("expression", [
    "__import__('os')", "__import__('os').system('true')", "open('/etc/passwd')",
    "(1).__class__", "x", "'a' * 3", "lambda: 1", "[1, 2]", "1 if 1 else 2", "True + 1",
    "10 ** 10 ** 10", "1 / 0", "(-8) ** 0.5", "7.456 times 3", "1" * 300, ""])
def test_calculate_refuses_what_is_not_arithmetic(expression: str):
    with pytest.raises(ValueError):
        tool_use_tools.calculate(expression)


def test_calculate_and_convert_units_on_honest_input():
    assert tool_use_tools.calculate("(2 + 3) * 4 - 6 / 3") == "18"
    assert tool_use_tools.calculate("-2 ** 2 + 7 // 2 + 7 % 4") == "2"
    assert tool_use_tools.convert_units(1, "kg", "lb", precision=2) == "2.2"
    assert tool_use_tools.convert_units(5, "mi", "mi") == "5"
    for units in (("km", "kg"), ("km", "m")):
        with pytest.raises(ValueError):
            tool_use_tools.convert_units(1, *units)


def dry_run(venv: str, backend: str, out: Path) -> subprocess.CompletedProcess[str]:
    """``rewardkit train examples/tool-use.yaml --backend B --dry-run --json`` with the
    ``rewardkit`` of ``.venv`` (``main``) or of a backend's venv, in a scratch folder."""
    rewardkit = (Path(sys.executable).parent if venv == "main"
                 else venv_python(venv).parent) / "rewardkit"
    return subprocess.run(
        [str(rewardkit), "train", str(CONFIG), "--backend", backend, "--dry-run", "--json",
         "--output-dir", str(out)], capture_output=True, text=True, timeout=300, cwd=out.parent)


def test_trl_gets_the_tools_and_no_other_backends_arguments(tmp_path: Path):
    from transformers.utils import get_json_schema

    proc = dry_run("main", "trl", tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["tools"] == [get_json_schema(f)["function"] for f in
                              (tool_use_tools.convert_units, tool_use_tools.calculate)]
    assert "tools_note" not in shown and shown["warnings"] == [] and shown["rows"] == 9
    config = shown["grpo_config"]
    assert config["max_tool_calling_iterations"] == 2 and "tools" not in config
    assert not {"external_plugins", "multi_turn_scheduler", "max_turns"} & set(config)
    assert not [k for k in config if k.startswith("actor_rollout_ref")]


def test_swift_gets_the_scheduler_and_its_flags_parse(tmp_path: Path):
    proc = dry_run("swift", "swift", tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (command,) = json.loads(proc.stdout)["commands"]
    argv = command["argv"]
    assert argv[argv.index("--multi_turn_scheduler") + 1] == "tool_use"
    assert not [a for a in argv if a in ("--tools", "--max_tool_calling_iterations")
                or a.startswith(("--actor_rollout_ref", "actor_rollout_ref"))]
    argv_file = tmp_path / "argv.json"
    argv_file.write_text(json.dumps(argv))
    parsed = run_in_venv("swift", "swift_args_check.py", str(argv_file))
    assert parsed["unknown"] == []
    assert parsed["parsed"]["external_plugins"] == [
        str(tmp_path / "out/rewardkit_swift_plugin.py"),
        str(EXAMPLES / "tool_use_swift_scheduler.py")]
    # ms-swift's loader registers the scheduler; its step answers the honest rollout's
    # call with the result recorded in the rollouts
    check = subprocess.run([str(venv_python("swift")), "-c", SWIFT_SCHEDULER_CHECK,
                            str(EXAMPLES / "tool_use_swift_scheduler.py")],
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stderr[-3000:]
    assert json.loads(check.stdout.splitlines()[-1]) == [
        {"role": "tool", "content": "7.456"},
        {"role": "tool", "content": '{"error": "invalid syntax"}'}]


SWIFT_SCHEDULER_CHECK = """
import json, sys
from types import SimpleNamespace as NS
from swift.rollout import MultiTurnScheduler, multi_turns
from swift.utils import import_external_file
import_external_file(sys.argv[1])
scheduler = multi_turns["tool_use"]
assert issubclass(scheduler, MultiTurnScheduler)
calls = [NS(function=NS(name="convert_units",
                        arguments='{"value": 12, "from_unit": "km", "to_unit": "mi"}')),
         NS(function=NS(name="calculate", arguments='{"expression": "7.456 times 3"}'))]
request = NS(messages=[])
out = scheduler.step(None, request, NS(message=NS(tool_calls=calls)), 1)
print(json.dumps(out["infer_request"].messages))
"""


def test_verl_gets_the_function_tools_and_its_config_composes(
        tmp_path: Path, tiny_tokenizer_dir: Path):
    proc = dry_run("verl", "verl", tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (command,) = json.loads(proc.stdout)["commands"]
    argv = command["argv"]
    tools_file = EXAMPLES / "tool_use_verl_tools.py"
    for override in (f"actor_rollout_ref.rollout.multi_turn.function_tool_path={tools_file}",
                     "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=3",
                     "actor_rollout_ref.rollout.multi_turn.enable=true",
                     "actor_rollout_ref.rollout.agent.default_agent_loop=rewardkit_tool_agent"):
        assert override in argv
    assert not [a for a in argv if a.split("=")[0] in (
        "tools", "max_tool_calling_iterations", "external_plugins", "multi_turn_scheduler")]
    argv_file = tmp_path / "argv.json"
    argv_file.write_text(json.dumps(argv))
    composed = run_in_venv("verl", "verl_args_check.py", str(argv_file),
                           str(tiny_tokenizer_dir))
    assert composed["rows"] == 9
    # verl's own loader reads the file the override names, and its tools answer as recorded
    check = subprocess.run([str(venv_python("verl")), "-c", VERL_TOOLS_CHECK, str(tools_file)],
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stderr[-3000:]
    assert json.loads(check.stdout.splitlines()[-1]) == {
        "names": ["calculate", "convert_units"], "result": "7.456", "sum": "22.368"}


VERL_TOOLS_CHECK = """
import asyncio, json, sys
from verl.tools.function_tool import load_function_tools_from_path
tools = {t.name: t for t in load_function_tools_from_path(sys.argv[1])}
result = asyncio.run(tools["convert_units"].call({"value": 12, "from_unit": "km",
                                                  "to_unit": "mi"}))
total = asyncio.run(tools["calculate"].call({"expression": "7.456*3"}))
print(json.dumps({"names": sorted(tools), "result": result, "sum": total}))
"""


def test_easyr1_refuses_it_naming_the_trajectory_rewards(tmp_path: Path):
    proc = dry_run("main", "easyr1", tmp_path / "out")
    assert proc.returncode == 2, proc.stdout + proc.stderr  # a config error
    assert "Traceback" not in proc.stderr
    for name in TRAJECTORY_REWARDS:
        assert f"rewards.{name}: needs a multi-turn trajectory" in proc.stderr
    assert "EasyR1 rolls out text only" in proc.stderr


def test_one_trl_step_of_the_example_with_its_tools(tmp_path: Path):
    """A real `rewardkit train` step of the example's own config, its model swapped for a
    local tiny Qwen2 with Qwen2.5's tool-rendering chat template (test_trl_multiturn's;
    untrained, so it calls no tool): GRPOTrainer got the example's tools, whose schemas
    reach every scored row, and each component grades."""
    import shutil

    import yaml
    from rewardkit_trainers.cli import run as cli_run
    from test_trl_multiturn import train_config

    train_config(tmp_path, None)  # saves the model and tokenizer in tmp_path/base
    example = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    example["train"].update(model=str(tmp_path / "base"), output_dir=str(tmp_path / "out"),
                            dataset={"train": str(ROLLOUTS)}, max_steps=1,
                            num_generations=2, batch_size=2, max_completion_length=16)
    shutil.copy(EXAMPLES / "tool_use_tools.py", tmp_path / "tool_use_tools.py")
    config = tmp_path / "tool-use.yaml"  # beside its tools, as a copy of the example is
    config.write_text(yaml.safe_dump(example), encoding="utf-8")
    assert cli_run("train", [str(config)]) == 0
    scored = [json.loads(line) for line in
              (tmp_path / "out" / "scored_samples.jsonl").read_text().splitlines()]
    assert len(scored) == 4
    for row in scored:
        assert [t["function"]["name"] for t in row["tools"]] == ["convert_units", "calculate"]
        for name in ("answer", "right_calls", "valid_calls", "non_stop"):
            assert row["components"][name]["status"] == "ok", (name, row["components"][name])


def test_every_backend_gets_the_same_turn_limit():
    """Three assistant turns on every backend: TRL counts tool rounds (each round adds an
    assistant turn after the first), ms-swift and verl assistant turns; before, TRL's 3
    rounds gave it a fourth turn. The efficiency reward's limit is the same."""
    import yaml

    example = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    args = example["train"]["backend_args"]
    turns = {"trl": args["trl"]["max_tool_calling_iterations"] + 1,
             "swift": args["swift"]["max_turns"],
             "verl": args["verl"]["actor_rollout_ref.rollout.multi_turn.max_assistant_turns"],
             "efficiency": example["rewards"]["efficiency"]["params"]["max_turns"]}
    assert set(turns.values()) == {3}, turns
