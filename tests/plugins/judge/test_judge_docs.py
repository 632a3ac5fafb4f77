"""The config snippets of docs/plugins/judge.md and the translation_judge section load."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rewardkit.config import ConfigError, parse_config

DOCS = Path(__file__).resolve().parents[3] / "docs" / "plugins"


def _blocks(page: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)


def test_the_llm_judge_and_translation_judge_snippets_load() -> None:
    judge = _blocks((DOCS / "judge.md").read_text(encoding="utf-8"))
    translation = (DOCS / "translation.md").read_text(encoding="utf-8")
    section = translation.split("## translation_judge", 1)[1].split("\n## ", 1)[0]
    for block in [judge[0], *_blocks(section)]:
        parse_config(yaml.safe_load(block), "docs/plugins")


def test_the_reward_model_snippet_needs_its_model_directory() -> None:
    # a text block: the generic docs check cannot load it without the model on disk
    page = (DOCS / "judge.md").read_text(encoding="utf-8")
    block = re.findall(r"```text\n(rewards:.*?)```", page, re.DOTALL)[0]
    with pytest.raises(ConfigError) as err:
        parse_config(yaml.safe_load(block), "docs/plugins/judge.md")
    assert "/models/my-reward-model" in err.value.render()
