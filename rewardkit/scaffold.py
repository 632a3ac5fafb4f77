"""``rewardkit new-plugin NAME``: a ready-to-publish reward plugin distribution.

The folder holds a pyproject.toml with the ``rewardkit`` entry point, a package with one
reward and its ``register_rewards`` hook, golden cases and a test that runs them.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path


class PluginNameError(ValueError):
    pass


def _names(name: str) -> tuple[str, str, str]:
    """(plugin name, distribution name, import name) for a user-given ``name``."""
    raw = name.strip().lower()
    raw = raw.removeprefix("rewardkit-").removeprefix("rewardkit_")
    if not re.fullmatch(r"[a-z][a-z0-9_-]{0,40}", raw):
        raise PluginNameError(
            f"plugin name {name!r} must start with a letter and use only letters, digits, "
            "'-' or '_' (e.g. 'keywords')")
    slug = raw.replace("_", "-")
    ident = raw.replace("-", "_")
    return ident, f"rewardkit-{slug}", f"rewardkit_{ident}"


def next_steps(folder: Path, python: str | None = None) -> str:
    """What to run after ``new-plugin``: install the plugin with its test extra into the
    environment rewardkit runs from, then test it. Named through that environment's
    interpreter (``.venv/bin/python -m pip``, not a bare ``pip`` that may belong to
    another Python), relative to the working folder when it lies inside it."""
    python = python or sys.executable
    try:
        shown = os.path.relpath(python)
    except ValueError:  # another drive (Windows)
        shown = python
    if shown.startswith(".."):
        shown = python
    return (f"{shown} -m pip install -e '{folder}[test]' && {shown} -m pytest {folder}")


def write_plugin(name: str, where: Path) -> Path:
    ident, dist, package = _names(name)
    folder = where / dist
    if folder.exists():
        raise PluginNameError(f"{folder} already exists")
    reward_name = f"{ident}_contains"
    files = {
        "pyproject.toml": f'''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1.0"
description = "A rewardkit plugin: {reward_name}"
requires-python = ">=3.11"
dependencies = ["rewardkit"]

[project.optional-dependencies]
test = ["pytest>=8"]

[project.entry-points.rewardkit]
{ident} = "{package}.plugin"

[tool.setuptools]
packages = ["{package}"]
# the package sits in the project folder: an editable install is then a plain .pth
# line (setuptools otherwise installs an import finder and prints a warning box)
package-dir = {{"" = "."}}
''',
        f"{package}/__init__.py": f'"""{dist}: rewardkit reward plugin."""\n',
        f"{package}/plugin.py": f'''"""Rewards of {dist}, registered through the rewardkit plugin hook."""

from __future__ import annotations

from pydantic import Field

from rewardkit import Params, Sample, Score, hookimpl, reward


class ContainsParams(Params):
    needle: str = Field("because", description="text the completion must contain")
    case_sensitive: bool = Field(False, description="compare case-sensitively")


@reward(params=ContainsParams)
def {reward_name}(sample: Sample, params: ContainsParams) -> Score:
    """1.0 when the completion contains ``needle``, else 0.0."""
    text, needle = sample.text, params.needle
    if not params.case_sensitive:
        text, needle = text.lower(), needle.lower()
    found = needle in text
    return Score.ok(1.0 if found else 0.0, "found" if found else "missing")


@hookimpl
def register_rewards(register):
    register({reward_name})
''',
        f"tests/{ident}.cases.yaml": f'''# Golden cases: `pytest` (rewardkit's pytest plugin) and `rewardkit test` run them.
reward: {reward_name}
params: {{needle: because}}
probes: true           # crash probes: huge, empty, binary, unicode, tag-spam inputs
checks: [content]      # what it verifies (answer, format, code, length, content) ...
exploits: true         # ... picks the exploit probes: hacks it must pay less than the
                       # best case of the same prompt (see `rewardkit test` for the table)
cases:
  - name: contains the word
    completion: "It is 4 because 2 + 2 = 4."
    expect: 1.0
  - name: an answer to a question
    prompt: "Is 4 even? Say why."
    completion: "Yes, because 4 = 2 * 2."
    expect: 1.0
  - name: case does not matter by default
    completion: "BECAUSE I said so"
    expect: 1.0
  - name: missing
    completion: "4"
    expect: 0.0
  - name: empty output
    completion: ""
    expect: {{value: 0.0, status: ok}}
''',
        f"tests/test_{ident}.py": f'''from {package}.plugin import {reward_name}

from rewardkit import Sample


def test_case_sensitive_mode_distinguishes_case():
    reward = {reward_name}({{"needle": "Because", "case_sensitive": True}})
    assert reward.score(Sample(completion="because")).value == 0.0
    assert reward.score(Sample(completion="Because")).value == 1.0


def test_registered_under_its_name():
    from rewardkit import get_reward

    assert get_reward("{reward_name}") is {reward_name}
''',
        "README.md": f'''# {dist}

A [rewardkit](https://pypi.org/project/rewardkit/) plugin with one reward,
`{reward_name}`.

    pip install -e ".[test]"   # the plugin, and pytest for its tests
    rewardkit rewards          # lists {reward_name}
    pytest                     # golden cases + unit tests

Publish it:

    pip install build twine
    python -m build            # dist/*.whl and dist/*.tar.gz
    twine upload dist/*

Use it in a config:

```yaml
rewards:
  explains:
    reward: {reward_name}
    params: {{needle: because}}
    weight: 0.2
```
''',
    }
    for rel, text in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return folder
