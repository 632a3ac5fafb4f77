"""The criteria a workspace is checked against, and the checks that read files.

File, JSON, YAML and SQLite criteria read the private copy (:mod:`.workspace`) here, each
file opened with ``O_NOFOLLOW``; command and HTTP criteria run in the sandbox
(:mod:`.sandboxed`). Each check returns a :class:`Outcome`: passed or not, and why.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import time
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from rewardkit_workspace.workspace import relative_path

Kind = Literal["file_exists", "file_contains", "file_matches", "json_value", "yaml_value",
               "command", "sqlite_query", "http"]
#: criteria that run programs, in the sandbox
SANDBOXED: frozenset[str] = frozenset({"command", "http"})
_NEEDS: dict[str, tuple[str, ...]] = {
    "file_exists": ("path",), "file_contains": ("path", "text"),
    "file_matches": ("path", "pattern"), "json_value": ("path", "key"),
    "yaml_value": ("path", "key"), "command": ("run",), "sqlite_query": ("path", "query"),
    "http": ("start", "port"),
}


class Criterion(BaseModel):
    """One check of the workspace; ``type`` says which fields it reads."""

    model_config = ConfigDict(extra="forbid")

    type: Kind = Field(description="what is checked")
    name: str | None = Field(None, description="label in the details (default: type + path)")
    weight: float = Field(1.0, ge=0, description="weight under combine: weighted")
    path: str | None = Field(None, description="file path relative to the workspace")
    text: str | None = Field(None, description="file_contains: text the file holds")
    pattern: str | None = Field(None, description="file_matches: a regex searched in the file")
    key: str | None = Field(
        None, description="json_value / yaml_value: dotted path, list indexes as numbers "
        "(servers.0.port)")
    equals: Any = Field(None, description="json_value / yaml_value: the value expected")
    run: list[str] | None = Field(
        None, description="command: argv run in the workspace (the program is looked up on "
        "/usr/local/bin:/usr/bin:/bin, never in the workspace)")
    exit_code: int = Field(0, description="command: exit status expected")
    stdout_contains: str | None = Field(None, description="command: text its stdout holds")
    stdout_equals: str | None = Field(
        None, description="command: its stdout, surrounding whitespace aside")
    query: str | None = Field(None, description="sqlite_query: a read-only SQL query")
    rows: list[list[Any]] | None = Field(None, description="sqlite_query: the rows expected")
    start: list[str] | None = Field(None, description="http: argv that starts the service")
    port: int | None = Field(None, ge=1, le=65535, description="http: loopback port")
    url_path: str = Field("/", description="http: path requested with GET")
    status: int = Field(200, description="http: status expected")
    body_contains: str | None = Field(None, description="http: text the body holds")

    @model_validator(mode="after")
    def _fields_of_type(self) -> Criterion:
        missing = [f for f in _NEEDS[self.type] if getattr(self, f) is None]
        if missing:
            raise ValueError(f"criterion {self.type} needs {', '.join(missing)}")
        if self.path is not None and relative_path(self.path) is None:
            raise ValueError(f"path {self.path!r} must be relative, inside the workspace")
        if self.pattern is not None:
            re.compile(self.pattern)
        return self

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        what = self.path or " ".join(self.run or self.start or [])
        return f"{self.type} {what}".strip()


@dataclass(frozen=True)
class Outcome:
    passed: bool
    reason: str = ""


def _read(root: str, name: str) -> bytes | str:
    """The bytes of file ``name`` in the copy, or why it cannot be read."""
    rel = relative_path(name)
    if rel is None:
        return "not a path inside the workspace"
    try:
        fd = os.open(os.path.join(root, *rel.parts),
                     os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        return f"{name}: {error.strerror}"
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return f"{name}: not a regular file"
        return stream.read()


def _text(root: str, name: str) -> str | Outcome:
    data = _read(root, name)
    if isinstance(data, str):
        return Outcome(False, data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return Outcome(False, f"{name}: not UTF-8 text")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


class _UniqueKeyLoader(yaml.SafeLoader):
    """safe_load that refuses a mapping with a key twice (which one would a reader take?)."""


def _construct_unique(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    keys = [loader.construct_object(k, deep=True) for k, _ in node.value]
    for key in keys:
        if keys.count(key) > 1:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}",
                                                    node.start_mark)
    return loader.construct_mapping(node, deep=True)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _construct_unique)


def value_at(document: Any, key: str) -> tuple[bool, Any]:
    """(found, value) at dotted ``key``; list indexes are numbers."""
    node = document
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def _same(a: Any, b: Any) -> bool:
    """Equal as data, with booleans never equal to numbers (JSON's true is not 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def check_file(criterion: Criterion, root: str, sqlite_timeout_s: float) -> Outcome:
    """A file, JSON, YAML or SQLite criterion against the private copy at ``root``."""
    assert criterion.path is not None
    kind = criterion.type
    if kind == "file_exists":
        data = _read(root, criterion.path)
        return Outcome(not isinstance(data, str), data if isinstance(data, str) else "")
    if kind == "sqlite_query":
        return _sqlite(criterion, root, sqlite_timeout_s)
    text = _text(root, criterion.path)
    if isinstance(text, Outcome):
        return text
    if kind == "file_contains":
        assert criterion.text is not None
        return Outcome(criterion.text in text, "" if criterion.text in text else "text absent")
    if kind == "file_matches":
        assert criterion.pattern is not None
        found = re.search(criterion.pattern, text, re.MULTILINE) is not None
        return Outcome(found, "" if found else "no match")
    try:
        if kind == "json_value":
            document = json.loads(text, object_pairs_hook=_no_duplicates)
        else:
            document = yaml.load(text, Loader=_UniqueKeyLoader)
    except (ValueError, yaml.YAMLError) as error:
        return Outcome(False, f"{criterion.path}: not valid {kind[:4].upper()}: "
                              f"{str(error).splitlines()[0][:200]}")
    assert criterion.key is not None
    found, value = value_at(document, criterion.key)
    if not found:
        return Outcome(False, f"no value at {criterion.key}")
    if _same(value, criterion.equals):
        return Outcome(True)
    return Outcome(False, f"{criterion.key} is {json.dumps(value, default=str)[:100]}")


def _sqlite(criterion: Criterion, root: str, timeout_s: float) -> Outcome:
    assert criterion.path is not None and criterion.query is not None
    data = _read(root, criterion.path)
    if isinstance(data, str):
        return Outcome(False, data)
    if not data.startswith(b"SQLite format 3\x00"):
        return Outcome(False, f"{criterion.path}: not an SQLite database")
    rel = relative_path(criterion.path)
    assert rel is not None
    location = os.path.join(root, *rel.parts)
    deadline = time.monotonic() + timeout_s
    try:  # the private copy, read-only and immutable: no journal, no writes, no triggers
        connection = sqlite3.connect(f"file:{location}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as error:
        return Outcome(False, f"{criterion.path}: {error}")
    try:
        connection.execute("PRAGMA trusted_schema = OFF")
        connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        rows = [list(row) for row in connection.execute(criterion.query).fetchmany(10_000)]
    except sqlite3.Error as error:
        return Outcome(False, f"{criterion.path}: query failed: {error}")
    finally:
        connection.close()
    expected = criterion.rows or []
    if _same(rows, expected):
        return Outcome(True)
    return Outcome(False, f"rows {json.dumps(rows, default=str)[:200]}")
