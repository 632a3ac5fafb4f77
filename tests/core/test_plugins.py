"""Plugins: third-party distributions through the entry point, restriction, duplicates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit import RewardSet, UnknownRewardError, get_reward, registry


def cli(*args: str, env: dict[str, str] | None = None,
        pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    if pythonpath is not None:
        full_env["PYTHONPATH"] = f"{pythonpath}{os.pathsep}{full_env.get('PYTHONPATH', '')}"
    return subprocess.run([sys.executable, "-m", "rewardkit.cli", *args], capture_output=True,
                          text=True, timeout=60, env=full_env)


def test_installed_third_party_plugin_is_listed_with_its_distribution():
    rows = json.loads(cli("rewards", "--json").stdout)
    by_name = {r["name"]: r for r in rows}
    assert by_name["word_count_range"]["plugin"] == "rewardkit-wordcount"
    assert by_name["soft_format"]["plugin"] == "rewardkit"
    assert {p["name"] for p in by_name["word_count_range"]["params"]} == {"min_words",
                                                                          "max_words"}
    plugins = json.loads(cli("plugins", "--json").stdout)
    assert any(p["distribution"] == "rewardkit-wordcount" and p["version"] == "0.3.1"
               for p in plugins)


def test_third_party_reward_scores_through_a_config_and_validates_its_params():
    rs = RewardSet.from_dict({"rewards": {"short": {"reward": "word_count_range",
                                                    "params": {"max_words": 3}}}})
    assert rs.score([{"completion": "one two"}, {"completion": "a b c d"}]).values("short") \
        == [1.0, 0.0]
    bad = RewardSet.from_dict  # params checked by the plugin's own model at load time
    with pytest.raises(Exception, match="min_words must not exceed max_words"):
        bad({"rewards": {"s": {"reward": "word_count_range",
                               "params": {"min_words": 5, "max_words": 3}}}})


def test_environment_variable_restricts_which_plugins_load():
    only_builtin = json.loads(cli("rewards", "--json", env={"REWARDKIT_PLUGINS": ""}).stdout)
    names = {r["name"] for r in only_builtin}
    assert "soft_format" in names and "word_count_range" not in names
    chosen = json.loads(cli("rewards", "--json",
                            env={"REWARDKIT_PLUGINS": "rewardkit-wordcount"}).stdout)
    assert "word_count_range" in {r["name"] for r in chosen}


def _fake_distribution(root: Path, dist: str, module: str, reward_name: str) -> None:
    """A real installed distribution on a sys.path folder: module + dist-info with an
    entry point in the ``rewardkit`` group."""
    (root / f"{module}.py").write_text(
        "from rewardkit import hookimpl, reward\n"
        f"@reward(name={reward_name!r})\n"
        "def clash(sample):\n    return 1.0\n"
        "@hookimpl\ndef register_rewards(register):\n    register(clash)\n")
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[rewardkit]\n{module} = {module}\n")


def test_duplicate_reward_name_fails_naming_both_distributions(tmp_path):
    _fake_distribution(tmp_path, "rewardkit-clash", "clash_plugin", "word_count_range")
    proc = cli("rewards", pythonpath=tmp_path)
    assert proc.returncode == 2
    assert "registered twice" in proc.stderr
    assert "rewardkit-wordcount" in proc.stderr and "rewardkit-clash" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "soft_format" in proc.stdout  # the other rewards are still listed


def test_a_name_clash_is_reported_against_the_component_using_it(tmp_path):
    _fake_distribution(tmp_path, "rewardkit-clash", "clash_plugin", "word_count_range")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("rewards:\n  fmt: {reward: soft_format}\n"
                   "  short: {reward: word_count_range}\n")
    proc = cli("validate", str(cfg), pythonpath=tmp_path)
    assert proc.returncode == 2
    assert "rewards.short.reward: reward 'word_count_range' is registered twice: by " \
        in proc.stderr
    assert "rewardkit-wordcount" in proc.stderr and "rewardkit-clash" in proc.stderr
    assert "rewards.fmt" not in proc.stderr and "Traceback" not in proc.stderr
    unaffected = tmp_path / "ok.yaml"
    unaffected.write_text("rewards:\n  fmt: {reward: soft_format}\n")
    assert cli("validate", str(unaffected), pythonpath=tmp_path).returncode == 0


def test_plugins_variable_naming_nothing_installed_warns(tmp_path):
    proc = cli("rewards", "--json", env={"REWARDKIT_PLUGINS": "rewardkit-wordcont"})
    assert proc.returncode == 0
    assert "warning: REWARDKIT_PLUGINS names 'rewardkit-wordcont', which no installed " \
        "plugin distribution or entry point is called; did you mean " \
        "'rewardkit-wordcount'?" in proc.stderr
    assert "word_count_range" not in {r["name"] for r in json.loads(proc.stdout)}
    quiet = cli("rewards", "--json", env={"REWARDKIT_PLUGINS": "rewardkit-wordcount"})
    assert "warning" not in quiet.stderr


def test_broken_plugin_is_reported_and_others_still_load(tmp_path):
    (tmp_path / "broken_plugin.py").write_text("raise ImportError('missing dependency xyz')\n")
    info = tmp_path / "rewardkit_broken-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rewardkit-broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[rewardkit]\nbroken = broken_plugin\n")
    plugins = json.loads(cli("plugins", "--json", pythonpath=tmp_path).stdout)
    broken = next(p for p in plugins if p["distribution"] == "rewardkit-broken")
    assert "missing dependency xyz" in broken["error"]
    assert any(p["distribution"] == "rewardkit-wordcount" for p in plugins)


def test_unknown_reward_lists_close_matches():
    with pytest.raises(UnknownRewardError) as info:
        get_reward("word_count_rang")
    assert info.value.close_matches[0] == "word_count_range"


def test_registering_something_that_is_not_a_reward_is_refused():
    with pytest.raises(Exception, match="takes a Reward subclass"):
        registry.register(lambda s: 1.0)  # type: ignore[arg-type]


def _distribution_with(root: Path, dist: str, module: str, source: str) -> None:
    (root / f"{module}.py").write_text(source)
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[rewardkit]\n{module} = {module}\n")


_GREETER = '''
from pydantic import BaseModel, ConfigDict, Field
from rewardkit import hookimpl, load_config
from rewardkit.cli import EXIT_OK, UsageError

class Greeting(BaseModel):
    """How to greet."""
    model_config = ConfigDict(extra="forbid")
    word: str = Field("hello", description="the greeting")

def greet(args):
    if args.config is None:
        raise UsageError("greet needs a config")
    print(load_config(args.config).section("greeting").word, args.name)
    return EXIT_OK

@hookimpl
def register_commands(subparsers):
    p = subparsers.add_parser("greet", help="say hello from a plugin")
    p.add_argument("name")
    p.add_argument("--config")
    p.set_defaults(func=greet)

@hookimpl
def register_config_sections(register):
    register("greeting", Greeting)
'''


def test_a_plugin_adds_a_command_and_a_config_section(tmp_path):
    _distribution_with(tmp_path, "rewardkit-greeter", "greeter_plugin", _GREETER)
    assert "greet" in cli("--help", pythonpath=tmp_path).stdout
    config = tmp_path / "c.yaml"
    config.write_text("rewards: {f: {reward: soft_format}}\ngreeting: {word: hi}\n")
    proc = cli("greet", "ada", "--config", str(config), pythonpath=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "hi ada\n"), proc.stderr
    assert "Greeting" in json.loads(cli("schema", pythonpath=tmp_path).stdout)["$defs"]
    assert "`greeting`: How to greet. (rewardkit-greeter)" in cli(
        "schema", "--markdown", pythonpath=tmp_path).stdout
    config.write_text("rewards: {f: {reward: soft_format}}\ngreeting: {word: [1]}\n")
    bad = cli("validate", str(config), pythonpath=tmp_path)
    assert bad.returncode == 2 and "greeting.word:" in bad.stderr
    usage = cli("greet", "ada", pythonpath=tmp_path)
    assert (usage.returncode, usage.stderr) == (2, "error: greet needs a config\n")


def test_a_plugin_whose_command_hook_fails_is_reported_and_the_rest_works(tmp_path):
    _distribution_with(tmp_path, "rewardkit-badcmd", "badcmd_plugin",
                       "from rewardkit import hookimpl\n@hookimpl\n"
                       "def register_commands(subparsers):\n    raise RuntimeError('oops')\n")
    proc = cli("rewards", "--json", pythonpath=tmp_path)
    assert proc.returncode == 0
    assert "badcmd_plugin: register_commands failed: oops" in proc.stderr
    assert "soft_format" in proc.stdout


def test_a_section_named_like_a_core_key_is_refused_naming_the_distribution(tmp_path):
    _distribution_with(tmp_path, "rewardkit-grabby", "grabby_plugin",
                       "from pydantic import BaseModel\nfrom rewardkit import hookimpl\n"
                       "class Limits(BaseModel):\n    x: int = 0\n@hookimpl\n"
                       "def register_config_sections(register):\n"
                       "    register('limits', Limits)\n")
    proc = cli("schema", pythonpath=tmp_path)
    assert proc.returncode == 2
    assert "rewardkit-grabby: config section 'limits' is not a free top-level key" in proc.stderr


def test_the_command_and_section_example_of_the_plugin_guide_runs(tmp_path):
    import re

    guide = (Path(__file__).resolve().parents[2] / "docs" / "plugin-authors.md").read_text()
    example = next(block for block in re.findall(r"```python\n(.*?)```", guide, re.DOTALL)
                   if "register_commands" in block)
    _distribution_with(tmp_path, "rewardkit-keywords", "keywords_guide_plugin", example)
    config = tmp_path / "c.yaml"
    config.write_text("rewards: {f: {reward: soft_format}}\nreport: {out: k.html}\n")
    proc = cli("keyword-report", str(config), pythonpath=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "writing k.html\n"), proc.stderr
    config.write_text("rewards: {f: {reward: soft_format}}\n")
    proc = cli("keyword-report", str(config), pythonpath=tmp_path)
    assert proc.returncode == 2 and "has no report: section" in proc.stderr


def test_the_fixture_plugin_is_installed_for_the_tests_not_into_the_environment():
    from importlib import metadata

    test_plugins = Path(__file__).resolve().parents[2] / "build" / "test-plugins"
    where = Path(str(metadata.distribution("rewardkit-wordcount").locate_file(""))).resolve()
    assert where == test_plugins.resolve()  # installed by tests/conftest.py
    assert not str(where).startswith(sys.prefix)


def test_make_setup_does_not_install_the_fixture_plugins():
    root = Path(__file__).resolve().parents[2]
    plan = subprocess.run(["make", "-n", "-B", "setup"], cwd=root, capture_output=True,
                          text=True, timeout=60)
    assert plan.returncode == 0, plan.stderr
    assert '-e "trainers' in plan.stdout  # the other distributions are
    assert "tests/thirdparty" not in plan.stdout
