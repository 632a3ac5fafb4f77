"""``python -m rewardkit_sandbox doctor [--json]``: which isolation layers this machine has,
and the world-writable folders a task could reach (each made private to its zygote)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from rewardkit_sandbox.pool import SandboxPool


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rewardkit_sandbox",
        description="Inspect the rewardkit sandbox on this machine.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    doctor = commands.add_parser("doctor", help="start a zygote and list the active layers")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    arguments = parser.parse_args(argv)
    logging.getLogger("rewardkit_sandbox").setLevel(logging.ERROR)  # the table says it all
    with SandboxPool(size=1, require_layers=()) as pool:
        report, world_writable = pool.layers, pool.world_writable_dirs
    if arguments.json:
        print(json.dumps({**json.loads(report.to_json()), "world_writable": world_writable},
                         indent=2))
    else:
        print(report.to_table())
        print("world-writable folders a task could reach (each private to a zygote when "
              "private_world_writable is active): " + " ".join(world_writable))
    return 1 if report.missing_required else 0


if __name__ == "__main__":
    sys.exit(main())
