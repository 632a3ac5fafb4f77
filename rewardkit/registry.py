"""The reward registry: one pluggy PluginManager, entry points loaded once.

Built-in rewards are default plugins registered through the same ``register_rewards``
hook as third-party ones. ``REWARDKIT_PLUGINS`` restricts which installed plugins load:
a comma-separated list of distribution (or entry-point) names; empty means built-ins only.
"""

from __future__ import annotations

import difflib
import importlib
import os
import threading
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType
from typing import Any

import pluggy

from rewardkit import hookspecs
from rewardkit.authoring import Reward

ENTRY_POINT_GROUP = "rewardkit"
PLUGINS_ENV = "REWARDKIT_PLUGINS"
BUILTIN_DISTRIBUTION = "rewardkit"

DEFAULT_PLUGINS = (
    "rewardkit.builtin.format",
    "rewardkit.builtin.math",
    "rewardkit.builtin.content",
    "rewardkit.builtin.length_scaled",
)


class RegistryError(Exception):
    """A reward could not be registered or found."""


class UnknownRewardError(RegistryError, KeyError):
    def __init__(self, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        message = f"unknown reward {name!r}{hint} (`rewardkit rewards` lists them)"
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


class Registry:
    """Reward classes by name, filled from the plugins on first use."""

    def __init__(self) -> None:
        self._rewards: dict[str, type[Reward]] = {}
        self._plugins: list[PluginInfo] = []
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
            for ep in sorted(_entry_points(), key=lambda e: e.name):
                dist = ep.dist.name if ep.dist else ep.name
                if allowed is not None and ep.name not in allowed and dist not in allowed:
                    continue
                version = ep.dist.version if ep.dist else ""
                try:
                    module = ep.load()
                except Exception as exc:  # a broken plugin must not take the others down
                    self._plugins.append(PluginInfo(ep.name, dist, version, (),
                                                    f"failed to import: {exc!r}"))
                    continue
                self._add_plugin(module, ep.name, dist, version)

    def _add_plugin(self, module: ModuleType, name: str, dist: str, version: str) -> None:
        if self.pm.is_registered(module):
            return
        registered: list[str] = []

        def register(cls: type[Reward]) -> None:
            self._register(cls, dist)
            registered.append(cls.name)

        self.pm.register(module, name=name)
        error = ""
        for impl in self.pm.hook.register_rewards.get_hookimpls():
            if impl.plugin is module:
                try:
                    impl.function(register=register)
                except RegistryError:
                    raise
                except Exception as exc:  # a broken plugin must not take the others down
                    error = f"register_rewards failed: {exc!r}"
        self._plugins.append(PluginInfo(name, dist, version, tuple(registered), error))

    def _register(self, cls: Any, dist: str) -> None:
        if not (isinstance(cls, type) and issubclass(cls, Reward)):
            raise RegistryError(
                f"{dist}: register() takes a Reward subclass or a function decorated with "
                f"@rewardkit.reward, got {cls!r}"
            )
        existing = self._rewards.get(cls.name)
        if existing is not None and existing is not cls:
            raise RegistryError(
                f"reward {cls.name!r} is registered twice: by {existing.plugin or '?'} "
                f"({existing.__module__}) and by {dist} ({cls.__module__})"
            )
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
        try:
            return self._rewards[name]
        except KeyError:
            raise UnknownRewardError(name, sorted(self._rewards)) from None

    def names(self) -> list[str]:
        self.load()
        return sorted(self._rewards)

    def rewards(self) -> list[type[Reward]]:
        return [self._rewards[n] for n in self.names()]

    def plugins(self) -> list[PluginInfo]:
        self.load()
        return list(self._plugins)


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


registry = Registry()


def get_reward(name: str) -> type[Reward]:
    """The reward class registered under ``name`` (close matches in the error)."""
    return registry.get(name)
