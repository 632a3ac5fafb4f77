"""The state an agent's environment left, handed to the rewards in-process.

TRL (``GRPOTrainer(environment_factory=...)``) gives every rollout its own environment
instance: its public methods are the tools the policy calls, ``reset(**row)`` runs before
the rollout, and the reward functions get the instances as ``environments=`` (one per
completion), right after the rollout and before the next ``reset``. rewardkit's TRL
callables read each instance's ``workspace`` attribute (a directory path, or a mapping
of relative paths to file text) into that sample's ``metadata["workspace"]``
(:func:`apply_environments`), where ``workspace_criteria`` reads it: the state, not a
text rendering of it. An environment's own ``get_reward()`` stays what TRL makes of it:
one more reward column (weight 1, named after the class) beside rewardkit's components.

ms-swift's multi-turn scheduler hands its state over as ``rollout_infos`` (what its
``step`` / ``on_turn_end`` return); verl's agent loop as its output's ``extra_fields``
(a tool gets the loop's ``agent_data``), which verl's reward manager merges into
``extra_info``. :func:`hoist_workspace` moves a ``workspace`` found there to the same
``metadata["workspace"]``. docs/agentic.md lists what each backend hands over.

:class:`WorkspaceEnvironment` is a TRL environment base with a private folder per
instance, under :func:`workspace_root` (``$REWARDKIT_WORKSPACES``; ``rewardkit train``
sets it to ``<output_dir>/workspaces``), which a config names as the reward's allowed
root: ``allowed_roots: [$REWARDKIT_WORKSPACES]``.

:class:`RewardkitReward` is the other way round: an environment that owns its reward
(TRL's ``get_reward``) computed by a rewardkit config from the row ``reset`` got and the
environment's state (docs/adapters.md).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from rewardkit import ConfigError, RewardSet, Sample

#: the metadata column an environment's workspace lands in (workspace_criteria's default)
WORKSPACE = "workspace"
#: the environment variable naming the folder environments make their workspaces in
WORKSPACES_ENV = "REWARDKIT_WORKSPACES"
#: the train.extra_args key naming TRL's environment factory
FACTORY_KEY = "environment_factory"


def workspace_root() -> Path:
    """Where :class:`WorkspaceEnvironment` makes its folders: ``$REWARDKIT_WORKSPACES``,
    else ``<tmp>/rewardkit-workspaces``, which then becomes ``$REWARDKIT_WORKSPACES`` of
    this process (so a reward naming it as its allowed root reads these folders in a
    training script of one's own too). Made when missing."""
    if not os.environ.get(WORKSPACES_ENV):
        os.environ[WORKSPACES_ENV] = str(Path(tempfile.gettempdir()) / "rewardkit-workspaces")
    root = Path(os.environ[WORKSPACES_ENV])
    root.mkdir(parents=True, exist_ok=True)
    return root


class WorkspaceEnvironment:
    """A TRL environment whose rollout works in a private folder, ``self.workspace``.

    Subclass it and add the tools as public methods with typed arguments and a
    Google-style docstring (TRL renders them into the prompt). ``reset(**row)`` empties
    the folder and writes the row's ``files`` column (a mapping of relative path to
    text, or that mapping as JSON text) into it. Helpers stay private (``_path``): TRL
    offers every public method as a tool. The folder is removed with the instance.
    """

    def __init__(self) -> None:
        self.workspace = tempfile.mkdtemp(prefix="env-", dir=workspace_root())
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.workspace, True)

    def reset(self, **row: Any) -> str | None:
        """Empty the workspace and seed it with the row's ``files``."""
        for entry in Path(self.workspace).iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        files = row.get("files")
        if isinstance(files, str) and files:
            files = json.loads(files)
        for name, text in (files or {}).items():
            if text is not None:  # Arrow fills another row's keys with None
                target = self._path(name)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(str(text), encoding="utf-8")
        return None

    def _path(self, name: str) -> Path:
        """``name`` inside the workspace; ValueError (a failed tool call) for an absolute
        path, a ``..`` or a link that leads out."""
        relative = PurePosixPath(str(name).replace("\\", "/"))
        if not name or "\x00" in name or relative.is_absolute() or ".." in relative.parts:
            raise ValueError(f"{name!r} is not a path inside the workspace")
        root = Path(self.workspace).resolve()
        target = (root / relative).resolve()
        if target != root and root not in target.parents:
            raise ValueError(f"{name!r} leads out of the workspace")
        return target


