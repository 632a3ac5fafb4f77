"""The limits the sandbox tests run under (audits: rewardkit_sandbox.audit)."""

from __future__ import annotations

from rewardkit_sandbox import SandboxLimits

TEST_LIMITS = SandboxLimits(
    wall_time_s=2.0,
    cpu_time_s=1.0,
    memory_bytes=256 * 1024 * 1024,
    file_size_bytes=1024 * 1024,
    open_files=64,
    processes=16,
    stdout_bytes=64 * 1024,
    stderr_bytes=64 * 1024,
    disk_bytes=8 * 1024 * 1024,
)
