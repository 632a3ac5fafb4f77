"""The docs move with the code."""

from __future__ import annotations

from pathlib import Path

from rewardkit.config_reference import render_markdown

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_config_reference_page_is_generated_from_the_current_models():
    committed = (DOCS / "config-reference.md").read_text()
    assert committed == render_markdown(), (
        "docs/config-reference.md is stale: run `rewardkit schema --markdown > "
        "docs/config-reference.md`")


def test_every_config_key_is_documented():
    page = (DOCS / "config-reference.md").read_text()
    for key in ("aggregate", "on_error", "rewards", "limits", "weight", "stages", "when",
                "timeout", "mode", "until_step", "max_completion_chars", "piecewise"):
        assert f"`{key}`" in page


def test_readme_tour_config_is_valid():
    import re

    import yaml

    from rewardkit import parse_config

    readme = (DOCS.parent / "README.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", readme, re.DOTALL)
    assert block is not None
    parse_config(yaml.safe_load(block.group(1)), "README.md")


def test_plugin_guide_reward_can_be_tried_as_written():
    import doctest
    import re

    guide = (DOCS / "plugin-authors.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", guide, re.DOTALL)
    definition = next(b for b in blocks if "def keyword_groups" in b)
    tried = next(b for b in blocks if ">>> keyword_groups(" in b)
    namespace: dict = {"__name__": "plugin_guide"}
    exec(compile(definition, "docs/plugin-authors.md", "exec"), namespace)
    test = doctest.DocTestParser().get_doctest(tried, namespace, "plugin-authors.md",
                                               "docs/plugin-authors.md", 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted == 2