class RewardkitReward:
    """A TRL environment mixin whose ``get_reward()`` is a rewardkit config's total.

    TRL calls ``get_reward()`` (no arguments) after the rollout and makes its value one
    reward column, weight 1, named after the class; ``None`` becomes NaN there (a failed
    grading trains nothing). The sample scored is the row ``reset(**row)`` received
    (``prompt``, ``reference``, the other columns as metadata; ``Sample.from_dict``) with
    the environment's state (:func:`environment_state`: its ``workspace``) in its metadata
    and, as its completion, the environment's ``completion`` attribute when it keeps one
    (TRL hands an environment no completion; "" otherwise): it pays for what the rollout
    left, as ``workspace_criteria`` reads it. Name the config in ``reward_config`` (a
    file, a mapping or a RewardSet)::

        class Graded(RewardkitReward, NotesEnv):
            reward_config = "rewards.yaml"

    Put it first among the bases: its ``reset`` records the row, then calls the next one.
    ``get_reward`` has no step, so a config whose weights change with the step, or one
    under ``normalize_then_sum`` (one sample is no group), is refused (ConfigError). The
    last result is kept as ``rewardkit_result`` (each component's Score).
    """

    reward_config: ClassVar[Any] = None
    #: each class's RewardSet, built once; keyed by the class itself, held weakly: a key
    #: of ``id(cls)`` outlived a class made and dropped at run time (``type(...)``), and a
    #: new class at the freed address got its RewardSet, config and refusals unread
    _reward_sets: ClassVar[weakref.WeakKeyDictionary[type, tuple[Any, RewardSet]]] = (
        weakref.WeakKeyDictionary())

    def reset(self, **row: Any) -> Any:
        self._rewardkit_row = dict(row)
        parent = getattr(super(), "reset", None)
        return parent(**row) if callable(parent) else None

    @classmethod
    def _rewardkit_set(cls) -> RewardSet:
        config = cls.reward_config
        cached = RewardkitReward._reward_sets.get(cls)
        if cached is None or cached[0] is not config:  # none yet, or reward_config replaced
            where = f"{cls.__name__}.reward_config"
            if config is None:
                raise ConfigError(where, [("", "name the rewardkit config (a file, a "
                                               "mapping or a RewardSet)")])
            if isinstance(config, RewardSet):
                reward_set = config
            elif isinstance(config, Mapping):
                reward_set = RewardSet.from_dict(config, source=where)
            else:
                reward_set = RewardSet.from_file(config)
            problems = [(f"rewards.{name}", "its weight or stage changes with the step; "
                         "TRL calls get_reward() with no step") for name in reward_set.names
                        if reward_set.is_scheduled(name)]
            if reward_set.config.aggregate == "normalize_then_sum":
                problems.append(("aggregate", "get_reward() scores one rollout, no group to "
                                 "normalise over (use weighted_sum)"))
            if problems:
                raise ConfigError(where, problems)
            cached = RewardkitReward._reward_sets[cls] = (config, reward_set)
        return cached[1]

    def get_reward(self) -> float | None:
        row = dict(getattr(self, "_rewardkit_row", {}))
        row["completion"] = getattr(self, "completion", None) or ""
        sample = Sample.from_dict(row)
        sample.metadata.update(environment_state(self))
        result = self._rewardkit_set().score([sample])
        self.rewardkit_result = result[0]
        return result.totals[0]


def environment_state(environment: Any) -> dict[str, Any]:
    """What one environment instance hands the rewards: its ``workspace`` (a path as a
    string, or a mapping of relative path to text); {} when it has none."""
    workspace = getattr(environment, WORKSPACE, None)
    if isinstance(workspace, os.PathLike):
        workspace = os.fspath(workspace)
    if isinstance(workspace, str | Mapping):
        return {WORKSPACE: workspace if isinstance(workspace, str) else dict(workspace)}
    return {}


def apply_environments(samples: Sequence[Sample], environments: Sequence[Any] | None) -> None:
    """Put each rollout's environment state (:func:`environment_state`) into its sample's
    metadata, in place; the environment's workspace wins over a dataset column of that
    name (the column describes no rollout of this generation)."""
    if not environments or len(environments) != len(samples):
        return
    for sample, environment in zip(samples, environments, strict=True):
        sample.metadata.update(environment_state(environment))


def hoist_workspace(metadata: dict[str, Any], key: str) -> None:
    """Move a ``workspace`` the rollout recorded under ``metadata[key]`` (ms-swift's
    ``rollout_infos``, verl's ``extra_fields``) to ``metadata["workspace"]``, in place."""
    state = metadata.get(key)
    if isinstance(state, Mapping) and isinstance(state.get(WORKSPACE), str | Mapping):
        metadata[WORKSPACE] = state[WORKSPACE]


def load_environment_factory(spec: Any, config_file: Path | None) -> Any:
    """TRL's ``environment_factory`` from ``train.extra_args.environment_factory``: one
    ``module:Class`` import path, or a mapping of environment name to one (the rows'
    ``environment`` column picks). The module is looked up next to the config file first.
    A ConfigError names the entry that does not import or has no ``reset``."""
    import importlib
    import sys

    source = str(config_file or "<config>")
    where = f"train.extra_args.{FACTORY_KEY}"
    if spec is None:
        return None
    if config_file is not None:
        folder = str(Path(config_file).resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)

    def one(name: Any, at: str) -> Any:
        if not isinstance(name, str) or ":" not in name:
            raise ConfigError(source, [(at, "a 'module:Class' import path, got "
                                        f"{name!r}")])
        module, _, attr = name.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(source, [(at, f"{name}: {type(exc).__name__}: {exc}")]) \
                from None
        if not callable(factory):
            raise ConfigError(source, [(at, f"{name} is not a class or function")])
        if isinstance(factory, type) and not callable(getattr(factory, "reset", None)):
            raise ConfigError(source, [(at, f"{name} has no reset method, which TRL "
                                        "calls before every rollout")])
        return factory

    if isinstance(spec, Mapping):
        if not spec:
            raise ConfigError(source, [(where, "an empty mapping names no environment")])
        return {str(k): one(v, f"{where}.{k}") for k, v in spec.items()}
    return one(spec, where)


