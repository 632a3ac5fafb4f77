"""``workspace_criteria``: the workspace a rollout left, checked against criteria.

The row's workspace column (``workspace`` by default) names the workspace: a directory
or a ``.tar``/``.tar.gz``/``.tgz``/``.zip`` archive under one of ``allowed_roots``, or a
mapping of relative paths to file text. The criteria come from the config (``criteria``)
or, when the config lists none, from the row's reference (a list, or ``{"criteria": [...],
"combine": ...}``). Everything is read from a private copy (:mod:`.workspace`); commands
and services run in the sandbox (:mod:`.sandboxed`). docs/plugins/workspace.md.

Value: ``all`` 1.0 when every criterion passes, ``any`` when one does, ``weighted`` the
weighted share that passes. Details: each criterion's label, pass and reason, and what the
copy left out. Status error: no workspace, a path outside the allowed roots, a workspace
over a cap or an unreadable archive, a criterion list that does not validate, or a sandbox
that cannot run.

>>> from rewardkit import Sample
>>> reward = WorkspaceCriteria({"criteria": [{"type": "file_contains", "path": "out.txt",
...                                         "text": "42"}]})
>>> reward.score(Sample("", "", metadata={"workspace": {"out.txt": "42\\n"}})).value
1.0
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Literal

from pydantic import Field, TypeAdapter, ValidationError

from rewardkit import ExecutionMode, Params, Reward, Sample, Score
from rewardkit_workspace.criteria import SANDBOXED, Criterion, Outcome, check_file
from rewardkit_workspace.sandboxed import SandboxUnavailable, run_checks
from rewardkit_workspace.workspace import Caps, WorkspaceError, private_copy

Combine = Literal["all", "any", "weighted"]
_CRITERIA = TypeAdapter(list[Criterion])


class WorkspaceParams(Params):
    """Parameters of workspace_criteria."""

    criteria: list[Criterion] = Field(
        default_factory=list, description="the checks; empty: read them from the reference")
    combine: Combine = Field("all", description="all / any must pass, or the weighted share")
    column: str = Field("workspace", description="metadata column naming the workspace")
    allowed_roots: list[str] = Field(
        default_factory=list, description="folders a workspace path must lie under "
        "(after resolving links); a path elsewhere is an error")
    timeout_s: float = Field(10.0, gt=0, le=300, description="seconds per command or service")
    max_file_bytes: int = Field(4 * 1024 * 1024, gt=0, description="cap on one file")
    max_total_bytes: int = Field(32 * 1024 * 1024, gt=0, description="cap on the workspace")
    max_entries: int = Field(10_000, gt=0, description="cap on files and folders")


class WorkspaceCriteria(Reward):
    """The workspace a rollout left passes its criteria (files, JSON/YAML values,
    commands, SQLite queries, HTTP services), combined all / any / weighted."""

    name: ClassVar[str] = "workspace_criteria"
    Params: ClassVar[type[Params]] = WorkspaceParams
    mode: ClassVar[ExecutionMode] = ExecutionMode.ASYNC
    sandboxed: ClassVar[bool] = True
    timeout: ClassVar[float | None] = 600.0
    description: ClassVar[str] = (
        "Check the workspace a rollout left: files, JSON/YAML values, commands, SQLite, HTTP")
    _pool: ClassVar[ThreadPoolExecutor | None] = None

    def score(self, sample: Sample) -> Score | asyncio.Future[Score]:
        """Grade ``sample``: on a thread when called from an event loop, else here."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self.grade(sample)
        if WorkspaceCriteria._pool is None:
            WorkspaceCriteria._pool = ThreadPoolExecutor(4, thread_name_prefix="workspace")
        return loop.run_in_executor(WorkspaceCriteria._pool, self.grade, sample)

    def grade(self, sample: Sample) -> Score:
        params: WorkspaceParams = self.params  # type: ignore[assignment]
        criteria, combine = _criteria_of(params, sample.reference)
        if isinstance(criteria, str):
            return Score.error(criteria)
        source = sample.metadata.get(params.column)
        if source is None:
            return Score.error(f"the row has no workspace column {params.column!r}")
        caps = Caps(params.max_file_bytes, params.max_total_bytes, params.max_entries)
        try:
            copy = private_copy(source, params.allowed_roots, caps)
        except WorkspaceError as error:
            return Score.error(str(error))
        with copy:
            outcomes: dict[int, Outcome] = {}
            sandboxed = [i for i, c in enumerate(criteria) if c.type in SANDBOXED]
            for i, criterion in enumerate(criteria):
                if i not in sandboxed:
                    outcomes[i] = check_file(criterion, copy.root, params.timeout_s)
            if sandboxed:
                try:
                    ran = run_checks([criteria[i] for i in sandboxed], copy.root,
                                     params.timeout_s)
                except SandboxUnavailable as error:
                    return Score.error(f"the sandbox cannot run the checks: {error}")
                outcomes.update(zip(sandboxed, ran, strict=True))
        results = [outcomes[i] for i in range(len(criteria))]
        value = _combined(criteria, results, combine)
        details: dict[str, Any] = {"criteria": [
            {"criterion": c.label, "passed": o.passed, **({"reason": o.reason} if o.reason
                                                          else {})}
            for c, o in zip(criteria, results, strict=True)]}
        if copy.left_out:
            details["left_out"] = copy.left_out[:20]
        failed = [c.label for c, o in zip(criteria, results, strict=True) if not o.passed]
        reason = f"failed: {', '.join(failed)}"[:300] if failed else ""
        return Score.ok(value, reason, **details)


def _criteria_of(params: WorkspaceParams, reference: Any) -> tuple[list[Criterion] | str, Combine]:
    if params.criteria:
        return params.criteria, params.combine
    combine = params.combine
    raw = reference
    if isinstance(reference, dict):
        raw = reference.get("criteria")
        combine = reference.get("combine", combine)
        if combine not in ("all", "any", "weighted"):
            return f"reference combine must be all, any or weighted, got {combine!r}", "all"
    if not raw:
        return "no criteria: none in the config's params and none in the reference", combine
    try:
        return _CRITERIA.validate_python(raw), combine
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"reference criteria invalid at {where}: {first['msg']}", combine


def _combined(criteria: list[Criterion], results: list[Outcome], combine: Combine) -> float:
    if combine == "all":
        return float(all(o.passed for o in results))
    if combine == "any":
        return float(any(o.passed for o in results))
    total = sum(c.weight for c in criteria)
    if total == 0:
        return 0.0
    return sum(c.weight for c, o in zip(criteria, results, strict=True) if o.passed) / total
