from __future__ import annotations

import faulty_rewards
import pytest

from rewardkit import registry


@pytest.fixture(scope="session", autouse=True)
def faulty() -> None:
    """Register the misbehaving rewards of faulty_rewards.py for the core tests."""
    for cls in faulty_rewards.ALL:
        registry.register(cls, "tests")
    yield
    for cls in faulty_rewards.ALL:
        registry.unregister(cls.name)