def refuse_environment_factory(backend: str, extra_args: Mapping[str, Any],
                               source: str) -> None:
    """A ConfigError when a backend other than TRL is given an ``environment_factory``
    (TRL's argument; nothing else would run it)."""
    if backend == "trl" or extra_args.get(FACTORY_KEY) is None:
        return
    how = {
        "swift": "ms-swift runs its multi-turn scheduler instead: return "
                 "rollout_infos={'workspace': ...} from its step / on_turn_end",
        "verl": "verl runs its agent loop instead: a tool sets "
                "agent_data.extra_fields['workspace']",
        "easyr1": "EasyR1 rolls out text only (no agent loop): give the rows a workspace "
                  "column",
    }.get(backend, "only TRL runs one")
    raise ConfigError(source, [(f"train.extra_args.{FACTORY_KEY}",
                                f"environment_factory is TRL's GRPOTrainer argument and "
                                f"backend {backend} has none; {how} (docs/agentic.md)")])


def environment_tools(factory: Any) -> list[Any]:
    """The methods TRL offers as tools for ``factory`` (one ``module:Class`` or a mapping
    of them): every public function of the class but ``reset`` and ``get_reward``, bound
    to a probe instance (dropped after)."""
    import inspect

    factories = list(factory.values()) if isinstance(factory, Mapping) else [factory]
    tools: list[Any] = []
    for make in factories:
        instance = make()
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction):
            if name not in ("reset", "get_reward") and not name.startswith("_"):
                tools.append(getattr(instance, name))
    return tools


def build_tiny_for_tools(spec: Any, rows: list[dict[str, Any]], tools: list[Any],
                         save_to: Path) -> tuple[Any, Any]:
    """A tiny model (:class:`~rewardkit_trainers.config.TinyModel`) for a run with tools:
    the quickstart's model, with a word-level tokenizer that uses TRL's Qwen2.5 chat
    template (it renders tool calls and results, and TRL parses the calls with its own
    response template) over the rows' prompts rendered with the tools, and a call of each
    tool. Saved to ``save_to`` as the base model."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    from rewardkit_trainers.quickstart import BUILT_MARK, build_model

    def fast(tok: Any) -> Any:
        out = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]",
                                      pad_token="<|endoftext|>", eos_token="<|im_end|>",
                                      clean_up_tokenization_spaces=False)
        out.chat_template = qwen2_5_chat_template
        out.padding_side = "left"
        return out

    render = fast(Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")))
    calls = [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": t.__name__, "arguments": {}}}
        for t in tools]}, {"role": "tool", "content": "done"}]
    corpus = [render.apply_chat_template(
        (row["prompt"] if isinstance(row["prompt"], list)
         else [{"role": "user", "content": str(row["prompt"])}]) + calls,
        tools=tools or None, tokenize=False) for row in rows]
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"<[^>\s]+>|\w+|\n| |[^\w\s]"),
                                             behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.train_from_iterator(corpus, trainer=trainers.WordLevelTrainer(
        special_tokens=["[UNK]", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]))
    tokenizer = fast(tok)
    tokenizer.init_kwargs[BUILT_MARK] = "word-level"
    model = build_model(spec, tokenizer)
    ids = max(tokenizer.get_vocab().values()) + 1  # the word-level ids may have gaps
    if ids > model.get_input_embeddings().num_embeddings:
        model.resize_token_embeddings(ids, mean_resizing=False)
    model.config.max_position_embeddings = 4096  # RoPE: a prompt with tool schemas is long
    save_to.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(save_to)
    model.save_pretrained(save_to)
    return model, tokenizer


def refuse_missing_workspace(reward_config: Any, rows: Sequence[Mapping[str, Any]],
                             backend: str, source: str) -> None:
    """A ConfigError for a backend whose rollout leaves no state (EasyR1: text only) when a
    ``workspace_criteria`` component's column is missing from a row: nothing would fill
    it, and the component would fail every such row."""
    problems = []
    for name, component in reward_config.rewards.items():
        if component.reward != "workspace_criteria":
            continue
        column = (component.params or {}).get("column", WORKSPACE)
        missing = sum(1 for row in rows if row.get(column) is None)
        if missing:
            problems.append((f"rewards.{name}", (
                f"reads the workspace column {column!r}, which {missing} of {len(rows)} "
                f"rows lack, and {backend} rolls out text only: no environment leaves a "
                "workspace to hand over; give every row a workspace (a directory or "
                "archive), or use backend trl (environment_factory), swift (the "
                "scheduler's rollout_infos) or verl (the agent loop's extra_fields)")))
    if problems:
        raise ConfigError(source, problems)
