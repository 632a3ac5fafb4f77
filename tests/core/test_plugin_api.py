"""The plugin API is what `rewardkit` exports: the registry module, the hook types, the
usage error and exit codes, how hooks are called, and the trace of who registered what."""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path

from test_plugins import _distribution_with, cli

import rewardkit
from rewardkit import hookspecs

ROOT = Path(__file__).resolve().parents[2]


def test_rewardkit_registry_is_the_module_and_registers_as_the_docs_show():
    import rewardkit.registry as r
    from rewardkit.registry import register, unregister

    assert r.ENTRY_POINT_GROUP == "rewardkit"
    assert rewardkit.registry is r

    @rewardkit.reward
    def api_probe_reward(sample: rewardkit.Sample) -> float:
        return 1.0

    try:
        assert register(api_probe_reward) is api_probe_reward
        assert "api_probe_reward" in r.names()
        assert r.get("api_probe_reward") is api_probe_reward
        assert rewardkit.get_reward("api_probe_reward") is api_probe_reward
    finally:
        unregister("api_probe_reward")
    assert "api_probe_reward" not in r.names()


def test_a_command_hook_needs_nothing_outside_rewardkit():
    import rewardkit.cli

    assert rewardkit.UsageError is rewardkit.cli.UsageError  # what the command line catches
    assert (rewardkit.EXIT_OK, rewardkit.EXIT_FAIL, rewardkit.EXIT_USAGE) == (0, 1, 2)
    annotation = inspect.signature(hookspecs.register_commands).parameters["subparsers"]
    assert annotation.annotation == "Subcommands"  # a public name, no argparse private
    assert "_SubParsersAction" not in inspect.getsource(hookspecs.register_commands)


def test_the_guides_command_plugin_imports_only_from_rewardkit_and_pydantic():
    guide = (ROOT / "docs" / "plugin-authors.md").read_text()
    example = next(block for block in re.findall(r"```python\n(.*?)```", guide, re.DOTALL)
                   if "register_commands" in block)
    imported = {node.module for node in ast.walk(ast.parse(example))
                if isinstance(node, ast.ImportFrom)}
    assert imported == {"pydantic", "rewardkit"}


_WRAPPING = '''
from rewardkit import Sample, hookimpl, reward

@reward
def wrapped_reward(sample: Sample) -> float:
    return 1.0

@hookimpl(hookwrapper=True)
def register_rewards(register):
    register(wrapped_reward)
    yield
'''

_ORDERED = '''
from rewardkit import Sample, Subcommands, hookimpl, reward

@reward
def ordered_reward(sample: Sample) -> float:
    return 1.0

@hookimpl(trylast=True)
def register_rewards(register):
    register(ordered_reward)

def hello(args):
    print("hello")
    return 0

@hookimpl(tryfirst=True)
def register_commands(subparsers: Subcommands):
    subparsers.add_parser("ordered-hello").set_defaults(func=hello)
'''


def test_a_hook_wrapper_is_refused_and_named_and_ordering_markers_change_nothing(tmp_path):
    _distribution_with(tmp_path, "rewardkit-wrapping", "wrapping_plugin", _WRAPPING)
    _distribution_with(tmp_path, "rewardkit-ordered", "ordered_plugin", _ORDERED)
    plugins = {p["distribution"]: p for p in
               json.loads(cli("plugins", "--json", pythonpath=tmp_path).stdout)}
    assert "hook wrapper" in plugins["rewardkit-wrapping"]["error"]
    names = {r["name"] for r in json.loads(cli("rewards", "--json", pythonpath=tmp_path).stdout)}
    assert "wrapped_reward" not in names and "ordered_reward" in names
    proc = cli("ordered-hello", pythonpath=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "hello\n"), proc.stderr


def test_the_trace_switch_names_the_plugin_of_each_reward_section_and_command(tmp_path):
    _distribution_with(tmp_path, "rewardkit-ordered", "ordered_plugin", _ORDERED)
    quiet = cli("rewards", "--json", pythonpath=tmp_path)
    assert "rewardkit plugins:" not in quiet.stderr
    proc = cli("rewards", "--json", pythonpath=tmp_path,
               env={"REWARDKIT_TRACE_PLUGINS": "1"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert ("rewardkit plugins: ordered_plugin (rewardkit-ordered) registered reward "
            "ordered_reward") in lines
    assert "rewardkit plugins: ordered_plugin registered command ordered-hello" in lines
    assert ("rewardkit plugins: rewardkit.builtin.format (rewardkit) registered reward "
            "soft_format") in lines
    assert "rewardkit plugins: rewardkit.cli.commands registered command rewards" in lines
