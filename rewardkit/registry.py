"""The plugin registry: one pluggy PluginManager, entry points loaded once.

It holds what plugins register: reward classes (``register_rewards``) and config
sections (``register_config_sections``); the command line asks the same manager for
commands (``register_commands``). Built-in rewards and built-in commands are default
plugins registered through the same hooks as third-party ones. ``REWARDKIT_PLUGINS``
restricts which installed plugins load: a comma-separated list of distribution (or
entry-point) names; empty means built-ins only. ``REWARDKIT_TRACE_PLUGINS=1`` prints, on
standard error, which plugin registered which reward, config section and command.
``REWARDKIT_PLUGIN_IMPORT_TIMEOUT`` (seconds, default 30) bounds each plugin's import: one
that has not finished by then is listed as failed, naming its entry point, and left out.

Each hook implementation is called on its own, one plugin at a time (built-ins first,
then entry points by name), so that what a plugin registered is credited to its
distribution and a failing plugin is named while the others load. pluggy's ordering
markers (``tryfirst``, ``trylast``) therefore change nothing, and a wrapper
(``hookwrapper=True`` or ``wrapper=True``) is refused: its plugin is listed as failed.

The module is the registry's public face: ``rewardkit.registry.register(cls)`` (or
``from rewardkit.registry import register``) registers a reward from a script, and
:func:`get`, :func:`names`, :func:`rewards`, :func:`unregister`, :func:`plugins` read
and change the one :data:`registry` the engine uses.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
import threading
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType
from typing import Any

import pluggy
from pydantic import BaseModel

from rewardkit import hookspecs
from rewardkit.authoring import Reward

ENTRY_POINT_GROUP = "rewardkit"
PLUGINS_ENV = "REWARDKIT_PLUGINS"
#: set to 1 to print which plugin registered what (standard error)
TRACE_ENV = "REWARDKIT_TRACE_PLUGINS"
BUILTIN_DISTRIBUTION = "rewardkit"
#: seconds a plugin's import may take before the plugin is listed as failed and left out
IMPORT_TIMEOUT_ENV = "REWARDKIT_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 30.0
#: a plugin still importing after this long is named on standard error while it is waited for
IMPORT_NOTE_AFTER = 5.0

DEFAULT_PLUGINS = (
    "rewardkit.builtin.format",
    "rewardkit.builtin.math",
    "rewardkit.builtin.choice",
    "rewardkit.builtin.qa",
    "rewardkit.builtin.content",
    "rewardkit.builtin.length_scaled",
)
#: the built-in commands: a default plugin too, loaded when the command line is built
#: (:meth:`Registry.load_default`), so scoring processes never import the CLI's libraries
COMMANDS_PLUGIN = "rewardkit.cli.commands"


class RegistryError(Exception):
    """A reward could not be registered or found."""


#: the rewards of this repository's plugin distributions (plugins/, trainers/), to name the
#: one to install when a config uses a reward of one that this environment lacks (a
#: backend's own venv, a plugin not yet ``pip install -e``'d); a test keeps it in step
#: with what the plugins register
FIRST_PARTY_REWARDS: dict[str, tuple[str, ...]] = {
    "rewardkit-code": ("code_execution", "python"),
    "rewardkit-gui": ("gui_navigation", "gui_format"),
    "rewardkit-gym": ("gym_answer",),
    "rewardkit-ifeval": ("instruction_following",),
    "rewardkit-judge": ("reward_model", "llm_judge", "pairwise_judge"),
    "rewardkit-repo": ("repo_tests",),
    "rewardkit-textmetrics": ("bleu", "chrf", "ter", "rouge", "gleu", "fuzzy_match",
                              "string_match", "corpus_bleu"),
    "rewardkit-tools": ("tool_call_valid", "tool_call_match", "tool_errors",
                        "tool_efficiency", "non_stop_penalty"),
    "rewardkit-trainers": ("layout_progress",),
    "rewardkit-translation": ("translation_verdict", "translation_judge"),
    "rewardkit-workspace": ("workspace_criteria",),
}


def _providing_distribution(name: str) -> str | None:
    return next((dist for dist, names in FIRST_PARTY_REWARDS.items() if name in names), None)


class UnknownRewardError(RegistryError, KeyError):
    """A reward name no installed plugin registers. The message says so, names this
    repository's plugin that does when there is one, else a close match (a typo)."""

    def __init__(self, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        dist = _providing_distribution(name)
        if dist is not None:
            folder = "trainers" if dist == "rewardkit-trainers" else f"plugins/{dist}"
            hint = (f": no installed plugin registers it; the {dist} plugin does, and it is "
                    f"not installed in this environment ({sys.prefix}): pip install -e "
                    f"{folder} (from a rewardkit checkout)")
        else:
            hint = ("" if not close else
                    f"; did you mean {', '.join(repr(c) for c in close)}?")
            hint = (f": no installed plugin registers it{hint} (a plugin's rewards register "
                    f"once it is pip-installed into this environment, {sys.prefix}; "
                    "`rewardkit plugins` lists those installed, `rewardkit rewards` their "
                    "rewards)")
        message = f"unknown reward {name!r}{hint}"
        super().__init__(message)
        self.message = message
        self.close_matches = close

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class PluginInfo:
    """An installed plugin: its distribution, version and the rewards it registered."""

    name: str
    distribution: str
    version: str
    rewards: tuple[str, ...]
    error: str = ""
    sections: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConfigSection:
    """A top-level config key contributed by a plugin, validated by ``model``."""

    name: str
    model: type[BaseModel]
    description: str
    distribution: str


class Registry:
    """Reward classes by name, filled from the plugins on first use."""

    def __init__(self) -> None:
        self._rewards: dict[str, type[Reward]] = {}
        self._sections: dict[str, ConfigSection] = {}
        self._plugins: list[PluginInfo] = []
        #: reward names two plugins registered: name -> the error, raised where it is used
        self._clashes: dict[str, str] = {}
        #: problems with the plugin setup that are not errors (shown by the CLI)
        self.warnings: list[str] = []
        self._loaded = False
        self._lock = threading.RLock()
        self.pm = pluggy.PluginManager("rewardkit")
        self.pm.add_hookspecs(hookspecs)

    # -- loading -------------------------------------------------------------------
    def load(self) -> None:
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            for module_name in DEFAULT_PLUGINS:
                self._add_plugin(importlib.import_module(module_name), module_name,
                                 BUILTIN_DISTRIBUTION, metadata_version("rewardkit"))
            allowed = _allowed_plugins()
            limit = self._import_timeout()
            found = sorted(_entry_points(), key=lambda e: e.name)
            if allowed:
                known = {ep.name for ep in found} | {ep.dist.name for ep in found if ep.dist}
                for name in sorted(allowed - known):
                    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.5)
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    self.warnings.append(
                        f"{PLUGINS_ENV} names {name!r}, which no installed plugin "
                        f"distribution or entry point is called{hint}")
            for ep in found:
                dist = ep.dist.name if ep.dist else ep.name
                if allowed is not None and ep.name not in allowed and dist not in allowed:
                    continue
                version = ep.dist.version if ep.dist else ""
                try:
                    module = _import_within(ep, dist, limit)
                except _ImportTimedOut as exc:
                    self._plugins.append(PluginInfo(ep.name, dist, version, (), str(exc)))
                    self.warnings.append(f"plugin {ep.name} ({dist}): {exc}")
                    _trace(f"{ep.name} ({dist}): {exc}")
                    continue
                except (Exception, SystemExit) as exc:
                    # a broken plugin must not take the others down, nor one that exits
                    # at import (a module-level ``argparse`` parser, ``sys.exit``)
                    self._plugins.append(PluginInfo(ep.name, dist, version, (),
                                                    f"failed to import: {exc!r}"))
                    continue
                self._add_plugin(module, ep.name, dist, version)

    def _import_timeout(self) -> float:
        raw = os.environ.get(IMPORT_TIMEOUT_ENV, "").strip()
        if not raw:
            return DEFAULT_IMPORT_TIMEOUT
        try:
            limit = float(raw)
        except ValueError:
            limit = -1.0
        if not 0 < limit <= 86_400:  # NaN too
            self.warnings.append(
                f"{IMPORT_TIMEOUT_ENV}={raw!r} is not a number of seconds between 0 and "
                f"86,400; plugins get the default {DEFAULT_IMPORT_TIMEOUT:g} s to import")
            return DEFAULT_IMPORT_TIMEOUT
        return limit

    def load_default(self, module_name: str) -> None:
        """Register a module of the rewardkit distribution as a default plugin (once)."""
        self.load()
        with self._lock:
            self._add_plugin(importlib.import_module(module_name), module_name,
                             BUILTIN_DISTRIBUTION, metadata_version("rewardkit"))

    def _add_plugin(self, module: ModuleType, name: str, dist: str, version: str) -> None:
        if self.pm.is_registered(module):
            return
        registered: list[str] = []

        def register(cls: type[Reward]) -> None:
            self._register(cls, dist, clash_is_error=False)
            registered.append(cls.name)

        self.pm.register(module, name=name)
        errors: list[str] = []
        self._call_own_hook(module, "register_rewards", register, errors)
        sections: list[str] = []

        def register_section(section: str, model: type[BaseModel],
                             description: str | None = None) -> None:
            self._register_section(section, model, description, dist)
            sections.append(section)

        self._call_own_hook(module, "register_config_sections", register_section, errors)
        self._plugins.append(PluginInfo(name, dist, version, tuple(registered),
                                        "; ".join(errors), tuple(sections)))
        for reward_name in registered:
            _trace(f"{name} ({dist}) registered reward {reward_name}")
        for section in sections:
            _trace(f"{name} ({dist}) registered config section {section}")
        for error in errors:
            _trace(f"{name} ({dist}): {error}")

    def _call_own_hook(self, module: ModuleType, hook: str, register: Any,
                       errors: list[str]) -> None:
        """Call ``module``'s implementation of ``hook`` with ``register``; a failure other
        than a registry error is added to ``errors`` (a broken plugin must not take the
        others down)."""
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            if impl.plugin is module:
                if _is_wrapper(impl):
                    errors.append(f"{hook} failed: {_WRAPPER_REFUSED}")
                    continue
                try:
                    impl.function(register=register)
                except RegistryError:
                    raise
                except (Exception, SystemExit) as exc:
                    errors.append(f"{hook} failed: {exc!r}")

    def _register_section(self, name: str, model: Any, description: str | None,
                          dist: str) -> None:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise RegistryError(f"{dist}: config section {name!r} needs a pydantic model "
                                f"class, got {model!r}")
        if not name.isidentifier():
            raise RegistryError(f"{dist}: config section {name!r} is not a free top-level "
                                "key (a section name is an identifier)")
        # a name the core config uses is refused where the config model is built
        # (rewardkit.config.sections.config_model): the config knows its keys, the registry not
        existing = self._sections.get(name)
        if existing is not None and existing.model is not model:
            raise RegistryError(
                f"config section {name!r} is registered twice: by {existing.distribution} "
                f"({existing.model.__module__}) and by {dist} ({model.__module__})"
            )
        doc = (model.__doc__ or "").strip().splitlines()
        self._sections[name] = ConfigSection(name, model, description or (doc[0] if doc else ""),
                                             dist)

    def _register(self, cls: Any, dist: str, clash_is_error: bool = True) -> None:
        if not (isinstance(cls, type) and issubclass(cls, Reward)):
            raise RegistryError(
                f"{dist}: register() takes a Reward subclass or a function decorated with "
                f"@rewardkit.reward, got {cls!r}"
            )
        existing = self._rewards.get(cls.name)
        if existing is not None and existing is not cls:
            message = (f"reward {cls.name!r} is registered twice: by {existing.plugin or '?'} "
                       f"({existing.__module__}) and by {dist} ({cls.__module__})")
            if clash_is_error:
                raise RegistryError(message)
            # plugins loading: the name is unusable, the other rewards are fine; the error
            # is raised for whoever asks for this name
            self._clashes[cls.name] = message
            return
        cls.plugin = dist
        self._rewards[cls.name] = cls

    def register(self, cls: type[Reward], distribution: str = "__main__") -> type[Reward]:
        """Register a reward class directly (scripts, notebooks, tests)."""
        self.load()
        with self._lock:
            self._register(cls, distribution)
        return cls

    def unregister(self, name: str) -> None:
        with self._lock:
            self._rewards.pop(name, None)

    # -- lookup --------------------------------------------------------------------
    def get(self, name: str) -> type[Reward]:
        self.load()
        if name in self._clashes:
            raise RegistryError(self._clashes[name])
        try:
            return self._rewards[name]
        except KeyError:
            error = UnknownRewardError(name, sorted(self._rewards))
            broken = [p for p in self._plugins if p.error]
            if broken:  # the reward may be in a plugin that did not import
                error.message += "; plugins that failed to import: " + "; ".join(
                    f"{p.name} ({p.distribution}): {p.error}" for p in broken)
            raise error from None

    def names(self) -> list[str]:
        self.load()
        return sorted(set(self._rewards) - set(self._clashes))

    def rewards(self) -> list[type[Reward]]:
        return [self._rewards[n] for n in self.names()]

    def clashes(self) -> dict[str, str]:
        """Reward names registered by two plugins, each with its error message."""
        self.load()
        return dict(self._clashes)

    def plugins(self) -> list[PluginInfo]:
        self.load()
        return list(self._plugins)

    def config_sections(self) -> list[ConfigSection]:
        """The config sections plugins registered, in the order they were registered."""
        self.load()
        return list(self._sections.values())

    def call_hook(self, hook: str, **kwargs: Any) -> list[str]:
        """Call ``hook`` on every plugin, one at a time; a plugin that fails is reported
        (the returned "plugin: problem" lines) and does not stop the others."""
        self.load()
        problems = []
        builtin = {p.name for p in self._plugins if p.distribution == BUILTIN_DISTRIBUTION}
        impls = getattr(self.pm.hook, hook).get_hookimpls()
        commands = kwargs.get("subparsers") if hook == "register_commands" else None
        for impl in sorted(impls, key=lambda i: i.plugin_name not in builtin):  # built-ins first
            if _is_wrapper(impl):
                problems.append(f"{impl.plugin_name}: {hook} failed: {_WRAPPER_REFUSED}")
                continue
            before = set(commands.choices) if commands is not None else set()
            try:
                impl.function(**kwargs)
            except (Exception, SystemExit) as exc:  # must not take the others down
                problems.append(f"{impl.plugin_name}: {hook} failed: {exc}")
            if commands is not None:
                for command in sorted(set(commands.choices) - before):
                    _trace(f"{impl.plugin_name} registered command {command}")
        return problems


