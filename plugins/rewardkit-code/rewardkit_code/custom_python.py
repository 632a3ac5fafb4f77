"""``python``: a reward function written in the config, run in the sandbox.

The platform in SEEDS C lets users paste a reward function into a UI; here it goes in
``params.source``::

    rewards:
      keywords:
        reward: python
        params:
          source: |
            import re
            def reward(completion, reference, metadata):
                found = set(re.findall(r"\\w+", completion.lower()))
                return len(found & set(reference)) / len(reference)

``reward(completion: str, reference, metadata: dict) -> float`` receives the completion
text, the sample's reference (any JSON value) and its other dataset columns. It returns
a number (bool and int count), or ``None`` for "does not apply" (status skipped).

The source is compiled once, with RestrictedPython, when the config loads (a bad source
fails ``rewardkit validate`` at ``rewards.<name>.params.source`` with ``line N: ...``
messages), and runs only inside a sandbox child. Samples go to the sandbox in chunks of
at most ``batch_size`` (one child per chunk, chunks in parallel on every slot); a chunk
that dies (time, memory) is re-run one sample per child, so one bad sample cannot cost
the others. Every child holds a slot of the node's local sandbox budget (shared with
``code_execution``'s programs, every process and rank); each score's ``queued_s`` is the
wait for it.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import marshal
import math
import secrets
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any, ClassVar

from pydantic import Field, ValidationInfo, field_validator
from rewardkit_sandbox import SandboxLimits, SandboxResult, SandboxUnavailableError, Status

from rewardkit import ExecutionMode, Params, Reward, Sample, Score
from rewardkit_code.restricted import (
    DEFAULT_MODULES,
    SAFE_MODULES,
    RewardSourceError,
    compile_reward_source,
    restricted_python_path,
)
from rewardkit_code.sandboxes import (
    MOST_LOCAL_SLOTS,
    default_slots,
    local_budget,
    shared_call_threads,
    shared_sandbox_pool,
)

_MIB = 1024 * 1024
#: a chunk's child imports RestrictedPython and loads the code before the first call
_START_OVERHEAD_S = 3.0


class PythonRewardParams(Params):
    """Parameters of ``python``."""

    allowed_modules: list[str] = Field(
        default_factory=lambda: list(DEFAULT_MODULES),
        description=f"modules the source may import; a subset of {', '.join(SAFE_MODULES)}",
    )
    source: str = Field(
        ...,
        description="Python source defining `def reward(completion, reference, metadata)` "
        "returning a number (or None to skip)",
    )
    timeout_s: float = Field(2.0, gt=0, le=300, description="time limit of one reward call")
    memory_mb: int = Field(512, ge=64, description="address-space limit of the sandbox child")
    batch_size: int = Field(64, ge=1, description="at most this many samples per sandbox child")
    concurrency: int | None = Field(
        None, ge=1, le=MOST_LOCAL_SLOTS,
        description=f"sandbox slots (children at once); default: CPU count; at most "
        f"{MOST_LOCAL_SLOTS}",
    )

    @field_validator("allowed_modules")
    @classmethod
    def _known_modules(cls, modules: list[str]) -> list[str]:
        unknown = [name for name in modules if name not in SAFE_MODULES]
        if unknown:
            raise ValueError(
                f"not importable from a reward source: {', '.join(unknown)} "
                f"(choose from {', '.join(SAFE_MODULES)})"
            )
        return modules

    @field_validator("source")
    @classmethod
    def _compiles(cls, source: str, info: ValidationInfo) -> str:
        allowed = info.data.get("allowed_modules", DEFAULT_MODULES)
        try:
            compile_reward_source(source, allowed)
        except RewardSourceError as error:
            raise ValueError(str(error)) from None
        return source


class PythonReward(Reward):
    """Score with a reward function from the config, compiled by RestrictedPython, run in
    the sandbox. A group reward: samples are sent to the sandbox in chunks."""

    name: ClassVar[str] = "python"
    Params: ClassVar[type[PythonRewardParams]] = PythonRewardParams
    mode: ClassVar[ExecutionMode] = ExecutionMode.ASYNC
    sandboxed: ClassVar[bool] = True
    group: ClassVar[bool] = True
    timeout: ClassVar[float | None] = 600.0
    description: ClassVar[str] = (
        "A reward function from the config (params.source), RestrictedPython in the sandbox"
    )

    params: PythonRewardParams

    def setup(self) -> None:
        code = compile_reward_source(self.params.source, self.params.allowed_modules)
        self._code = base64.b64encode(marshal.dumps(code)).decode()
        harness = resources.files("rewardkit_code").joinpath("_restricted_harness.py")
        self._harness = harness.read_text(encoding="utf-8")
        self._waiting: list[tuple[list[Sample], asyncio.Future[list[Score]]]] = []

    def score_group(
        self, samples: Sequence[Sample]
    ) -> list[Score] | asyncio.Future[list[Score]]:
        """Score ``samples``: as a future when called from an event loop (async mode),
        else blocking (inline or process mode).

        On an event loop the groups asked for in the same turn of the loop are pooled
        before they are cut into chunks, so a batch of one-sample groups (distinct
        prompts) still shares children instead of paying one child per sample.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self.grade_many(samples)
        future: asyncio.Future[list[Score]] = loop.create_future()
        self._waiting.append((list(samples), future))
        if len(self._waiting) == 1:
            loop.call_soon(self._send_waiting, loop)
        return future

    def grade(self, sample: Sample) -> Score:
        """Score one sample, blocking."""
        return self._grade_chunk([sample])[0]

    def grade_many(self, samples: Sequence[Sample]) -> list[Score]:
        """Score ``samples`` blocking, their chunks in parallel on the sandbox."""
        chunks = self._chunks(samples)
        if len(chunks) == 1:
            return self._grade_chunk(chunks[0])
        return [score for part in self._executor().map(self._grade_chunk, chunks) for score in part]

    def _send_waiting(self, loop: asyncio.AbstractEventLoop) -> None:
        waiting, self._waiting = self._waiting, []
        samples = [sample for group, _ in waiting for sample in group]
        executor = self._executor()
        parts = [
            loop.run_in_executor(executor, self._grade_chunk, chunk)
            for chunk in self._chunks(samples)
        ]

        async def hand_out() -> None:
            try:
                scores = [score for part in await asyncio.gather(*parts) for score in part]
            except Exception as error:  # the engine turns it into error scores
                for _, future in waiting:
                    if not future.done():
                        future.set_exception(error)
                return
            start = 0
            for group, future in waiting:
                if not future.done():  # a group the engine gave up on (timeout)
                    future.set_result(scores[start : start + len(group)])
                start += len(group)

        loop.create_task(hand_out())

    def _chunks(self, samples: Sequence[Sample]) -> list[list[Sample]]:
        """At most ``batch_size`` samples per chunk, and enough chunks for every slot."""
        slots = self.params.concurrency or default_slots()
        size = max(1, min(self.params.batch_size, math.ceil(len(samples) / slots)))
        return [list(samples[i : i + size]) for i in range(0, len(samples), size)] or [[]]

    def _executor(self) -> ThreadPoolExecutor:
        threads = self.params.concurrency or default_slots()
        return shared_call_threads("rewardkit-code-restricted", threads)

    def _grade_chunk(self, samples: Sequence[Sample]) -> list[Score]:
        if not samples:
            return []
        params = self.params
        token = secrets.token_hex(16)
        request = {
            "token": token,
            "code": self._code,
            "allowed": list(params.allowed_modules),
            "timeout_s": params.timeout_s,
            "samples": [[s.text, s.reference, s.metadata] for s in samples],
        }
        limit = _START_OVERHEAD_S + params.timeout_s * len(samples)
        limits = SandboxLimits(
            wall_time_s=limit, cpu_time_s=limit, memory_bytes=params.memory_mb * _MIB
        )
        try:
            pool = shared_sandbox_pool(params.concurrency, (restricted_python_path(),))
        except SandboxUnavailableError as error:
            return [Score.error(f"sandbox unavailable: {error}")] * len(samples)
        payload = json.dumps(request, default=str)
        # released before any re-run below takes its own slot (a 1-slot node would wait
        # on itself otherwise)
        with local_budget(params.concurrency).acquire() as ticket:
            result = pool.run(self._harness, stdin=payload, limits=limits)
        queued = {"queued_s": round(ticket.queued_s, 6)}  # the queueing metric
        records = _records(result.stdout, token)
        scores = [_with(_score_of(record), queued) for record in records[: len(samples)]]
        missing = samples[len(scores) :]
        if not missing:
            return scores
        if result.status is Status.SANDBOX_ERROR:
            failed = _with(Score.error(f"sandbox error: {result.error}"), queued)
            return scores + [failed] * len(missing)
        if len(samples) > 1:
            # the child died part-way: the rest are scored one per child, so the sample
            # that killed it gets its own verdict and the others theirs
            return scores + [score for sample in missing for score in self._grade_chunk([sample])]
        return [_with(_failure_score(result, params.timeout_s), queued)]


