#!/usr/bin/env python3
"""Read trainers/backends.toml, the one source of truth for backend versions.

    backend_versions.py pins VENV          exact pins of a test environment: trl==1.16.0
    backend_versions.py build-args IMAGE   --build-arg NAME=VALUE lines for docker build
    backend_versions.py check              exit 1, naming each drift, when the extras in
                                           trainers/pyproject.toml or the Dockerfiles'
                                           ARG defaults disagree with backends.toml

Standard library only (tomllib) for ``pins`` and ``build-args``, so shell scripts can call
it with any Python >= 3.11 before a virtual environment exists; ``check`` also needs
``packaging`` (there in every rewardkit environment).
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VERSIONS_FILE = "trainers/backends.toml"
_ARG = re.compile(r"^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?\s*$")


def load(root: Path = ROOT) -> dict[str, Any]:
    """The parsed backends.toml under ``root``."""
    with open(root / VERSIONS_FILE, "rb") as f:
        return tomllib.load(f)


def version(data: dict[str, Any], value: str) -> str:
    """An image argument's value: ``@name`` is ``versions.name``, anything else itself."""
    if value.startswith("@"):
        name = value[1:]
        if name not in data["versions"]:
            raise KeyError(f"{VERSIONS_FILE}: '@{name}' names no entry of [versions]")
        return str(data["versions"][name])
    return value


def pins(data: dict[str, Any], venv: str) -> list[str]:
    """``name==version`` for every package pinned in one test environment."""
    if venv not in data["venvs"]:
        raise KeyError(f"{VERSIONS_FILE}: no [venvs] entry {venv!r} (have {sorted(data['venvs'])})")
    return [f"{name}=={data['versions'][name]}" for name in data["venvs"][venv]]


def build_args(data: dict[str, Any], image: str) -> dict[str, str]:
    """The build arguments of one image, resolved."""
    if image not in data["images"]:
        raise KeyError(f"{VERSIONS_FILE}: no image {image!r} (have {sorted(data['images'])})")
    return {k: version(data, v) for k, v in data["images"][image]["args"].items()}


def dockerfile_args(text: str) -> dict[str, str | None]:
    """``ARG`` names of a Dockerfile with their defaults (None: no default)."""
    found: dict[str, str | None] = {}
    for line in text.splitlines():
        m = _ARG.match(line)
        if m:
            default = m.group(2)
            found[m.group(1)] = default.strip().strip('"') if default is not None else None
    return found


def check(root: Path = ROOT) -> list[str]:
    """Every disagreement between backends.toml and the files that must follow it."""
    from packaging.requirements import Requirement

    data = load(root)
    problems: list[str] = []
    with open(root / "trainers/pyproject.toml", "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    for extra, packages in data["extras"].items():
        reqs = {Requirement(r).name.lower(): Requirement(r) for r in extras.get(extra, [])}
        for name in packages:
            wanted = data["versions"][name]
            req = reqs.get(name.lower())
            if req is None:
                problems.append(f"trainers/pyproject.toml: extra [{extra}] does not list {name} "
                                f"({VERSIONS_FILE} has {name} {wanted})")
            elif not req.specifier.contains(wanted, prereleases=True):
                problems.append(f"trainers/pyproject.toml: extra [{extra}] asks for {req}, "
                                f"which excludes the tested {name} {wanted} ({VERSIONS_FILE})")
    for venv, packages in data["venvs"].items():
        for name in packages:
            if name not in data["versions"]:
                problems.append(f"{VERSIONS_FILE}: [venvs] {venv} pins {name}, "
                                "which has no entry in [versions]")
    for image, spec in data["images"].items():
        path = root / spec["dockerfile"]
        if not path.is_file():
            problems.append(f"{spec['dockerfile']}: missing (image {image} in {VERSIONS_FILE})")
            continue
        declared = dockerfile_args(path.read_text(encoding="utf-8"))
        try:
            wanted_args = build_args(data, image)
        except KeyError as exc:
            problems.append(str(exc.args[0]))
            continue
        for name, value in wanted_args.items():
            if name not in declared:
                problems.append(f"{spec['dockerfile']}: no ARG {name} "
                                f"({VERSIONS_FILE} sets {name}={value})")
            elif declared[name] != value:
                problems.append(f"{spec['dockerfile']}: ARG {name}={declared[name]} but "
                                f"{VERSIONS_FILE} says {value}")
        for name, default in declared.items():
            if name not in wanted_args and default is not None:
                problems.append(f"{spec['dockerfile']}: ARG {name}={default} is not in "
                                f"{VERSIONS_FILE} [images.{image}] args")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("pins").add_argument("venv")
    sub.add_parser("build-args").add_argument("image")
    sub.add_parser("check")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root")
    args = parser.parse_args(argv)
    try:
        data = load(args.root)
        if args.command == "pins":
            print(" ".join(pins(data, args.venv)))
        elif args.command == "build-args":
            for name, value in build_args(data, args.image).items():
                print(f"--build-arg={name}={value}")
        else:
            problems = check(args.root)
            for line in problems:
                print(line, file=sys.stderr)
            if problems:
                return 1
            print(f"{VERSIONS_FILE}: extras and Dockerfiles agree")
    except (KeyError, OSError, tomllib.TOMLDecodeError) as exc:
        print(f"backend_versions: {exc.args[0] if isinstance(exc, KeyError) else exc}",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
