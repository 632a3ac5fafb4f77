"""The papercuts a new user met in their first hour (issue 43 item 6), each as it was hit:
the README read top to bottom, a reward tried by hand, a plugin scaffolded and tested,
`rewardkit rewards` and the output of a command in a log."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rewardkit.cli", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_readme_says_to_activate_the_venv_before_its_first_rewardkit_command():
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"^rewardkit ", readme, re.M)
    activate = readme.find("source .venv/bin/activate")
    assert first is not None and 0 <= activate < first.start()


def test_readmes_same_config_on_every_backend_names_verls_exception():
    """verl refuses the default on_error (null); the README's promise says so."""
    fidelity = pytest.importorskip("rewardkit_trainers.fidelity")
    from rewardkit.config import ConfigError, RewardConfig

    default = RewardConfig.model_validate({"rewards": {"f": {"reward": "soft_format"}}})
    with pytest.raises(ConfigError, match="on_error"):
        fidelity.check(default, "verl")
    fidelity.check(default.model_copy(update={"on_error": "ignore"}), "verl")
    readme = " ".join((ROOT / "README.md").read_text().split())
    promise = readme[readme.index("The same config trains on every backend"):][:500]
    assert "verl" in promise and "on_error: ignore" in promise


# -- a reward the environment lacks ---------------------------------------------------------
def test_a_reward_of_a_plugin_not_installed_here_names_the_plugin_to_install(tmp_path: Path):
    """In a backend's own venv (here: REWARDKIT_PLUGINS loads no plugin) a config using
    code_execution was told "did you mean 'tool_call_valid'"."""
    import os

    cfg = tmp_path / "code.yaml"
    cfg.write_text("rewards:\n  tests: {reward: code_execution}\n")
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "validate", str(cfg)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "REWARDKIT_PLUGINS": "none-at-all"})
    assert proc.returncode == 2
    assert ("unknown reward 'code_execution': no installed plugin registers it; the "
            "rewardkit-code plugin does") in proc.stderr
    assert "pip install -e plugins/rewardkit-code" in proc.stderr
    assert "did you mean" not in proc.stderr


def test_a_misspelt_reward_still_gets_its_close_match():
    from rewardkit import UnknownRewardError, get_reward

    with pytest.raises(UnknownRewardError, match="no installed plugin registers it; did you "
                                                 "mean 'soft_format'"):
        get_reward("soft_fromat")


def test_the_first_party_reward_table_matches_what_the_plugins_register():
    from rewardkit.registry import FIRST_PARTY_REWARDS, registry

    folders = {p.parent.name for p in (ROOT / "plugins").glob("*/pyproject.toml")}
    assert set(FIRST_PARTY_REWARDS) == folders | {"rewardkit-trainers"}
    registered: dict[str, set[str]] = {}
    for plugin in registry.plugins():
        registered.setdefault(plugin.distribution, set()).update(plugin.rewards)
    for dist, names in FIRST_PARTY_REWARDS.items():
        if dist in registered:  # installed here (make setup installs every one)
            assert set(names) == registered[dist], dist


# -- a reward tried by hand ----------------------------------------------------------------
def test_a_reward_tried_on_a_text_takes_its_reference_as_a_keyword():
    from rewardkit import Sample, get_reward

    math_answer = get_reward("math_answer")
    assert math_answer("<answer>5</answer>", reference="5").value == 1.0
    assert math_answer("<answer>5</answer>", reference="6").value == 0.0
    # a parameter beside it is still a parameter
    assert math_answer("<answer>5,5</answer>", reference="5.5", decimal_comma=True).value == 1.0
    with pytest.raises(TypeError, match=r"a Sample \(or a list\) carries its own"):
        math_answer(Sample("", "<answer>5</answer>", "5"), reference="5")


def test_agents_doc_documents_tool_result_beside_trajectory():
    doc = (ROOT / "docs" / "agents.md").read_text()
    section = doc[doc.index("## Reading a trajectory in a reward"):doc.index("## The tool rewards")]
    for field in ("`content`", "`error`", "`timed_out`"):
        assert f"| {field} |" in section
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    shown = [b for b in blocks if "ToolResult(" in b]
    assert shown
    for block in shown:
        exec(compile(block, "docs/agents.md", "exec"), {"__name__": "agents_doc"})


# -- rewardkit rewards NAME --------------------------------------------------------------------
def test_rewards_name_is_a_screen_and_all_is_the_rest():
    brief = cli("rewards", "math_answer")
    assert brief.returncode == 0, brief.stderr
    lines = brief.stdout.splitlines()
    assert len(lines) <= 20 and max(map(len, lines)) <= 100
    assert lines[0] == "math_answer  (rewardkit, process)"
    assert any(line.startswith("  abs_tol = 1e-06: ") for line in lines)
    assert any(line.startswith("Example: ") for line in lines)
    assert lines[-1].endswith("rewardkit rewards math_answer --all")
    full = cli("rewards", "math_answer", "--all")
    assert len(full.stdout.splitlines()) > 2 * len(lines)
    assert "Plain numbers take a fast path" in full.stdout


