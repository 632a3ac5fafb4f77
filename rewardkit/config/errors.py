"""ConfigError and the key paths it names: a pydantic validation error read the way a
user wrote the file (``rewards.fmt.params.tag: unknown key; did you mean 'tags'?``),
without pydantic's union-branch labels, one telling error per mistake."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from rewardkit.config.models import Component, Limits, RewardConfig, Stage


class ConfigError(Exception):
    """An invalid config: each problem as (key path, reason), with the file."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"{self.source}: invalid reward config"]
        for path, reason in self.problems:
            lines.append(f"  {path or '(top level)'}: {reason}")
        return "\n".join(lines)


def _did_you_mean(key: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _known_keys(loc: list[str], model: type[BaseModel] | None) -> list[str]:
    """The keys allowed where an unknown key was found (for a did-you-mean)."""
    if model is not None and not issubclass(model, RewardConfig):
        return list(model.model_fields) if len(loc) == 1 else []  # e.g. a reward's Params
    found: type[BaseModel] | None = None
    if len(loc) == 1:
        found = model or RewardConfig
    elif loc[0] == "rewards" and len(loc) == 3:
        found = Component
    elif loc[0] == "rewards" and len(loc) == 5 and loc[2] == "stages":
        found = Stage
    elif loc[0] == "limits" and len(loc) == 2:
        found = Limits
    return list(found.model_fields) if found is not None else []


def top_level_hints(problems: list[tuple[str, str]], model: type[BaseModel]
                    ) -> list[tuple[str, str]]:
    """An unknown top-level key may be a section of a plugin that is not installed."""
    return [(path, f"{reason} (top-level keys: {', '.join(model.model_fields)}; a plugin's "
             "section needs that plugin installed, see `rewardkit plugins`)")
            if reason.startswith("unknown key") and "." not in path else (path, reason)
            for path, reason in problems]


def validation_problems(exc: ValidationError, model: type[BaseModel], prefix: str = ""
                        ) -> list[tuple[str, str]]:
    """``model``'s validation error as (key path, reason) pairs, the way
    :class:`ConfigError` shows them: union-branch labels dropped from paths, one telling
    error per mistake. Plugins validating their own section use it with ``prefix`` = the
    section's name."""
    return _problems(exc, prefix, model)


def _model_names(model: type[BaseModel] | None) -> frozenset[str]:
    """Class names of the models that are a branch of a union in ``model``: pydantic
    labels a union's branches by them in error locations."""
    if model is None:
        return frozenset()
    names = _MODEL_NAMES.get(model)
    if names is None:
        found: set[str] = set()

        def walk(node: Any, in_union: bool) -> None:
            if isinstance(node, dict):
                ref = node.get("$ref")
                if in_union and isinstance(ref, str):
                    found.add(ref.rsplit("/", 1)[-1])
                for key, value in node.items():
                    walk(value, key in ("anyOf", "oneOf"))
            elif isinstance(node, list):
                for item in node:
                    walk(item, in_union)

        walk(model.model_json_schema(), False)
        names = _MODEL_NAMES[model] = frozenset(found)
    return names


_MODEL_NAMES: dict[type[BaseModel], frozenset[str]] = {}


def _problems(exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
              ) -> list[tuple[str, str]]:
    errors = exc.errors(include_url=False)
    in_union = any(str(p).startswith("tagged-union[") for e in errors for p in e["loc"])
    models = _model_names(model)
    located = [(err, _key_path(err["loc"], models)) for err in errors]
    out: list[tuple[str, str]] = []
    for err, loc in located:
        # drop pydantic's union-branch labels ("float", "tagged-union[...]") from the path
        path = ".".join([prefix, *loc] if prefix else loc)
        kind = err["type"]
        given = err.get("input")
        if kind in ("string_type", "literal_error") and isinstance(given, dict | list) and any(
                other is not err and other_loc[:len(loc)] == loc and len(other_loc) > len(loc)
                for other, other_loc in located):
            continue  # "not a string" about a mapping: the mapping branch's errors tell more
        if kind in ("float_type", "float_parsing") and isinstance(given, dict):
            continue  # a mapping given for a number-or-schedule: the schedule errors tell more
        if kind in ("model_attributes_type", "model_type") and not isinstance(given, dict) \
                and any(p == path for p, _ in out):
            continue  # a scalar that is not a number: the number error already says so
        message = err["msg"].removeprefix("Value error, ")
        if kind == "extra_forbidden":
            message = "unknown key" + (_did_you_mean(loc[-1], _known_keys(loc, model))
                                       if loc else "")
        elif kind in ("float_type", "float_parsing") and in_union:
            message = "expected a number or a schedule ({schedule: linear, ...})"
        elif kind == "union_tag_invalid":
            message = _unknown_tag(err.get("ctx") or {})
        if "input" in err and kind not in ("missing", "extra_forbidden"):
            shown = json.dumps(given, default=str)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            message = f"{message} (got {shown})"
        out.append((path, message))
    return out


def _unknown_tag(ctx: Mapping[str, Any]) -> str:
    """pydantic's "Input tag 'linaer' found using 'schedule' does not match ..." as the
    other unknown names read: what was given, a did-you-mean, what exists."""
    key = str(ctx.get("discriminator", "")).strip("'")
    tag = str(ctx.get("tag", ""))
    expected = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",")
                if t.strip()]
    return (f"unknown {key or 'kind'} {tag!r}{_did_you_mean(tag, expected)} "
            f"(one of: {', '.join(expected)})")


def _key_path(loc: tuple[int | str, ...], models: frozenset[str] = frozenset()) -> list[str]:
    """The user's key path from a pydantic error location, without union-branch labels
    ("float", "tagged-union[...]" and the discriminator value after it, the class name of a
    model among ``models``)."""
    parts: list[str] = []
    skip_tag = False
    for raw in loc:
        part = str(raw)
        if skip_tag:
            skip_tag = False
            continue
        if part.startswith("tagged-union["):
            skip_tag = True
            continue
        if part in ("float", "int", "str", "bool") or part.startswith(
                ("function-", "union[", "constrained-")):
            continue
        if "[" in part or part in models:
            continue  # a branch label: "list[int]", "literal['auto']", a model's class name
        parts.append(part)
    return parts
