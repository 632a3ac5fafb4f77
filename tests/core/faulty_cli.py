"""``rewardkit`` with the misbehaving rewards of faulty_rewards.py registered: the CLI
as a user runs it, for attacks that need a reward that misbehaves on purpose."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import faulty_rewards

from rewardkit import registry
from rewardkit.cli import main

if __name__ == "__main__":
    for cls in faulty_rewards.ALL:
        registry.register(cls, "tests")
    sys.exit(main())