def test_a_param_with_an_alias_is_listed_as_configs_write_it(capsys: pytest.CaptureFixture):
    from pydantic import Field

    from rewardkit import Params, Sample, reward
    from rewardkit.cli import main
    from rewardkit.registry import register, unregister

    class SchemaParams(Params):
        schema_: dict = Field(default_factory=dict, alias="schema",
                              description="the JSON schema the output follows")

    @reward(name="rk43_follows_schema", params=SchemaParams)
    def follows_schema(sample: Sample, params: SchemaParams) -> float:
        return 1.0

    register(follows_schema)
    try:
        assert main(["rewards", "rk43_follows_schema"]) == 0
        shown = capsys.readouterr().out
        assert main(["rewards", "rk43_follows_schema", "--json"]) == 0
        listed = capsys.readouterr().out
    finally:
        unregister("rk43_follows_schema")
    assert "  schema = {}: the JSON schema" in shown and "schema_" not in shown
    assert '"name": "schema"' in listed and "schema_" not in listed


# -- a new plugin ------------------------------------------------------------------------------
def test_a_new_plugins_readme_config_names_its_component_after_the_plugin(tmp_path: Path):
    assert cli("new-plugin", "keywords", "--dir", str(tmp_path)).returncode == 0
    readme = (tmp_path / "rewardkit-keywords" / "README.md").read_text()
    assert "  keywords:\n    reward: keywords_contains" in readme
    assert "explains" not in readme


def test_testing_a_new_plugin_before_installing_it_says_to_install_it(tmp_path: Path):
    assert cli("new-plugin", "keywords43", "--dir", str(tmp_path)).returncode == 0
    folder = tmp_path / "rewardkit-keywords43"
    proc = cli("test", "-v", cwd=folder)
    assert proc.returncode == 1
    assert "unknown reward 'keywords43_contains'" in proc.stdout
    assert (f"the plugin in {folder} (rewardkit-keywords43) is not installed, so its rewards "
            f"are not registered: pip install -e '{folder}[test]'") in proc.stdout


def test_a_failing_config_case_names_the_component_it_checks(tmp_path: Path):
    (tmp_path / "cfg.yaml").write_text(
        "rewards:\n  accuracy: {reward: exact_answer}\n  fmt: {reward: soft_format}\n")
    (tmp_path / "cfg.cases.yaml").write_text(
        "config: cfg.yaml\ncases:\n"
        "  - {name: accuracy pays, component: accuracy, completion: '<answer>5</answer>', "
        "reference: '4', expect: 1.0}\n"
        "  - {name: total pays, completion: '<answer>5</answer>', reference: '4', expect: 1.0}\n")
    proc = cli("test", str(tmp_path / "cfg.cases.yaml"))
    assert proc.returncode == 1
    firsts = [line for line in proc.stdout.splitlines() if line.startswith("config ")]
    assert firsts == ["config cfg.yaml, component accuracy (exact_answer): expected value "
                      "1.0, got 0.0",
                      "config cfg.yaml, the total: expected value 1.0, got 0.0"]


# -- output in a log ---------------------------------------------------------------------------
def test_a_long_path_is_never_cut_in_a_log(tmp_path: Path):
    """`rewardkit export` (a trainers command) printed through an 80-column console that
    wrapped a path in the middle of a name when its output went to a file."""
    pytest.importorskip("rewardkit_trainers")
    deep = tmp_path / ("a-rather-long-folder-name-for-the-exported-reward-file" * 2) / "reward.py"
    deep.parent.mkdir(parents=True)
    proc = cli("export", "easyr1", str(ROOT / "examples" / "quickstart.yaml"), "-o", str(deep))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {deep}" in proc.stdout.splitlines()
    assert f"worker.reward.reward_function={deep}:compute_score" in proc.stdout.splitlines()


def test_a_mean_reward_says_what_it_is_out_of():
    evaluate = pytest.importorskip("rewardkit_trainers.evaluate")
    from rich.console import Console

    from rewardkit import RewardSet

    quickstart = RewardSet.from_file(ROOT / "examples" / "quickstart.yaml")
    assert evaluate.max_total(quickstart, 600) == 2.0  # 1.5 + 0.25 + 0.25
    normalised = RewardSet.from_dict({"aggregate": "normalize_then_sum",
                                      "rewards": {"f": {"reward": "soft_format"}}})
    assert evaluate.max_total(normalised, 0) is None
    console = Console(width=100, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    evaluate.print_report(console, {"rows": 4, "accuracy_component": "correct", "models": {
        "trained": {"model": "m", "accuracy": 0.5, "mean_reward": 1.422, "max_reward": 2.0,
                    "components": {}, "full": {}}}})
    table = console.export_text()
    assert re.search(r"mean reward \(of 2\) +│ +1\.422", table), table
