"""``python -m rewardkit_sandbox doctor [--json]``: which isolation layers this machine has."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from rewardkit_sandbox.layers import detect_layers


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
    report = detect_layers()
    print(report.to_json() if arguments.json else report.to_table())
    return 1 if report.missing_required else 0


if __name__ == "__main__":
    sys.exit(main())
