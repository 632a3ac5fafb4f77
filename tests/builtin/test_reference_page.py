"""docs/rewards.md documents every built-in reward and every one of its parameters."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardkit import registry

PAGE = Path(__file__).resolve().parents[2] / "docs" / "rewards.md"
BUILTINS = sorted(cls.name for cls in registry.rewards() if cls.plugin == "rewardkit")


def test_there_are_builtins_to_document() -> None:
    assert len(BUILTINS) >= 10


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_reward_has_a_section_listing_its_params(name: str) -> None:
    page = PAGE.read_text(encoding="utf-8")
    heading = f"### {name}\n"
    assert heading in page
    section = page.split(heading, 1)[1].split("\n### ", 1)[0]
    for param in registry.get(name).Params.model_fields:
        assert f"`{param}`" in section, f"{name}: param {param!r} is not documented"


def _yaml_blocks(text: str) -> list[str]:
    import re

    return re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)


def test_the_length_scaled_and_token_snippets_are_valid_components() -> None:
    import yaml

    from rewardkit.config import parse_config

    page = PAGE.read_text(encoding="utf-8")
    section = page.split("## Length-scaled correctness", 1)[1].split("\n## ", 1)[0]
    blocks = _yaml_blocks(section)
    assert len(blocks) == 2
    for block in blocks:
        parse_config({"rewards": yaml.safe_load(block)}, "docs/rewards.md")
