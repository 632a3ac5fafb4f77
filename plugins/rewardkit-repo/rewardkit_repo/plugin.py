"""rewardkit plugin entry point of ``rewardkit-repo``: registers ``repo_tests``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardkit import hookimpl
from rewardkit_repo.repo_tests import RepoTests


@hookimpl
def register_rewards(register: Callable[[type[Any]], Any]) -> None:
    register(RepoTests)
