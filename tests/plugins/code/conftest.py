"""Fixtures of the rewardkit-code suite: real sandbox pools, audited through /proc."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from code_audit import wait_for_no_task_processes


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    """After the test, no process of any rewardkit-code sandbox slot is alive."""
    yield
    assert wait_for_no_task_processes() == []
