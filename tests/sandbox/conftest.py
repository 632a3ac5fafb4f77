"""Fixtures for the sandbox suite: one small shared pool, audited after every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rewardkit_sandbox import SandboxPool
from rewardkit_sandbox.audit import leftover_files, processes_of_uids
from sandbox_audit import TEST_LIMITS


@pytest.fixture(scope="session")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(size=2, limits=TEST_LIMITS) as shared:
        yield shared


@pytest.fixture
def contained(pool: SandboxPool) -> Iterator[SandboxPool]:
    """The shared pool; afterwards nothing of the task survives and the pool still serves."""
    yield pool
    uids = set(pool.slot_uids)
    assert processes_of_uids(uids) == []
    assert leftover_files(pool, host_tmp=False) == []
    for _ in range(pool.size):
        after = pool.run("print(6 * 7)")
        assert (after.status.value, after.stdout) == ("ok", "42\n")
