"""The hooks a rewardkit plugin can implement.

A plugin is a module (usually exposed through the ``rewardkit`` entry-point group of its
distribution) with functions decorated by :data:`hookimpl`::

    from rewardkit import hookimpl

    @hookimpl
    def register_rewards(register):
        register(my_reward)

The core is itself a set of such plugins: the built-in rewards and the built-in commands
(``rewardkit.cli.commands``) register through these same hooks.

Everything a plugin needs is importable from :mod:`rewardkit`: :data:`hookimpl`, the type
of ``register_commands``' argument (:data:`Subcommands`), the error a command raises for
a problem the user can fix (:class:`UsageError`) and the exit codes (``EXIT_OK``,
``EXIT_FAIL``, ``EXIT_USAGE``). Each implementation is called on its own (see
:mod:`rewardkit.registry`): ``tryfirst``/``trylast`` change nothing and wrappers are
refused.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import pluggy

if TYPE_CHECKING:

    from rewardkit.authoring import Reward

hookspec = pluggy.HookspecMarker("rewardkit")
hookimpl = pluggy.HookimplMarker("rewardkit")

#: what ``register_commands`` receives: the sub-command action of the ``rewardkit``
#: parser (``subparsers.add_parser(name, help=...)`` adds a command)
if TYPE_CHECKING:
    Subcommands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # not subscriptable at run time
    Subcommands = argparse._SubParsersAction

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
"""0: done; 1: ran, and what was checked failed (a golden case, an AWS call); 2: a problem
with what was asked (arguments, config, input files), reported before doing anything."""


class UsageError(Exception):
    """A problem with what the user asked for: printed without a traceback, exit 2."""


@hookspec
def register_rewards(register: Callable[[type[Reward]], Any]) -> None:
    """Register reward classes.

    Called once, when the registry is first used. ``register(cls)`` adds a reward class
    (a :class:`rewardkit.Reward` subclass, or a function decorated with
    :func:`rewardkit.reward`) under its ``name``. Registering a name that another
    plugin already registered is an error naming both distributions.
    """


@hookspec
def register_commands(subparsers: Subcommands) -> None:
    """Add sub-commands to the ``rewardkit`` command line.

    Called each time the command line is built (``rewardkit ...``). ``subparsers`` is the
    :mod:`argparse` sub-command action of the ``rewardkit`` parser: add a command with
    ``p = subparsers.add_parser(name, help=...)``, its arguments with ``p.add_argument``,
    and its handler with ``p.set_defaults(func=handler)``. ``handler(args)`` returns the
    exit code (:data:`rewardkit.EXIT_OK`, ...). Raise :class:`rewardkit.UsageError`
    or :class:`rewardkit.ConfigError` for a problem the user can fix: the command line
    prints it without a traceback and exits with :data:`rewardkit.EXIT_USAGE`.
    Keep imports of heavy libraries inside the handler: ``rewardkit --help`` builds
    every command's parser.
    """


@hookspec
def register_config_sections(register: Callable[..., Any]) -> None:
    """Add top-level sections to the reward config.

    Called once, when the config model is first built. ``register(name, model)`` adds an
    optional top-level key ``name`` whose value is validated by the pydantic ``model``
    (``description=`` sets its one-line meaning; default: the first line of the model's
    docstring). The section is validated with the rest of the config (errors read
    ``file: name.key: reason``), appears in ``rewardkit schema`` and in the config
    reference, and is read back as ``config.section(name)``. Two plugins registering the
    same name, or a name the core uses, is an error naming both.
    """
