"""The ``rewardkit`` command line.

Every command comes from a plugin through the ``register_commands`` hook: the built-in
ones from :mod:`rewardkit.cli.commands` (a default plugin), ``train``, ``export``, ``eval``,
``launch`` and ``jobs`` from the rewardkit-trainers distribution, others from any
installed plugin. This module owns what they share: the parser, the exit codes and how
a problem the user can fix is printed (no traceback, exit code 2). ``new-plugin``'s
templates are in :mod:`rewardkit.cli.scaffold`; ``python -m rewardkit.cli`` runs
:func:`main`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console

# the plugin API's exit codes and usage error, defined with the hooks (rewardkit.hookspecs)
# and exported by rewardkit; named here too for the commands that import them from the CLI
from rewardkit.hookspecs import EXIT_FAIL, EXIT_OK, EXIT_USAGE, UsageError  # noqa: F401

EXIT_INTERRUPTED = 130

#: wide enough for the summary tables when output goes to a file or a pipe
_PIPE_WIDTH = None if sys.stdout.isatty() else 160
out = Console(highlight=False, soft_wrap=True, width=_PIPE_WIDTH)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rewardkit ARGV...``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from rewardkit.config import ConfigError
    from rewardkit.registry import RegistryError
    from rewardkit.scoring.output import ScoringFileError
    from rewardkit.testing.cases import CaseFileError

    try:
        parser = build_parser()
    except RegistryError as exc:  # e.g. two plugins registering one reward name
        err.print(f"error: {exc}", markup=False)
        return EXIT_USAGE
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        code: int = args.func(args)
        _print_registry_warnings()
        return code
    except ConfigError as exc:
        _print_registry_warnings()
        err.print(exc.render(), markup=False)
    except (RegistryError, CaseFileError, UsageError, ScoringFileError) as exc:
        err.print(f"error: {exc}", markup=False)
    except OSError as exc:  # unreadable input, unwritable output, full disk
        where = f": {exc.filename}" if exc.filename else ""
        err.print(f"error: {exc.strerror or exc}{where}", markup=False)
    except KeyboardInterrupt:
        err.print("interrupted")
        return EXIT_INTERRUPTED
    return EXIT_USAGE


def _print_registry_warnings() -> None:
    """Plugin setup problems that are not errors (e.g. REWARDKIT_PLUGINS naming nothing)."""
    from rewardkit.registry import registry

    for warning in registry.warnings:
        err.print(f"warning: {warning}", markup=False)


def build_parser() -> argparse.ArgumentParser:
    """The ``rewardkit`` parser with every installed plugin's commands."""
    from rewardkit.registry import COMMANDS_PLUGIN, registry

    registry.load_default(COMMANDS_PLUGIN)
    parser = argparse.ArgumentParser(
        prog="rewardkit",
        description="Reward functions for GRPO / RLVR: plugins, composition, testing. "
        "Plugins add commands (rewardkit-trainers: train, export, eval, launch, jobs).",
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for problem in registry.call_hook("register_commands", subparsers=sub):
        err.print(f"warning: {problem}", markup=False)
    return parser

