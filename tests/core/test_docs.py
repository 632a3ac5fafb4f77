"""The docs move with the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardkit.config.reference import render_markdown

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
    from rewardkit.testing.cases import load_cases

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
