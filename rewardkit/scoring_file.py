"""Scoring a JSONL file of samples (``rewardkit score``), streaming, batch by batch.

Each input line is written back unchanged plus ``reward`` (the total, or null) and
``components`` ({name: {value, status, reason}}, plus ``latency_ms`` for a reward timed
sample by sample: process mode). Malformed lines are reported with
their line number, counted and skipped; nothing else is dropped. Lines of one prompt
stay in one batch, so group rewards and per-group normalisation see the whole group.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rewardkit.composition import RewardSet, group_key
from rewardkit.score_result import ScoreResult
from rewardkit.types import Sample

ProgressFn = Callable[[int, int | None], None]


def _read(path: Path, bad: list[tuple[int, str]]) -> Iterator[tuple[dict[str, Any], Sample]]:
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                bad.append((line_no, f"invalid JSON ({exc.msg} at column {exc.colno})"))
                continue
            if not isinstance(row, dict):
                bad.append((line_no, f"expected a JSON object, got {type(row).__name__}"))
                continue
            if "completion" not in row:
                bad.append((line_no, "no 'completion' key"))
                continue
            yield row, Sample.from_dict(row)


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.strip())


def score_jsonl(rs: RewardSet, src: Path, dst: Path, step: int = 0, batch_size: int = 1024,
                on_progress: ProgressFn | None = None) -> dict[str, Any]:
    """Score ``src`` into ``dst``; returns a summary with metrics over all lines."""
    bad: list[tuple[int, str]] = []
    total_lines = _count_lines(src)
    results: list[ScoreResult] = []
    done = 0
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".partial")
    with tmp.open("w", encoding="utf-8") as fh:
        rows: list[dict[str, Any]] = []
        samples: list[Sample] = []

        def flush() -> None:
            nonlocal done
            if not samples:
                return
            result = rs.score(samples, step=step)
            timed = {name: o.sample_seconds for name, o in result.outcomes.items()
                     if o.sample_seconds}
            for j, (row, scored) in enumerate(zip(rows, result, strict=True)):
                row = dict(row)
                row["reward"] = scored.total
                row["components"] = {
                    name: {"value": s.value, "status": str(s.status), "reason": s.reason}
                    for name, s in scored.scores.items()
                }
                for name, seconds in timed.items():  # samples timed one by one (process mode)
                    if j in seconds:
                        row["components"][name]["latency_ms"] = round(seconds[j] * 1000, 3)
                fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            results.append(_without_samples(result))
            done += len(samples)
            rows.clear()
            samples.clear()
            if on_progress:
                on_progress(done + len(bad), total_lines)

        for row, sample in _read(src, bad):
            if len(samples) >= batch_size and group_key(sample) != group_key(samples[-1]):
                flush()
            rows.append(row)
            samples.append(sample)
        flush()
    tmp.replace(dst)
    merged = ScoreResult.concat(results, step)
    metrics = merged.metrics
    return {"out": str(dst), "step": step, "scored": done, "bad_lines": bad,
            "skipped_lines": len(bad), "components": metrics["components"],
            "total": metrics["total"]}


def _without_samples(result: ScoreResult) -> ScoreResult:
    result.samples = []
    return result