_WRAPPER_REFUSED = ("a hook wrapper (hookwrapper=True / wrapper=True): rewardkit calls each "
                    "plugin's hook on its own, so wrappers cannot wrap; use a plain @hookimpl")


def _is_wrapper(impl: pluggy.HookImpl) -> bool:
    return bool(impl.hookwrapper or getattr(impl, "wrapper", False))


def _trace(line: str) -> None:
    """One line of the plugin trace, when ``REWARDKIT_TRACE_PLUGINS`` is set (not 0)."""
    if os.environ.get(TRACE_ENV, "") not in ("", "0"):
        print(f"rewardkit plugins: {line}", file=sys.stderr, flush=True)


class _ImportTimedOut(Exception):
    """A plugin's import did not finish within the limit."""


def _import_within(ep: metadata.EntryPoint, dist: str, limit: float) -> Any:
    """``ep.load()`` given ``limit`` seconds: the import runs in a daemon thread, so a
    plugin whose import never ends (a download, a server it waits for, a lock) is named
    and left behind rather than hanging the process. Python cannot stop an import, so a
    plugin past the limit goes on in its thread, unused (it ends with the process)."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, ep.load()))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name=f"rewardkit plugin import: {ep.name}",
                              daemon=True)
    thread.start()
    thread.join(min(limit, IMPORT_NOTE_AFTER))
    if thread.is_alive() and limit > IMPORT_NOTE_AFTER:
        print(f"rewardkit: still importing plugin {ep.name} ({dist}, entry point "
              f"{ep.name} = {ep.value}) after {IMPORT_NOTE_AFTER:g} s; giving up at "
              f"{limit:g} s ({IMPORT_TIMEOUT_ENV})", file=sys.stderr, flush=True)
        thread.join(limit - IMPORT_NOTE_AFTER)
    if not outcome:
        raise _ImportTimedOut(
            f"its import did not finish within {limit:g} s (entry point {ep.name} = "
            f"{ep.value}); left out of this run: fix the plugin, leave it out with "
            f"{PLUGINS_ENV}, or give it more time with {IMPORT_TIMEOUT_ENV}")
    loaded, got = outcome[0]
    if not loaded:
        raise got
    return got


def _entry_points() -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def _allowed_plugins() -> set[str] | None:
    raw = os.environ.get(PLUGINS_ENV)
    if raw is None:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


def metadata_version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "0+unknown"


#: the registry the engine, the config and the command line use
registry = Registry()


def register(cls: type[Reward], distribution: str = "__main__") -> type[Reward]:
    """Register a reward class (or a ``@reward`` function) in :data:`registry` without an
    entry point: for scripts, notebooks and tests. Returns ``cls``."""
    return registry.register(cls, distribution)


def unregister(name: str) -> None:
    """Remove the reward registered under ``name`` from :data:`registry` (if any)."""
    registry.unregister(name)


def get(name: str) -> type[Reward]:
    """The reward class registered under ``name`` (close matches in the error)."""
    return registry.get(name)


#: the name :mod:`rewardkit` exports: ``rewardkit.get_reward(name)``
get_reward = get


def names() -> list[str]:
    """The names of the registered rewards, sorted (a name two plugins clash on left out)."""
    return registry.names()


def rewards() -> list[type[Reward]]:
    """The registered reward classes, by name."""
    return registry.rewards()


def plugins() -> list[PluginInfo]:
    """The plugins that loaded or failed to, with what each registered."""
    return registry.plugins()
