"""Config files: shapes that load, and every invalid one rejected with file, key path and
reason, exit code 2 and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit import ConfigError, RewardSet, load_config


def write(tmp_path: Path, text: str, name: str = "cfg.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rewardkit.cli", *args],
                          capture_output=True, text=True, timeout=60)


def test_yaml_and_toml_give_the_same_config(tmp_path):
    y = write(tmp_path, "rewards:\n  fmt: {reward: soft_format, weight: 0.5}\n")
    t = write(tmp_path, '[rewards.fmt]\nreward = "soft_format"\nweight = 0.5\n', "cfg.toml")
    assert load_config(y) == load_config(t)


@pytest.mark.parametrize(
    ("text", "path", "reason"),
    [
        ("rewards: {}\n", "rewards", "at least 1 item"),
        ("rewards:\n  a: {reward: soft_fromat}\n", "rewards.a.reward",
         "did you mean 'soft_format'"),
        ("rewards:\n  a: {reward: soft_format, weight: heavy}\n", "rewards.a.weight", ""),
        ("rewards:\n  a: {reward: soft_format, wieght: 1}\n", "rewards.a.wieght", "unknown key"),
        ("rewards:\n  a: {reward: soft_format, params: {scor: 2}}\n",
         "rewards.a.params.scor", "unknown key"),
        ("rewards:\n  a: {reward: soft_format, params: {score: high}}\n",
         "rewards.a.params.score", "valid number"),
        ("rewards:\n  a:\n    reward: soft_format\n    weight: {schedule: linear, start: 0}\n",
         "rewards.a.weight.steps", "Field required"),
        ("rewards:\n  a:\n    reward: soft_format\n    weight: {schedule: zigzag}\n",
         "rewards.a.weight", "zigzag"),
        ("rewards:\n  a:\n    reward: soft_format\n    stages:\n      - {params: {score: 1}}\n"
         "      - {until_step: 5}\n", "rewards.a.stages", "not the last stage"),
        ("rewards:\n  a:\n    reward: soft_format\n    stages:\n"
         "      - {until_step: 5, params: {score: x}}\n", "rewards.a.stages.0.params.score", ""),
        ("rewards:\n  a: {reward: soft_format, timeout: -1}\n", "rewards.a.timeout",
         "greater than 0"),
        ("aggregate: product\nrewards:\n  a: {reward: soft_format}\n", "aggregate", "product"),
        ("rewards: [1, 2\n", "", "YAML syntax error at line"),
        ("- just\n- a list\n", "", "expected a mapping"),
    ],
)
def test_invalid_config_names_key_path_and_reason(tmp_path, text, path, reason):
    cfg = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    rendered = info.value.render()
    assert str(cfg) in rendered
    assert any(p == path for p, _ in info.value.problems) or (path == "" and info.value.problems)
    assert reason in rendered


def test_invalid_config_from_the_cli_exits_2_without_traceback(tmp_path):
    cfg = write(tmp_path, "rewards:\n  a: {reward: soft_format, params: {scor: 2}}\n")
    proc = run_cli("validate", str(cfg))
    assert proc.returncode == 2
    assert f"{cfg}" in proc.stderr
    assert "rewards.a.params.scor: unknown key" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_missing_config_file_is_a_clean_error(tmp_path):
    proc = run_cli("validate", str(tmp_path / "nope.yaml"))
    assert proc.returncode == 2
    assert "cannot read file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_schema_command_prints_the_json_schema():
    proc = run_cli("schema")
    schema = json.loads(proc.stdout)
    assert "rewards" in schema["properties"]
    assert "Component" in schema["$defs"]


def test_stages_switch_params_and_weight_by_step():
    rs = RewardSet.from_dict({"rewards": {"f": {
        "reward": "soft_format",
        "stages": [{"until_step": 20, "params": {"score": 0.5}, "weight": 0.5},
                   {"params": {"score": 1.0}, "weight": 0.9}]}}})
    sample = [{"completion": "<think>a</think><answer>1</answer>"}]
    assert rs.score(sample, step=19).totals == [0.25]
    assert rs.score(sample, step=20).totals == [0.9]


def test_schedules_drive_the_weight():
    rs = RewardSet.from_dict({"rewards": {
        "lin": {"reward": "soft_format", "weight": {"schedule": "linear", "start": 0.5,
                                                    "end": 0.9, "steps": 100}},
        "cos": {"reward": "soft_format", "weight": {"schedule": "cosine", "start": 1.0,
                                                    "end": 0.0, "steps": 10}},
        "pw": {"reward": "soft_format", "weight": {"schedule": "piecewise",
                                                   "boundaries": [20, 50],
                                                   "values": [0.5, 0.3, 0.1]}},
        "wu": {"reward": "soft_format", "weight": {"schedule": "warmup", "value": 1.0,
                                                   "warmup_steps": 4}},
        "const": {"reward": "soft_format", "weight": {"schedule": "constant", "value": 2}},
    }})
    w0, w5, w50, w200 = (rs.weights(s) for s in (0, 5, 50, 200))
    assert (w0["lin"], w50["lin"], w200["lin"]) == pytest.approx((0.5, 0.7, 0.9))
    assert (w0["cos"], w5["cos"], w200["cos"]) == pytest.approx((1.0, 0.5, 0.0))
    assert (w0["pw"], w50["pw"], rs.weights(19)["pw"]) == (0.5, 0.1, 0.5)
    assert (w0["wu"], rs.weights(2)["wu"], w5["wu"]) == (0.0, 0.5, 1.0)
    assert w200["const"] == 2.0


def test_routing_scores_only_matching_metadata():
    rs = RewardSet.from_dict({"rewards": {
        "math": {"reward": "soft_format", "when": {"task": "math"}},
        "multi": {"reward": "soft_format", "when": {"task": ["code", "gui"]}}}})
    c = "<think>a</think><answer>1</answer>"
    res = rs.score([{"completion": c, "task": "math"}, {"completion": c, "task": "gui"},
                    {"completion": c}])
    assert res.values("math") == [1.0, None, None]
    assert res.values("multi") == [None, 1.0, None]
    assert res[1].scores["math"].status == "skipped"
    assert res.totals == [1.0, 1.0, None]  # nothing applied to the last sample


def test_weight_zero_is_logged_but_not_trained_on():
    rs = RewardSet.from_dict({"rewards": {"f": {"reward": "soft_format", "weight": 0}}})
    res = rs.score([{"completion": "<think>a</think><answer>1</answer>"}])
    assert res.totals == [0.0]
    assert res.values("f") == [1.0]
    assert res.metrics["components"]["f"]["mean"] == 1.0


# -- validate: every problem in one pass, did-you-mean, clashes, schedules ---------------
def test_every_problem_is_reported_in_one_pass(tmp_path):
    cfg = write(tmp_path, (
        "aggregate: weighted_summ\n"
        "rewards:\n"
        "  fmt: {reward: soft_format, wieght: 0.5}\n"
        "  acc: {reward: math_answr}\n"
        "  num: {reward: answer_is_number, params: {integer_onyl: true}}\n"
        "  staged:\n"
        "    reward: soft_format\n"
        "    stages: [{until_step: 10, params: {score: -1}}, {params: {reasoning_tagg: r}}]\n"))
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    paths = [p for p, _ in info.value.problems]
    assert "aggregate" in paths                       # the shape layer ...
    assert "rewards.fmt.wieght" in paths
    assert "rewards.acc.reward" in paths              # ... and the registry layer ...
    assert "rewards.num.params.integer_onyl" in paths  # ... and the params layer, together
    assert "rewards.staged.stages.1.params.reasoning_tagg" in paths


def test_misspelt_keys_get_a_did_you_mean(tmp_path):
    cfg = write(tmp_path, "rewards:\n  fmt: {reward: soft_format, wieght: 0.5, "
                          "params: {reasoning_tagg: r}}\n")
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    problems = dict(info.value.problems)
    assert problems["rewards.fmt.wieght"] == "unknown key; did you mean 'weight'?"
    assert problems["rewards.fmt.params.reasoning_tagg"] == \
        "unknown key; did you mean 'reasoning_tag'?"


def test_validate_shows_a_scheduled_weight_as_its_schedule(tmp_path):
    cfg = write(tmp_path, (
        "rewards:\n"
        "  fixed: {reward: soft_format, weight: 0.5}\n"
        "  ramp: {reward: soft_format, weight: {schedule: linear, start: 0.5, end: 0.9, "
        "steps: 100}}\n"
        "  staged:\n    reward: soft_format\n"
        "    stages: [{until_step: 20, weight: 0.5}, {weight: 0.1}]\n"))
    proc = run_cli("validate", str(cfg), "--step", "50")
    assert proc.returncode == 0, proc.stderr
    assert "0.5 until step 20, then 0.1; at step 50: 0.1" in proc.stdout  # the table
    rows = json.loads(run_cli("validate", str(cfg), "--json", "--step", "50").stdout)
    by_name = {r["component"]: r for r in rows["components"]}
    assert by_name["fixed"]["weight_text"] == "0.5"
    assert by_name["ramp"]["weight_text"] == \
        "linear (start: 0.5, end: 0.9, steps: 100, start_step: 0); at step 50: 0.7"
    assert by_name["fixed"]["weight_spec"] == 0.5
    assert by_name["ramp"]["weight_spec"]["schedule"] == "linear"
    assert by_name["staged"]["weight_spec"] == [{"until_step": 20, "weight": 0.5},
                                                {"weight": 0.1}]


# -- wording of the commonest weight and schedule mistakes ------------------------------
@pytest.mark.parametrize(
    ("weight", "path", "message"),
    [
        ("{schedule: linaer, start: 0, end: 1, steps: 5}", "rewards.a.weight",
         "unknown schedule 'linaer'; did you mean 'linear'? "
         "(one of: constant, linear, cosine, piecewise, warmup)"),
        ("high", "rewards.a.weight",
         'expected a number or a schedule ({schedule: linear, ...}), not text (got "high")'),
        ('"0.2"', "rewards.a.weight",
         'expected a number, not text: write it without quotes (got "0.2")'),
        ("true", "rewards.a.weight", "expected a number, not true/false (got true)"),
        ('{schedule: linear, start: "0.5", end: 1, steps: 5}', "rewards.a.weight",
         "start: expected a number, not text: write it without quotes"),
    ],
)
def test_weight_mistakes_read_as_one_plain_line(tmp_path, weight, path, message):
    """One problem per mistake, in the words the other keys use: no pydantic tag jargon,
    no 'constrained-float' in the path, and a quoted number is refused, not read."""
    cfg = write(tmp_path, f"rewards:\n  a:\n    reward: soft_format\n    weight: {weight}\n")
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert len(info.value.problems) == 1, info.value.problems
    (got_path, reason), = info.value.problems
    assert got_path == path
    assert reason.startswith(message)
    assert "constrained" not in info.value.render() and "Input tag" not in reason


def test_a_quoted_stage_weight_is_refused_too(tmp_path):
    cfg = write(tmp_path, "rewards:\n  a:\n    reward: soft_format\n"
                          "    stages: [{until_step: 3, weight: '1'}, {weight: 0.5}]\n")
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert [p for p, _ in info.value.problems] == ["rewards.a.stages.0.weight"]


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("rewards:\n  f: {reward: soft_format}\n  f: {reward: tag_count}\n", "rewards"),
        ("rewards:\n  f: {reward: soft_format, params: {score: 1, score: 2}}\n",
         "rewards.f.params"),
        ("rewards:\n  f: {reward: soft_format}\nrewards:\n  g: {reward: tag_count}\n", ""),
    ],
)
def test_a_duplicate_key_is_reported_where_it_is(tmp_path, text, path):
    """A repeated component is a problem of ``rewards``, not of the top level; a key
    repeated on one line (a flow mapping) is caught as well."""
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    (got_path, reason), = info.value.problems
    assert got_path == path
    assert reason.startswith("duplicate key")
