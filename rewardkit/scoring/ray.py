"""Offline scoring of large JSONL or parquet files on Ray Data (``rewardkit score --engine ray``).

How it keeps its promises:

* **groups whole**: the driver reads the input once (streaming) and cuts it into shards of
  about ``batch_size`` rows, only where the group (prompt) changes, as the local scorer
  does; a shard is scored by one ``RewardSet.score`` call, so group rewards and per-group
  normalisation see every completion of a prompt (lines of one prompt must be adjacent);
* **streaming, bounded memory**: shards are the blocks of a Ray Data pipeline whose
  scoring actors read their own rows from the input (a path every node can read) and
  return the scored lines; Ray Data's backpressure bounds what is in flight, and the
  driver writes each shard as it comes, in input order (the shards:
  :mod:`rewardkit.scoring.shards`). Parquet rows come from a reading stage before the
  actors (``read_units``), which streams each row group once and cuts it into shards,
  however many shards share the group;
* **resumable, no lost and no duplicated rows**: the output grows in ``OUT.partial``;
  after a shard's lines are on disk (fsync) the driver appends one line to the manifest
  ``OUT.progress`` with the shard and the output length it ends at (fsync again;
  :mod:`rewardkit.scoring.manifest`). After a
  crash, ``--resume`` cuts ``OUT.partial`` back to the last committed length, skips the
  committed shards and scores the rest. The shards are a function of the input and
  ``batch_size``, and the manifest's first line records both (with the input's size and
  modification time), so a resume against changed input is refused;
* **progress**: ``on_progress(rows_done, rows_total)`` after every shard;
* **a row that kills its process**: a shard whose actor dies is retried
  ``SHARD_RETRIES`` times, then rescored in pieces in fresh actors (:class:`_Rescue`) until
  the rows that kill the process are found: those are reported with their line number,
  the rest of the shard is scored, and the run ends. Each try costs an actor, so the run
  stops by the executors' rule (:class:`~rewardkit.execution.executor.Breaker`, counted
  in tries: a shard the pipeline scored is one, a shard it gave up on is its tries) once
  the process died on nearly every try: an error naming the counts, the shards committed
  kept for ``--resume``;
* **stdout is the caller's**: Ray's driver prints its notes on failed tasks and dead
  actors to stdout; while the run lasts they go to stderr, and a Ray the run started is
  shut down before it returns, so none comes after (``--json`` prints only the summary);
* **the local engine's promises**: lines are read and written with its code
  (:mod:`rewardkit.scoring.rows`: ``read_lines``, ``row_problem``, ``scored_row``,
  ``render``; a line over ``limits.max_line_bytes`` is reported, never read whole), the
  output-path rules and the lock on ``--out`` are its own (:mod:`rewardkit.scoring.output`),
  checked before anything is scored, and the summary is accumulated in its
  :class:`~rewardkit.scoring.metrics.RunningMetrics`, shard by shard.

The output has the local scorer's format: each input row plus ``reward`` and
``components``; at the end ``OUT.partial`` becomes ``OUT`` and the manifest is removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rewardkit.config import RewardConfig
from rewardkit.execution.executor import Breaker
from rewardkit.execution.local import Outcome
from rewardkit.reward_set import RewardSet, ScoreResult
from rewardkit.scoring.manifest import Checkpoint, ResumeError, fingerprint, open_own
from rewardkit.scoring.metrics import RunningMetrics
from rewardkit.scoring.output import OutputLock, ScoringFileError, check_paths
from rewardkit.scoring.rows import render, scored_row
from rewardkit.scoring.shards import (
    Shard,
    checked_rows,
    input_format,
    parquet_reads,
    plan_shards,
    read_shard,
    read_units,
    row_key,
)
from rewardkit.trajectory import TURN_VALUES
from rewardkit.types import Sample, Score, Status

ProgressFn = Callable[[int, int], None]
#: latencies kept per component per shard for the summary's p50/p95
LATENCY_SAMPLE = 64
#: times Ray retries a shard whose actor died (a lost node) before the shard counts as
#: failed and is rescored piece by piece to find the row that kills its process
SHARD_RETRIES = 1
#: the report for a row on which the scoring process dies
KILLED = ("the scoring process died on this row (a reward that ends its process: "
          "os._exit, a segfault, an OOM kill); not scored")


# -- scoring one shard (Ray Data actor) -----------------------------------------------
def score_rows(rs: RewardSet, rows: list[dict[str, Any]], step: int
               ) -> tuple[bytes, ScoreResult]:
    """Scored output lines (the local scorer's format, :func:`scored_row` and
    :func:`render`: standard JSON, valid UTF-8) and the result."""
    result = rs.score([Sample.from_dict(r) for r in rows], step=step)
    lines = [render(scored_row(row, scored)) for row, scored in zip(rows, result, strict=True)]
    return b"".join(lines), result


class ShardScorer:
    """The Ray Data actor: one RewardSet, built once, scoring whole shards."""

    def __init__(self, config: RewardConfig, path: str, fmt: str, step: int) -> None:
        local = config.model_copy(update={"executor": "local"})
        self.rs = RewardSet(local)
        self.path = Path(path)
        self.fmt = fmt
        self.step = step
        self.max_bytes = config.limits.max_line_bytes

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"shard": [], "text": [], "rows": [], "bad": [],
                                     "latencies": []}
        for i in range(len(batch["shard"])):
            shard = Shard(**{k: int(batch[k][i]) for k in ("shard", "start", "end", "first",
                                                            "rows")})
            bad: list[tuple[int, str]] = []
            if "payload" in batch:  # parquet rows read by the reading stage (read_units)
                import pyarrow as pa

                records = pa.ipc.open_stream(batch["payload"][i]).read_all().to_pylist()
                numbered = checked_rows(records, shard, bad)
            else:
                numbered = read_shard(self.path, self.fmt, shard, bad, self.max_bytes)
            rows = [row for _, row in numbered]
            text, latencies = self.score(rows)
            out["shard"].append(shard.shard)
            out["text"].append(text)
            out["rows"].append(len(rows))
            out["bad"].append(json.dumps(bad))
            out["latencies"].append(json.dumps(latencies))
        return out

    def score(self, rows: list[dict[str, Any]]) -> tuple[bytes, dict[str, list[float]]]:
        """The scored lines of ``rows`` and a sample of each component's latencies (also
        called alone, on pieces of a shard that failed: :class:`_Rescue`)."""
        if not rows:
            return b"", {}
        text, result = score_rows(self.rs, rows, self.step)
        return text, {name: _sample(o.latencies) for name, o in result.outcomes.items()}


def _sample(vals: list[float]) -> list[float]:
    if len(vals) <= LATENCY_SAMPLE:
        return vals
    step = len(vals) / LATENCY_SAMPLE
    return [vals[int(i * step)] for i in range(LATENCY_SAMPLE)]


# -- the run (driver) -----------------------------------------------------------------
def score_with_ray(config: RewardConfig, src: Path, dst: Path, step: int = 0,
                   batch_size: int = 1024, resume: bool = False,
                   address: str | None = None, concurrency: int | None = None,
                   on_progress: ProgressFn | None = None) -> dict[str, Any]:
    """Score ``src`` (JSONL or parquet) into ``dst`` (JSONL) on Ray Data. The output-path
    rules (:func:`check_paths`) and the lock on ``dst`` are the local engine's, checked
    before anything is scored."""
    from rewardkit.execution.ray_cluster import import_ray

    ray = import_ray()
    fmt = input_format(src)
    check_paths(src, dst)
    for own in (dst.with_name(dst.name + ".partial"), dst.with_name(dst.name + ".progress")):
        if own.exists() and os.path.samefile(src, own):
            raise ScoringFileError(f"{src} is named like this run's own {own.name}; "
                                   "rename it or write elsewhere")
    with OutputLock(dst), contextlib.redirect_stdout(sys.stderr):
        return _score_locked(ray, config, src, dst, fmt, step, batch_size, resume, address,
                             concurrency, on_progress)


def _score_locked(ray: Any, config: RewardConfig, src: Path, dst: Path, fmt: str, step: int,
                  batch_size: int, resume: bool, address: str | None,
                  concurrency: int | None, on_progress: ProgressFn | None) -> dict[str, Any]:
    """The run, while this process holds the lock on ``dst``: the committed shards
    loaded (a resume), the rest scored and committed one by one, then the output
    completed."""
    partial = dst.with_name(dst.name + ".partial")
    manifest = dst.with_name(dst.name + ".progress")
    expected = fingerprint(config, src, batch_size, step)
    if os.path.lexists(manifest) and not resume:
        raise ResumeError(f"{manifest} shows an unfinished earlier run: add --resume to "
                          f"continue it, or remove {manifest.name} and {partial.name}")
    fresh = not os.path.lexists(manifest)
    with contextlib.ExitStack() as files:
        checkpoint = Checkpoint(files.enter_context(open_own(manifest, fresh)),
                                files.enter_context(open_own(partial, fresh)),
                                manifest, partial)
        checkpoint.begin(expected, fresh)
        shards = plan_shards(src, fmt, batch_size, config.limits.max_line_bytes)
        rows_total = sum(s.rows for s in shards)
        rows_done = sum(e["rows"] + len(e["bad"]) for e in checkpoint.done.values())
        if on_progress:
            on_progress(rows_done, rows_total)

        def commit(shard: int, text: bytes, rows: int, bad: list[Any],
                   latencies: dict[str, list[float]]) -> None:
            nonlocal rows_done
            checkpoint.commit(shard, text, rows, bad, latencies)
            rows_done += rows + len(bad)
            if on_progress:
                on_progress(rows_done, rows_total)

        pending = [s for s in shards if s.shard not in checkpoint.done]
        if pending:
            if not ray.is_initialized():
                # the auth mode decided, not Ray's guess
                from rewardkit.execution.ray_cluster import init_ray

                init_ray(address)
                files.callback(ray.shutdown)  # its notes come before the summary
            ds = _pipeline(ray, config, src, fmt, step, pending, concurrency)
            _score_pending(ray, ds, _Rescue(ray, config, src, fmt, step), pending, commit,
                           checkpoint)
        return _finish(config, dst, shards, checkpoint.done, step)


def _pipeline(ray: Any, config: RewardConfig, src: Path, fmt: str, step: int,
              pending: list[Shard], concurrency: int | None) -> Any:
    """The Ray Data dataset that scores ``pending`` in order, one shard a block: a
    reading stage for parquet (each row group read once), then the scoring actors."""
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    # read when the dataset is made: a failed shard is rescued (not the end of the run),
    # and every shard is a block of its own, so the scoring actors share the shards one
    # read of a parquet row group gives (else they are one block)
    saved = ctx.max_errored_blocks, ctx.target_max_block_size
    ctx.max_errored_blocks, ctx.target_max_block_size = -1, 1
    size = min(len(pending), concurrency or max(1, int(ray.cluster_resources().get("CPU", 1))))
    if fmt == "parquet":  # each row group read once, by a reading stage
        units = parquet_reads(src, pending)
        ds = ray.data.from_items([{"unit": json.dumps([asdict(s) for s in unit])}
                                  for unit in units], override_num_blocks=len(units))
        # no CPU asked: the scoring actors may hold them all; at most `size` at once
        ds = ds.map_batches(read_units, batch_size=1, num_cpus=0,
                            concurrency=min(len(units), size),
                            fn_kwargs={"path": str(src)})
    else:
        ds = ray.data.from_items([asdict(s) for s in pending],
                                 override_num_blocks=len(pending))
    # an actor that dies is restarted, and its shard retried SHARD_RETRIES times (Ray
    # Data's default retries it forever: a row that kills its process hung the run);
    # a shard that still fails is skipped by the pipeline and rescued. The retries are
    # actor options, given as ray_remote_args: Ray 2.60 has no named parameter for them
    # (it warns that the kwargs go in 2.64)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
        ds = ds.map_batches(ShardScorer, batch_size=1, concurrency=size, num_cpus=1,
                            max_restarts=-1, max_task_retries=SHARD_RETRIES,
                            fn_constructor_kwargs={"config": config, "path": str(src),
                                                   "fmt": fmt, "step": step})
    ctx.max_errored_blocks, ctx.target_max_block_size = saved
    return ds


def _score_pending(ray: Any, ds: Any, rescue: _Rescue, pending: list[Shard],
                   commit: Callable[..., None], checkpoint: Checkpoint) -> None:
    """Commit each shard of ``pending`` in input order as the pipeline gives it; a
    shard the pipeline skipped (it failed) is scored by ``rescue``."""
    waiting = iter(pending)  # the shards in input order: those skipped failed
    try:
        for row in ds.iter_rows():
            number = int(row["shard"])
            for shard in waiting:
                if shard.shard == number:
                    break
                commit(shard.shard, *rescue.shard(shard))
            commit(number, bytes(row["text"]), int(row["rows"]), json.loads(row["bad"]),
                   json.loads(row["latencies"]))
            rescue.breaker.answered()
        for shard in waiting:
            commit(shard.shard, *rescue.shard(shard))
    except _GivenUp as exc:
        raise ResumeError(
            f"scoring stopped: {exc}; the {len(checkpoint.done)} shards committed are kept "
            f"in {checkpoint.partial.name}: fix the reward and run again with --resume"
        ) from None
    except ray.exceptions.RayError as exc:  # not a row's fault: the actors cannot run
        first = str(exc).strip().splitlines()
        raise ResumeError(
            f"scoring on Ray failed: {type(exc).__name__}: {first[0] if first else ''}; "
            f"the {len(checkpoint.done)} shards committed are kept in "
            f"{checkpoint.partial.name}: fix the cause and run again with --resume") from exc
    finally:
        rescue.close()


def _finish(config: RewardConfig, dst: Path, shards: list[Shard],
            done: dict[int, dict[str, Any]], step: int) -> dict[str, Any]:
    """Check every shard is committed, rebuild the summary from the output, and make
    ``OUT.partial`` the output (the manifest removed)."""
    partial = dst.with_name(dst.name + ".partial")
    manifest = dst.with_name(dst.name + ".progress")
    missing = [s.shard for s in shards if s.shard not in done]
    if missing:
        raise ResumeError(f"shards {missing[:5]} were not scored; run again with --resume")
    bad = [tuple(b) for s in shards for b in done[s.shard]["bad"]]
    summary = summarize(config, partial, list(done.values()), step)  # in written order
    partial.replace(dst)
    manifest.unlink()
    result = summary.metrics()
    return {"out": str(dst), "step": step, "scored": summary.samples, "bad_lines": bad,
            "skipped_lines": len(bad), "shards": len(shards),
            "components": result["components"], "total": result["total"]}


class _GivenUp(Exception):
    """The rescue stopped: the scoring process died on nearly every try (the message)."""


class _Rescue:
    """Scores a shard that failed on the pipeline (its actor died on every try) in pieces,
    each in a scoring actor of its own, to find the rows on which the process dies: the
    shard's groups are halved until a piece scores or is one group; a group that fails
    is scored row by row, and its rows that do not kill the process are then scored
    together (the killing rows left out, as a malformed line is). A row that kills the
    process alone is reported with its line (row) number; everything else is scored.

    Every try that loses its actor counts in :attr:`breaker` (with the pipeline's: the
    driver counts the shards it scored); once it trips, :class:`_GivenUp`."""

    def __init__(self, ray: Any, config: RewardConfig, src: Path, fmt: str,
                 step: int) -> None:
        self.ray = ray
        self.config = config
        self.src = src
        self.fmt = fmt
        self.step = step
        self.actor: Any = None
        self.actors_lost = 0
        self.breaker = Breaker("tries")

    def shard(self, shard: Shard) -> tuple[bytes, int, list[Any], dict[str, list[float]]]:
        """(scored lines, rows scored, bad rows, latencies) of ``shard``."""
        for _ in range(SHARD_RETRIES + 1):  # the pipeline's tries, each an actor lost
            self._lost(f"shard {shard.shard} in the pipeline")
        bad: list[tuple[int, str]] = []
        rows = read_shard(self.src, self.fmt, shard, bad, self.config.limits.max_line_bytes)
        groups: list[list[tuple[int, dict[str, Any]]]] = []
        for numbered in rows:
            if groups and row_key(groups[-1][-1][1]) == row_key(numbered[1]):
                groups[-1].append(numbered)
            else:
                groups.append([numbered])
        pieces = self._groups(groups, bad)
        latencies: dict[str, list[float]] = {}
        for _, lat in pieces:
            for name, values in lat.items():
                latencies.setdefault(name, []).extend(values)
        killed = sum(1 for _, why in bad if why == KILLED)
        return (b"".join(text for text, _ in pieces), len(rows) - killed,
                [list(b) for b in sorted(bad)],
                {name: _sample(v) for name, v in latencies.items()})

    def _groups(self, groups: list[list[tuple[int, dict[str, Any]]]],
                bad: list[tuple[int, str]]) -> list[tuple[bytes, dict[str, list[float]]]]:
        if not groups:
            return []
        scored = self._try([row for group in groups for _, row in group])
        if scored is not None:
            return [scored]
        if len(groups) > 1:
            half = len(groups) // 2
            return self._groups(groups[:half], bad) + self._groups(groups[half:], bad)
        if len(groups[0]) == 1:
            bad.append((groups[0][0][0], KILLED))
            return []
        survivors = []
        for line_no, row in groups[0]:
            if self._try([row]) is None:
                bad.append((line_no, KILLED))
            else:
                survivors.append((line_no, row))
        if not survivors:
            return []
        scored = self._try([row for _, row in survivors])
        if scored is None:  # only together do they kill it: the group is not scored
            bad.extend((line_no, KILLED) for line_no, _ in survivors)
            return []
        return [scored]

    def _try(self, rows: list[dict[str, Any]]) -> tuple[bytes, dict[str, list[float]]] | None:
        """``rows`` scored in the rescue actor, or None when its process died (a fresh
        actor is started for the next try)."""
        if self.actor is None:
            # no CPU asked: the pipeline's actors may hold them all while it waits
            remote = self.ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)
            self.actor = remote(ShardScorer).remote(self.config, str(self.src), self.fmt,
                                                    self.step)
        try:
            text, latencies = self.ray.get(self.actor.score.remote(rows))
        except self.ray.exceptions.RayActorError:
            self.actor = None
            self.actors_lost += 1
            self._lost(f"a piece of {len(rows)} row(s) in a rescue actor")
            return None
        self.breaker.answered()
        return bytes(text), latencies

    def _lost(self, what: str) -> None:
        """A try lost its actor (``what`` it scored); :class:`_GivenUp` once the
        breaker trips."""
        self.breaker.failed()
        if self.breaker.tripped:
            b = self.breaker
            raise _GivenUp(f"the scoring process died on {b.failures} of the "
                           f"{b.failures + b.answers} tries in this run (last: {what}): a "
                           "reward that ends its process on nearly every row")

    def close(self) -> None:
        if self.actor is not None:
            self.ray.kill(self.actor)
            self.actor = None


def summarize(config: RewardConfig, scored: Path, entries: list[dict[str, Any]],
              step: int) -> RunningMetrics:
    """The summary of a scored file, rebuilt from it shard by shard (so a resumed run's
    summary covers every row, not only those of its last part) in the local engine's
    :class:`RunningMetrics`: memory is one shard's rows, whatever the file's length.
    ``entries`` are the shards in the order their lines were written."""
    names = list(config.rewards)
    weights = RewardSet(config.model_copy(update={"executor": "local"})).weights(step)
    metrics = RunningMetrics(step)
    rows = _scored_rows(scored)
    for e in entries:
        outcomes = {name: Outcome(0) for name in names}
        totals: list[float | None] = []
        for i in range(e["rows"]):
            row = next(rows)
            totals.append(row.get("reward"))
            comps = row.get("components", {})
            for name in names:
                c = comps.get(name, {})
                value = c.get("value")
                status = Status(c.get("status", "ok"))
                outcomes[name].values.append(value)
                turns = c.get(TURN_VALUES)  # a per-turn reward's, for the summary's turns
                details = {TURN_VALUES: turns} if isinstance(turns, list) else None
                if status is not Status.OK or c.get("reason") or details:
                    outcomes[name].scores[i] = Score(value, status, c.get("reason", ""),
                                                     details)
        for name, lat in e.get("latencies", {}).items():
            if name in outcomes:
                outcomes[name].latencies.extend(lat)
        metrics.add(ScoreResult(step, [], totals, outcomes, weights, config.aggregate,
                                turn_metrics=config.turn_metrics))
    return metrics


def _scored_rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("r", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
