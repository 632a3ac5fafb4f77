"""Reading a config file safely: YAML or TOML text -> a dict, as a :class:`ConfigError`
on any problem (unreadable, not UTF-8, a syntax error with its line), and refusing what
would hang or exhaust the reader: duplicate keys, alias bombs (:data:`MAX_YAML_NODES`),
recursive aliases, integers too long for ``int``, nesting past the recursion limit."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml

from rewardkit.config.errors import ConfigError
from rewardkit.config.models import RewardConfig
from rewardkit.config.validation import parse_config

#: most values a YAML config may expand to, aliases followed (a billion-laughs document
#: is a few lines that expand to billions)
MAX_YAML_NODES = 100_000


_MERGE_TAG = "tag:yaml.org,2002:merge"


class _YAMLRefusal(Exception):
    """A YAML document refused before it is built: duplicate keys, an alias bomb;
    ``path`` is the key path of the mapping at fault ("" for the document)."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class _ConfigLoader(yaml.SafeLoader):
    """Safe YAML that refuses duplicate keys and documents that expand past
    ``MAX_YAML_NODES`` values through aliases."""

    def construct_document(self, node: yaml.Node) -> Any:
        _check_expansion(node)
        self._key_paths = _key_paths(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            try:
                repeated = key in seen
                first = seen.setdefault(key, line)
            except TypeError:  # an unhashable key: the constructor will say so
                continue
            if repeated:
                raise _YAMLRefusal(f"duplicate key {key!r} at line {line} "
                                   f"(first at line {first}); each key may appear once",
                                   getattr(self, "_key_paths", {}).get(id(node), ""))
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> Any:
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # more digits than int() reads (sys.get_int_max_str_digits)
            raise _YAMLRefusal(_too_many_digits(node.start_mark.line + 1, str(node.value))
                               ) from None


_ConfigLoader.add_constructor("tag:yaml.org,2002:int", _ConfigLoader.construct_yaml_int)

#: what a document nested past the parser's recursion limit is refused with
_TOO_DEEP = "nested too deeply (hundreds of levels of lists or mappings) to be read"


def _too_many_digits(line: int, number: str) -> str:
    digits = sum(c.isdigit() for c in number)
    return f"line {line}: an integer of {digits} digits, too long to read"


def _long_integer_line(text: str) -> tuple[int, str] | None:
    """The first line of ``text`` with an integer (digits, ``_`` separators) of more
    digits than ``int`` reads, and that integer."""
    limit = sys.get_int_max_str_digits()
    for line_no, line in enumerate(text.split("\n"), 1):
        for match in re.finditer(r"[0-9][0-9_]*", line):
            if limit and sum(c.isdigit() for c in match.group()) > limit:
                return line_no, match.group()
    return None


def _key_paths(root: yaml.Node) -> dict[int, str]:
    """The key path ("rewards.fmt") of every mapping node under ``root``, by node id
    (the first path that reaches it, for a node an alias reuses), so that a refusal can
    say where in the file it is."""
    paths: dict[int, str] = {}
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if id(node) in paths:
            continue
        if isinstance(node, yaml.MappingNode):
            paths[id(node)] = path
            for key, value in node.value:
                label = key.value if isinstance(key, yaml.ScalarNode) else "?"
                stack.append((value, f"{path}.{label}" if path else str(label)))
        elif isinstance(node, yaml.SequenceNode):
            paths[id(node)] = path
            stack.extend((item, f"{path}.{i}") for i, item in enumerate(node.value))
    return paths


def _check_expansion(root: yaml.Node) -> None:
    """Count the values of ``root`` with every alias expanded, without expanding."""
    size: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in size:
            continue
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            children = []
        if not children_done:
            if id(node) in open_nodes:
                raise _YAMLRefusal(f"recursive alias at line {node.start_mark.line + 1}")
            open_nodes.add(id(node))
            stack.append((node, True))
            for child in children:
                if id(child) in open_nodes:
                    raise _YAMLRefusal(
                        f"recursive alias at line {child.start_mark.line + 1}")
                if id(child) not in size:
                    stack.append((child, False))
            continue
        open_nodes.discard(id(node))
        size[id(node)] = total = 1 + sum(size[id(c)] for c in children)
        if total > MAX_YAML_NODES:
            raise _YAMLRefusal(
                f"the document expands to more than {MAX_YAML_NODES:,} values through "
                f"aliases (line {node.start_mark.line + 1}); write the values out instead")


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Parse a YAML or TOML file into a dict, as a ConfigError on any problem."""
    path = Path(path)
    source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(source, [("", f"cannot read file: {exc.strerror or exc}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(source, [("", f"not UTF-8 text ({exc.reason})")]) from None
    parse = _parse_toml if path.suffix.lower() == ".toml" else _parse_yaml
    data = parse(text, source)
    if not isinstance(data, dict):
        raise ConfigError(source, [("", f"expected a mapping, got {type(data).__name__}")])
    return data


def _parse_toml(text: str, source: str) -> Any:
    """TOML text as Python data, as a ConfigError on a syntax error, an integer too long
    to read or nesting too deep."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(source, [("", f"TOML syntax error: {exc}")]) from None
    except ValueError as exc:  # an integer of more digits than int() reads
        found = _long_integer_line(text)
        reason = _too_many_digits(*found) if found else f"TOML error: {exc}"
        raise ConfigError(source, [("", reason)]) from None
    except RecursionError:
        raise ConfigError(source, [("", _TOO_DEEP)]) from None


def _parse_yaml(text: str, source: str) -> Any:
    """YAML text as Python data through :class:`_ConfigLoader`, as a ConfigError on a
    refusal (with its key path), a syntax error (with its line) or nesting too deep."""
    try:
        return yaml.load(text, Loader=_ConfigLoader)
    except _YAMLRefusal as exc:
        raise ConfigError(source, [(exc.path, str(exc))]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(source, [("", f"YAML syntax error at {where}{exc.problem}")]) \
            from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, [("", f"YAML error: {exc}")]) from None
    except RecursionError:
        raise ConfigError(source, [("", _TOO_DEEP)]) from None


def load_config(path: str | Path) -> RewardConfig:
    """Read and validate a reward config file (``.yaml``, ``.yml`` or ``.toml``)."""
    return parse_config(read_config_file(path), str(path))
