"""``rewardkit calibrate``: a reward's verdicts against labels, per component and for the
total, per routed data source when the config routes (``when:``).

Rows are scored by the engine of ``rewardkit score`` (:func:`rewardkit.scoring.jsonl.
score_batches`: same batches, same whole groups, same malformed lines) and folded into
:class:`~rewardkit.measure.stats.Confusion` counts batch by batch, so memory stays flat in
the row count. A row is predicted positive when its value is at least ``threshold``; its
label is read from a column (:func:`read_label`). A failed grading (status ``error`` or
``timeout``, or a null total) is counted apart, never as a negative; a ``skipped`` score
(the reward does not apply) likewise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from rewardkit.hookspecs import UsageError
from rewardkit.measure.stats import Confusion
from rewardkit.reward_set import RewardSet, ScoreResult
from rewardkit.scoring.jsonl import ProgressFn, score_batches
from rewardkit.scoring.rows import render, scored_row
from rewardkit.types import Sample, Status

#: the key of the total in a report (beside the component names)
TOTAL = "total"
_TRUE = {"true", "yes", "1", "correct"}
_FALSE = {"false", "no", "0", "incorrect"}


def refuse_total_component(names: list[str], config: str) -> None:
    """A component named ``total`` would be read as the weighted total (the report's
    :data:`TOTAL` key): a :class:`~rewardkit.hookspecs.UsageError` naming the config."""
    if TOTAL in names:
        raise UsageError(f"{config}: a component is named {TOTAL!r}, the name this report "
                         "gives the weighted total: rename the component")


class LabelError(Exception):
    """A label that cannot be read (the message names the line and the column)."""


def read_label(value: Any, line_no: int, column: str,
               label_threshold: float | None = None) -> bool:
    """The label of one row: true/false, 0/1, "true"/"false" (also yes/no), or with
    ``label_threshold`` a gold score that is positive when at least the threshold.

    >>> read_label(1, 1, "correct"), read_label("false", 2, "correct")
    (True, False)
    >>> read_label(0.8, 3, "gold", label_threshold=0.5)
    True
    """
    where = f"line {line_no}: label column {column!r}"
    if value is None:
        raise LabelError(f"{where} is null (an unlabelled row): label every row or leave "
                         "the unlabelled ones out of the file")
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        try:
            value = float(text)
        except ValueError:
            raise LabelError(f"{where} is {value!r}: expected true/false, 0/1 or a gold "
                             "score (with --label-threshold)") from None
    if isinstance(value, int | float) and math.isfinite(value):
        if label_threshold is not None:
            return float(value) >= label_threshold
        if value in (0, 1):
            return bool(value)
        raise LabelError(f"{where} is {value!r}, not 0/1: for a gold score give "
                         "--label-threshold (a row is positive at or above it)")
    raise LabelError(f"{where} is {value!r}: expected true/false, 0/1 or a gold score "
                     "(with --label-threshold)")


def route_keys(rs: RewardSet) -> list[str]:
    """The metadata keys the config routes on (every component's ``when:``), in order."""
    keys: list[str] = []
    for component in rs.components.values():
        for key in component.when or {}:
            if key not in keys:
                keys.append(key)
    return keys


def source_of(row: dict[str, Any], keys: list[str]) -> str:
    """A row's routed data source, e.g. ``task=math``."""
    return ",".join(f"{key}={row.get(key)}" for key in keys)


class Calibration:
    """The confusion counts of every component and of the total, overall and per
    routed data source, built one scored batch at a time (:meth:`add`)."""

    def __init__(self, names: list[str], label: str, threshold: float,
                 label_threshold: float | None, sources: list[str],
                 disagreements: IO[bytes] | None = None) -> None:
        self.names = [*names, TOTAL]
        self.label = label
        self.threshold = threshold
        self.label_threshold = label_threshold
        self.sources = sources
        self.overall = {name: Confusion() for name in self.names}
        self.by_source: dict[str, dict[str, Confusion]] = {}
        self.disagreements = disagreements
        self.disagreeing = 0
        self.rows = 0
        self.positives = 0

    def add(self, line_nos: list[int], rows: list[dict[str, Any]], samples: list[Sample],
            result: ScoreResult) -> None:
        """Fold one scored batch in (the :data:`~rewardkit.scoring.jsonl.Consumer` of
        :func:`~rewardkit.scoring.jsonl.score_batches`)."""
        for line_no, row in zip(line_nos, rows, strict=True):
            if self.label not in row:
                raise LabelError(f"line {line_no} has no label column {self.label!r} (its "
                                 f"columns: {', '.join(sorted(row))}): name it with --label")
        labels = [read_label(row[self.label], line_no, self.label, self.label_threshold)
                  for line_no, row in zip(line_nos, rows, strict=True)]
        columns: list[tuple[str, list[float | None], dict[int, Any]]] = [
            (name, out.values, out.scores) for name, out in result.outcomes.items()]
        columns.append((TOTAL, result.totals, {}))
        for i, label in enumerate(labels):
            self.rows += 1
            self.positives += label
            counts = [self.overall]
            if self.sources:
                source = source_of(rows[i], self.sources)
                counts.append(self.by_source.setdefault(
                    source, {name: Confusion() for name in self.names}))
            wrong: list[str] = []
            for name, values, scores in columns:
                value = values[i]
                status = scores[i].status if i in scores else Status.OK
                for table in counts:
                    confusion = table[name]
                    if status == Status.SKIPPED:
                        confusion.skipped += 1
                    elif value is None or status != Status.OK or not math.isfinite(value):
                        confusion.failed += 1
                    elif not confusion.add(value, label, self.threshold) and table is counts[0]:
                        wrong.append(name)
            if wrong and self.disagreements is not None:
                self.disagreeing += 1
                line = scored_row(rows[i], result[i])
                line["line"] = line_nos[i]
                line["disagree"] = wrong
                self.disagreements.write(render(line))
            elif wrong:
                self.disagreeing += 1

    def report(self) -> dict[str, Any]:
        """One object keyed by component name (and ``total``), each with the keys of
        :meth:`Confusion.report`, plus ``threshold`` and, when the config routes,
        ``by_source`` (the same keys per data source)."""
        report: dict[str, Any] = {}
        for name in self.names:
            entry = {"threshold": self.threshold, **self.overall[name].report()}
            if self.sources:
                entry["by_source"] = {source: table[name].report()
                                      for source, table in sorted(self.by_source.items())}
            report[name] = entry
        return report


def calibrate_jsonl(rs: RewardSet, src: Path, label: str, threshold: float = 0.5,
                    label_threshold: float | None = None, step: int = 0,
                    batch_size: int = 1024, disagreements: IO[bytes] | None = None,
                    on_progress: ProgressFn | None = None
                    ) -> tuple[Calibration, dict[str, Any]]:
    """Score ``src`` with ``rs`` and measure every component against the ``label``
    column; returns the calibration and the scoring summary (malformed lines, counts)."""
    calibration = Calibration(rs.names, label, threshold, label_threshold, route_keys(rs),
                              disagreements)
    consume: Callable[..., None] = calibration.add
    summary = score_batches(rs, src, consume, step=step, batch_size=batch_size,
                            on_progress=on_progress)
    return calibration, summary
