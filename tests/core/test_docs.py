"""The docs move with the code."""

from __future__ import annotations

from pathlib import Path

import pytest

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


# -- every YAML snippet in the docs is a config, a component, a cases file or a section
#    that really loads (and a cases file's cases pass) --------------------------------
REPO = DOCS.parent
FRAGMENT = "<!-- fragment -->"


def _yaml_snippets() -> list[tuple[str, str, bool]]:
    """(where, text, marked as a fragment) for every ```yaml block of docs/ and the README."""
    import re

    found = []
    for page in [*sorted(DOCS.rglob("*.md")), REPO / "README.md"]:
        text = page.read_text()
        for m in re.finditer(r"```yaml\n(.*?)```", text, re.DOTALL):
            before = text[: m.start()].rstrip().splitlines()[-1:] or [""]
            line = text[: m.start()].count("\n") + 1
            found.append((f"{page.relative_to(REPO)}:{line}", m.group(1),
                          before[0].strip() == FRAGMENT))
    return found


SNIPPETS = _yaml_snippets()


def test_the_docs_hold_yaml_snippets_and_few_are_fragments():
    assert len(SNIPPETS) >= 10
    fragments = [where for where, _, frag in SNIPPETS if frag]
    assert len(fragments) <= 2, fragments


@pytest.mark.parametrize("where,text", [(w, t) for w, t, frag in SNIPPETS if not frag],
                         ids=[w for w, _, frag in SNIPPETS if not frag])
def test_yaml_snippet_in_docs_loads(where: str, text: str, tmp_path: Path):
    import yaml

    from rewardkit import parse_config
    from rewardkit.cases import load_cases

    data = yaml.safe_load(text)
    assert isinstance(data, dict), f"{where}: not a mapping"
    if "cases" in data:
        # a cases file: its relative `config:` path resolves as it would in docs/
        (tmp_path / "examples").symlink_to(REPO / "examples")
        (tmp_path / "docs").mkdir()
        path = tmp_path / "docs" / "snippet.cases.yaml"
        path.write_text(text)
        loaded = load_cases(path)
        for i in range(len(loaded.spec.cases)):
            problem, score = loaded.run_case(i)
            assert not problem, f"{where}: " + loaded.failure_text(i, problem, score)
        return
    if "rewards" in data:
        parse_config(data, where)
    elif set(data) == {"sagemaker"}:
        settings = pytest.importorskip("rewardkit_trainers.sagemaker.config")
        settings.parse_settings(data["sagemaker"])
    else:  # one or more components, as a page on one reward shows them
        assert all(isinstance(v, dict) and "reward" in v for v in data.values()), \
            f"{where}: neither a config, a cases file, a section nor components"
        parse_config({"rewards": data}, where)


def test_train_and_eval_page_states_no_figure_that_no_record_holds():
    """Numbers in docs come from a recorded run: the quickstart page shows the shape of
    the output (a sample progress line aside), not results no committed run gave."""
    import re

    page = (DOCS / "trainers" / "train-and-eval.md").read_text()
    quickstart = page[page.index("## The quickstart"):page.index("## The `train:` section")]
    blocks = re.findall(r"```\n(.*?)```", quickstart, re.DOTALL)
    assert len(blocks) == 3
    figures = re.findall(r"\d+\.\d+%?", "".join(blocks[1:]))
    assert figures == [], f"figures without a recorded run: {figures}"
