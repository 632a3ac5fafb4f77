"""SandboxFusion (https://github.com/bytedance/SandboxFusion) as a remote runner."""

from __future__ import annotations

import time
from typing import Any

from rewardkit_sandbox.budget import Ticket
from rewardkit_sandbox.remote.base import RemoteOptions, RemoteRunner
from rewardkit_sandbox.remote.http import RequestLog
from rewardkit_sandbox.result import SandboxResult


class SandboxFusionRunner(RemoteRunner):
    """Programs run by a SandboxFusion server (https://github.com/bytedance/SandboxFusion).

    Each call is one ``POST {base_url}/run_code`` with ``{"code", "language",
    "run_timeout", "stdin"}``; with tests, one call per test (program + test), stopping
    at the first failure if asked.  Response ``status`` ``Success``/``Failed`` carries a
    ``run_result`` (``Finished`` or ``TimeLimitExceeded``, ``return_code``, ``stdout``,
    ``stderr``, ``execution_time``); ``SandboxError``, HTTP errors and unreadable
    answers become ``Status.SANDBOX_ERROR``.
    """

    provider = "sandbox_fusion"

    def __init__(self, base_url: str, options: RemoteOptions | None = None) -> None:
        super().__init__(options or RemoteOptions(), name="SandboxFusion")
        self.url = base_url.rstrip("/") + "/run_code"

    def _run_once(
        self, code: str, stdin: str | None, ticket: Ticket | None, log: RequestLog
    ) -> SandboxResult:
        payload: dict[str, Any] = {
            "code": code,
            "language": self.language,
            "run_timeout": self.run_timeout_s,
            "stdin": stdin or "",
        }
        if self.memory_limit_mb is not None:
            payload["memory_limit_MB"] = self.memory_limit_mb
        started = time.monotonic()
        body = self.post(self.url, payload, ticket, log)
        return self._result_of(body, started)

    def _result_of(self, body: Any, started: float) -> SandboxResult:
        if not isinstance(body, dict) or body.get("status") not in {
            "Success",
            "Failed",
            "SandboxError",
        }:
            return self.sandbox_error(
                f"unexpected SandboxFusion answer: {str(body)[:300]}", started
            )
        if body["status"] == "SandboxError":
            return self.sandbox_error(
                f"SandboxFusion: {body.get('message') or 'SandboxError'}", started
            )
        compiled = body.get("compile_result")
        run = body.get("run_result")
        if not isinstance(run, dict):
            if isinstance(compiled, dict) and compiled.get("return_code") not in (0, None):
                return self.compile_failure(
                    started, compiled.get("stderr"), compiled.get("return_code")
                )
            return self.sandbox_error(
                f"SandboxFusion answer without run_result: {str(body)[:300]}", started
            )
        return_code = run.get("return_code")
        run_status = run.get("status")
        if run_status not in ("Finished", "TimeLimitExceeded"):
            return self.sandbox_error(f"SandboxFusion run status {run_status!r}", started)
        signal_number = -return_code if isinstance(return_code, int) and return_code < 0 else None
        execution_time = run.get("execution_time")
        return self.verdict(
            started,
            exit_code=return_code if isinstance(return_code, int) else None,
            stdout=run.get("stdout"),
            stderr=run.get("stderr"),
            signal=signal_number,
            timed_out=run_status == "TimeLimitExceeded",
            cpu_time_s=float(execution_time) if isinstance(execution_time, (int, float)) else 0.0,
            metadata={"response_status": body["status"]},
        )
