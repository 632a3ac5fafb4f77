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


def _section(page: str, heading: str) -> str:
    return page.split(heading, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]


def test_math_answer_examples_in_the_docs_are_what_it_does():
    import re

    from rewardkit import Sample, Status, get_reward

    section = _section((DOCS / "rewards.md").read_text(), "### math_answer\n")
    rows = re.findall(r"^\| `(.+?)` \| `(.+?)` \| (1|0|error) \|$", section, re.MULTILINE)
    assert len(rows) >= 10
    reward = get_reward("math_answer")()
    for completion, reference, expected in rows:
        score = reward.score(Sample(completion=completion.replace("\\n", "\n"),
                                    reference=reference))
        got = "error" if score.status is Status.ERROR else f"{score.value:g}"
        assert got == expected, (completion, reference, score)


def test_math_config_snippets_in_the_docs_are_valid():
    import re

    import yaml

    from rewardkit import parse_config

    section = _section((DOCS / "rewards.md").read_text(), "### math_answer\n")
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert len(blocks) >= 2
    for block in blocks:
        parse_config({"rewards": yaml.safe_load(block)}, "docs/rewards.md")


def test_scale_page_config_is_valid():
    import re

    import yaml

    from rewardkit import parse_config

    page = (DOCS / "scale.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", page, re.DOTALL)
    assert block is not None
    config = parse_config(yaml.safe_load(block.group(1)), "docs/scale.md")
    assert config.executor == "ray" and config.ray.max_in_flight == 2


def test_performance_page_shows_a_recorded_run():
    page = (DOCS / "performance.md").read_text()
    results = (DOCS.parent / "benchmarks" / "RESULTS.md").read_text()
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    block = page[page.index(start):page.index(end)]
    assert "on commit `" in block and "results.png" in block
    assert (DOCS.parent / "benchmarks" / "results.png").is_file()
    # the page's machine, commit and figures are those of the committed record
    head, table = block.split("\n\n")[1], block.split("\n\n")[3]
    assert head.startswith("Measured ") and head in results
    assert table.startswith("| benchmark |") and table in results
