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
