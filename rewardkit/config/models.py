"""The reward config: YAML or TOML -> pydantic models -> :class:`RewardSet`.

The models are the single source of truth for validation, defaults, the JSON Schema
(``rewardkit schema``) and the config reference in the docs. Every failure is a
:class:`ConfigError` naming the file, the key path and what was expected.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    create_model,
    field_validator,
)

from rewardkit.registry import RegistryError, UnknownRewardError, registry
from rewardkit.schedules import Weight
from rewardkit.types import MAX_ABS_VALUE, ExecutionMode


class ConfigModel(BaseModel):
    """Base of every config model, core and plugin sections alike: unknown keys are
    errors, and no float field takes NaN or infinity (check a free-form field with
    :func:`require_finite`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def require_finite(value: Any) -> Any:
    """``value`` unchanged, or ValueError naming the NaN/infinite number inside it (by
    key and index), for free-form config values passed through to other programs."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    if isinstance(value, Mapping):
        items = [(str(key), item) for key, item in value.items()]
    elif isinstance(value, list | tuple):
        items = [(f"[{i}]", item) for i, item in enumerate(value)]
    else:
        items = []
    for label, item in items:
        try:
            require_finite(item)
        except ValueError as exc:
            raise ValueError(f"{label}: {exc}") from None
    return value


#: longest per-sample timeout a config may ask for (a day): longer is a mistake, and the
#: operating system refuses waits past ~49 days
MAX_TIMEOUT = 86_400.0
#: most process-mode workers a config may ask for
MAX_WORKERS = 1024


def weight_not_text(value: Any, where: str = "") -> Any:
    """``value`` (a weight as written) unchanged, or ValueError when text or true/false
    stands where a number belongs: pydantic alone would read ``"0.2"`` as 0.2 and ``true``
    as 1 without a word, and a quoted number is a config mistake worth saying."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key != "schedule":
                weight_not_text(item, f"{key}: ")
        return value
    if isinstance(value, list):
        for i, item in enumerate(value):
            weight_not_text(item, f"{where.removesuffix(': ')}[{i}]: " if where else "")
        return value
    if isinstance(value, bool):
        raise ValueError(f"{where}expected a number, not true/false")
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            expected = "a number" if where else "a number or a schedule ({schedule: linear, ...})"
            raise ValueError(f"{where}expected {expected}, not text") from None
        raise ValueError(f"{where}expected a number, not text: write it without quotes")
    return value


class Stage(ConfigModel):
    """Params and/or weight for a range of steps. Stages apply in order; a stage holds
    while ``step < until_step``; the last stage may omit ``until_step`` (holds forever)."""

    until_step: int | None = Field(None, gt=0, description="first step after this stage")
    params: dict[str, Any] = Field(
        default_factory=dict, description="merged over the component's params"
    )
    weight: Weight | None = Field(None, description="replaces the component's weight")

    _weight_not_text = field_validator("weight", mode="before")(
        lambda value: weight_not_text(value))


class Component(ConfigModel):
    """One named term of the composed reward."""

    reward: str = Field(description="name of a registered reward (`rewardkit rewards`)")
    params: dict[str, Any] = Field(
        default_factory=dict, description="parameters, validated by the reward's model"
    )
    weight: Weight = Field(
        1.0, description="a number or a schedule, finite and within +-1,000,000; 0 = logged "
        "metric only, not trained on"
    )
    stages: list[Stage] | None = Field(None, description="params/weight switched by step")
    when: dict[str, Any] | None = Field(
        None,
        description="routing: only samples whose metadata matches every key (a list value "
        "means membership) are scored; others get status skipped",
    )
    timeout: float | None = Field(
        None, gt=0, le=MAX_TIMEOUT,
        description="hard timeout in seconds per sample (per group for group "
        "rewards), at most 86,400; an inline reward with a timeout runs in a worker process",
    )
    mode: ExecutionMode | None = Field(
        None, description="override the reward's declared execution mode"
    )
    on_truncated: Literal["keep", "zero", "mask"] = Field(
        "keep",
        description="on a truncated sample (finish_reason length, or a truncated column): "
        "keep the score, zero it (status ok, value 0), or mask it (status skipped and the "
        "sample's total null, so trainers drop it); a sample that says neither is an error "
        "unless keep",
    )
    turns: Literal["last", "sum", "mean", "discounted"] = Field(
        "last",
        description="how a per-turn reward's values (one per assistant turn) become the "
        "value that trains: the last turn's, their sum, their mean, or the discounted return "
        "sum(gamma^t * value_t) from the first turn",
    )
    gamma: float = Field(
        1.0, ge=0.0, le=1.0, description="discount per turn for turns: discounted"
    )

    _weight_not_text = field_validator("weight", mode="before")(
        lambda value: weight_not_text(value))

    @field_validator("stages")
    @classmethod
    def _check_stages(cls, stages: list[Stage] | None) -> list[Stage] | None:
        last = 0
        for i, stage in enumerate(stages or []):
            if stage.until_step is None and i != len(stages or []) - 1:
                raise ValueError(f"stage {i} has no until_step but is not the last stage")
            if stage.until_step is not None:
                if stage.until_step <= last:
                    raise ValueError("stage until_step values must be strictly increasing")
                last = stage.until_step
        return stages


class Limits(ConfigModel):
    """Input guards applied before any reward sees a sample."""

    max_completion_chars: int = Field(
        200_000, gt=0, description="completions longer than this are not parsed"
    )
    max_line_bytes: int = Field(
        16_000_000, gt=0, description="`rewardkit score` input lines longer than this many "
        "bytes are reported and skipped, read in pieces, never held whole"
    )
    oversize_value: float | None = Field(
        None, ge=-MAX_ABS_VALUE, le=MAX_ABS_VALUE,
        description="value given to oversize completions (status ok), within +-1e12; "
        "null = status error",
    )


class RaySettings(ConfigModel):
    """Where and how wide process-mode and sandboxed rewards run when ``executor`` is ray."""

    address: str | None = Field(
        None, description="Ray cluster address (default: RAY_ADDRESS, a running cluster, "
        "else a local one)"
    )
    actors: int | None = Field(
        None, gt=0, description="scoring actors (default: the cluster's CPUs / cpus_per_actor)"
    )
    cpus_per_actor: float = Field(
        1.0, gt=0, description="CPUs reserved by each actor; its worker pool has that many "
        "processes (at least one)"
    )
    max_in_flight: int = Field(
        2, ge=1, description="chunks queued per actor at a time (backpressure)"
    )


class RewardConfig(ConfigModel):
    """A composed reward."""

    aggregate: Literal["weighted_sum", "normalize_then_sum"] = Field(
        "weighted_sum",
        description="weighted_sum: sum of weight x value; normalize_then_sum: each component "
        "is standardised within its group (a `group` column or the trainer's prompt id, else the "
        "same prompt) before the weighted sum",
    )
    on_error: Literal["null", "ignore"] = Field(
        "null",
        description="total of a sample whose weighted component failed (error/timeout): "
        "null (masked by trainers) or ignore (sum of the others)",
    )
    rewards: dict[str, Component] = Field(min_length=1)
    limits: Limits = Field(default_factory=lambda: Limits.model_validate({}))
    workers: int | None = Field(
        None, gt=0, le=MAX_WORKERS,
        description="process-mode worker count (default: usable cores), at most 1,024",
    )
    executor: Literal["local", "ray", "auto"] = Field(
        "local",
        description="where process-mode and sandboxed rewards run: local worker processes, "
        "Ray actors, or auto (Ray when this process is connected to a Ray cluster or "
        "RAY_ADDRESS is set)",
    )
    ray: RaySettings = Field(default_factory=lambda: RaySettings.model_validate({}))

    _sections: dict[str, Any] = PrivateAttr(default_factory=dict)

    def section(self, name: str) -> Any:
        """The validated model of a plugin's config section (``train``, ``sagemaker``,
        ...), or None when the file has none. Sections come from the
        ``register_config_sections`` hook; see :func:`config_model`."""
        return self._sections.get(name)


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
    if path.suffix.lower() == ".toml":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(source, [("", f"TOML syntax error: {exc}")]) from None
        except ValueError as exc:  # an integer of more digits than int() reads
            found = _long_integer_line(text)
            reason = _too_many_digits(*found) if found else f"TOML error: {exc}"
            raise ConfigError(source, [("", reason)]) from None
        except RecursionError:
            raise ConfigError(source, [("", _TOO_DEEP)]) from None
    else:
        try:
            data = yaml.load(text, Loader=_ConfigLoader)
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
    if not isinstance(data, dict):
        raise ConfigError(source, [("", f"expected a mapping, got {type(data).__name__}")])
    return data


_MODELS: dict[tuple[tuple[str, type[BaseModel]], ...], type[RewardConfig]] = {}


def config_model() -> type[RewardConfig]:
    """The model of a whole config file: :class:`RewardConfig` plus one optional key per
    section that an installed plugin registers (``register_config_sections``)."""
    sections = registry.config_sections()
    key = tuple((s.name, s.model) for s in sections)
    model = _MODELS.get(key)
    if model is None:
        for s in sections:  # the config knows its keys; the registry checks the rest
            if s.name in RewardConfig.model_fields:
                raise RegistryError(
                    f"{s.distribution}: config section {s.name!r} is not a free top-level "
                    f"key (core keys: {', '.join(RewardConfig.model_fields)})")
        fields: dict[str, Any] = {
            s.name: (s.model | None, Field(None, description=s.description)) for s in sections
        }
        model = create_model("RewardConfig", __base__=RewardConfig, __doc__=RewardConfig.__doc__,
                             __module__=__name__, **fields)
        _MODELS[key] = model
    return model


def parse_config(data: Mapping[str, Any], source: str = "<config>") -> RewardConfig:
    """Validate a config dict: shape and plugin sections, every reward name and its
    params (per stage).

    Every problem is reported in one pass: a shape error elsewhere does not hide an
    unknown reward or a misspelt param of another component.
    """
    model = config_model()
    problems: list[tuple[str, str]] = []
    whole: RewardConfig | None = None
    try:
        whole = model.model_validate(data)
    except ValidationError as exc:
        problems += _top_level_hints(_problems(exc, "", model), model)
    rewards = data.get("rewards") if isinstance(data, Mapping) else None
    if isinstance(rewards, Mapping):
        for name, component in rewards.items():
            if isinstance(component, Mapping) and isinstance(component.get("reward"), str):
                problems += _component_problems(f"rewards.{name}", component)
    if problems or whole is None:
        raise ConfigError(source, list(dict.fromkeys(problems)) or [("", "invalid config")])
    # the core model, so configs pickle to worker processes whatever plugins are installed
    config = RewardConfig.model_validate({k: v for k, v in data.items()
                                          if k in RewardConfig.model_fields})
    config._sections = {name: value for name in model.model_fields
                        if name not in RewardConfig.model_fields
                        and (value := getattr(whole, name)) is not None}
    return config


def _component_problems(base: str, component: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The reward name and params of one component (given as the raw mapping)."""
    try:
        cls = registry.get(component["reward"])
    except (UnknownRewardError, RegistryError) as exc:
        return [(f"{base}.reward", str(exc))]
    params = component.get("params") or {}
    if not isinstance(params, Mapping):
        return []  # the shape check already said params must be a mapping
    problems: list[tuple[str, str]] = []
    try:
        cls.Params.model_validate(params)
    except ValidationError as exc:
        problems += _problems(exc, f"{base}.params", cls.Params)
    stages = component.get("stages")
    for i, stage in enumerate(stages if isinstance(stages, list) else []):
        stage_params = stage.get("params") if isinstance(stage, Mapping) else None
        if not isinstance(stage_params, Mapping):
            continue
        try:
            cls.Params.model_validate({**params, **stage_params})
        except ValidationError as exc:
            problems += _problems(exc, f"{base}.stages.{i}.params", cls.Params)
    return problems


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


def load_config(path: str | Path) -> RewardConfig:
    """Read and validate a reward config file (``.yaml``, ``.yml`` or ``.toml``)."""
    return parse_config(read_config_file(path), str(path))


def _top_level_hints(problems: list[tuple[str, str]], model: type[BaseModel]
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


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the config file, plugin sections included."""
    return config_model().model_json_schema()
