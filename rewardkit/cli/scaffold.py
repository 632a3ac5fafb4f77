"""``rewardkit new-plugin NAME``: a ready-to-publish reward plugin distribution.

The folder holds a pyproject.toml with the ``rewardkit`` entry point, a package with one
reward and its ``register_rewards`` hook, golden cases and a test that runs them. Each
file is a template in ``templates/plugin/`` (package data, so an installed rewardkit has
them), filled in with the plugin's names (``string.Template``: ``${dist}``, ``${ident}``,
``${package}``, ``${reward_name}``).
"""

from __future__ import annotations

import os
import re
import sys
from importlib.resources import files
from pathlib import Path
from string import Template

#: the files of a new plugin: (its template in templates/plugin/, where it goes)
FILES: tuple[tuple[str, str], ...] = (
    ("pyproject.toml.tmpl", "pyproject.toml"),
    ("__init__.py.tmpl", "${package}/__init__.py"),
    ("plugin.py.tmpl", "${package}/plugin.py"),
    ("cases.yaml.tmpl", "tests/${ident}.cases.yaml"),
    ("test_plugin.py.tmpl", "tests/test_${ident}.py"),
    ("README.md.tmpl", "README.md"),
)


class PluginNameError(ValueError):
    pass


def plugin_names(name: str) -> dict[str, str]:
    """The names a template is filled in with, for a user-given ``name``: ``ident``
    (the plugin name), ``dist`` (distribution), ``package`` (import name) and
    ``reward_name`` (its one reward)."""
    raw = name.strip().lower()
    raw = raw.removeprefix("rewardkit-").removeprefix("rewardkit_")
    if not re.fullmatch(r"[a-z][a-z0-9_-]{0,40}", raw):
        raise PluginNameError(
            f"plugin name {name!r} must start with a letter and use only letters, digits, "
            "'-' or '_' (e.g. 'keywords')")
    slug = raw.replace("_", "-")
    ident = raw.replace("-", "_")
    return {"ident": ident, "dist": f"rewardkit-{slug}", "package": f"rewardkit_{ident}",
            "reward_name": f"{ident}_contains"}


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


def render(template: str, names: dict[str, str]) -> str:
    """The text of ``template`` (a file of templates/plugin/) filled in with ``names``."""
    text = files("rewardkit.cli").joinpath("templates", "plugin", template).read_text(
        encoding="utf-8")
    return Template(text).substitute(names)


def write_plugin(name: str, where: Path) -> Path:
    """Write the plugin distribution for ``name`` in a new folder of ``where`` (refused
    when it exists); returns the folder."""
    names = plugin_names(name)
    folder = where / names["dist"]
    if folder.exists():
        raise PluginNameError(f"{folder} already exists")
    for template, target in FILES:
        path = folder / Template(target).substitute(names)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(template, names), encoding="utf-8")
    return folder
