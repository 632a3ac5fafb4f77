"""One pool per process and settings; every pool with its own block of slot uids."""

from __future__ import annotations

import os

import pytest
from code_audit import CODE_UIDS
from rewardkit_code.restricted import restricted_python_path
from rewardkit_code.sandboxes import UID_BLOCK, shared_call_threads, shared_sandbox_pool

from rewardkit import RewardSet, Sample


def test_the_same_settings_share_one_pool_and_one_executor() -> None:
    assert shared_sandbox_pool(1) is shared_sandbox_pool(1)
    threads = shared_call_threads("rewardkit-code-test", 2)
    assert shared_call_threads("rewardkit-code-test", 2) is threads


@pytest.mark.skipif(os.geteuid() != 0, reason="per-slot uids need root")
def test_two_pools_never_share_a_slot_uid() -> None:
    uid_of = "import os\nprint(os.getuid())"
    first = int(shared_sandbox_pool(1).run(uid_of).stdout)
    second = int(shared_sandbox_pool(1, (restricted_python_path(),)).run(uid_of).stdout)
    assert first in CODE_UIDS and second in CODE_UIDS
    assert abs(first - second) >= UID_BLOCK


def test_rewards_with_the_same_settings_reuse_the_pool() -> None:
    config = {"rewards": {
        "a": {"reward": "code_execution", "params": {"concurrency": 1}},
        "b": {"reward": "code_execution", "params": {"concurrency": 1, "mode": "binary"}},
    }}
    sample = Sample(completion="```python\nprint(1)\n```", reference=[{"stdin": "", "stdout": "1"}])
    pool = shared_sandbox_pool(1)
    result = RewardSet.from_dict(config).score([sample])
    assert result.values("a") == result.values("b") == [1.0]
    assert shared_sandbox_pool(1) is pool