def _with(score: Score, details: dict[str, float]) -> Score:
    return dataclasses.replace(score, details={**(score.details or {}), **details})


def _records(stdout: str, token: str) -> list[dict[str, Any]]:
    records = []
    prefix = token + " "
    for line in stdout.splitlines():
        if line.startswith(prefix):
            try:
                record = json.loads(line[len(prefix) :])
            except ValueError:
                break
            if isinstance(record, dict):
                records.append(record)
    return records


def _score_of(record: dict[str, Any]) -> Score:
    if "value" in record and isinstance(record["value"], int | float):
        value = float(record["value"])
        if math.isfinite(value):
            return Score.ok(value)
    if "skip" in record:
        return Score.skip(str(record["skip"]))
    if "timeout" in record:
        return Score.timeout(f"reward call exceeded timeout_s (stopped after {record['timeout']}s)")
    return Score.error(str(record.get("error") or f"unreadable result {record!r}"))


def _failure_score(result: SandboxResult, timeout_s: float) -> Score:
    """A lone sample's child ended without a verdict."""
    if result.status is Status.TIMEOUT:
        return Score.timeout(f"reward call exceeded {timeout_s:g}s ({result.error})")
    if result.status is Status.MEMORY:
        return Score.error(f"reward ran out of memory ({result.error})")
    last = [line for line in result.stderr.strip().splitlines() if line.strip()]
    detail = last[-1][:300] if last else result.error or "no detail"
    return Score.error(f"reward's sandbox run ended with {result.status}: {detail}")
