"""``rewardkit diff``: two rewards on the same rows (two configs scored here, or two
files written by ``rewardkit score``), compared row by row and group by group.

A row's verdict under a component is its value and status; two verdicts differ when the
status differs or the values differ by more than :data:`SAME`. Per component the mean and
variance of the ok values under A and B are accumulated in constant memory, and so are
the graded totals' (the number GRPO standardises). The effect on
GRPO: within each group (:func:`rewardkit.types.group_key`, the one definition) each
row's advantage is its total standardised over the group's graded totals, as
``normalize_then_sum`` standardises a component (:func:`advantages`, the same
:data:`~rewardkit.reward_set.NORMALIZE_EPS`); a row whose advantage changes sign (or
becomes zero, or stops being graded) learns the other way under B.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rewardkit.reward_set import NORMALIZE_EPS, RewardSet, ScoreResult, group_indices
from rewardkit.scoring.jsonl import score_batches
from rewardkit.scoring.rows import render
from rewardkit.types import Sample, group_key

#: values closer than this are the same verdict (float noise)
SAME = 1e-9
#: how many differing rows the report keeps for the table (all go to ``--out``)
KEEP = 20

#: one row's scores on one side: (total, {component: (value, status, reason)})
Side = tuple[float | None, dict[str, tuple[float | None, str, str]]]


def advantages(totals: Sequence[float | None]) -> list[float | None]:
    """GRPO advantages of one group: each graded total minus the group's mean, over the
    group's standard deviation (+ NORMALIZE_EPS, so an all-equal group gives 0); None for
    a row not graded.

    >>> [round(a, 3) for a in advantages([1.0, 0.0, 0.0, 1.0])]
    [1.0, -1.0, -1.0, 1.0]
    """
    graded = [t for t in totals if t is not None]
    if not graded:
        return [None] * len(totals)
    mean = math.fsum(graded) / len(graded)
    std = math.sqrt(math.fsum((t - mean) ** 2 for t in graded) / len(graded))
    return [None if t is None else (t - mean) / (std + NORMALIZE_EPS) for t in totals]


def _sign(value: float | None) -> int | None:
    if value is None:
        return None
    return 0 if abs(value) < 1e-6 else (1 if value > 0 else -1)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= SAME or (math.isnan(a) and math.isnan(b))


@dataclass
class _Running:
    """Count, mean and variance of a stream of values (Welford)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def add(self, value: float) -> None:
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (value - self.mean)

    def report(self) -> dict[str, Any]:
        return {"count": self.n, "mean": self.mean if self.n else None,
                "variance": self.m2 / self.n if self.n else None}


@dataclass
class Comparison:
    """The differences between A and B, built one row (:meth:`add_row`) and one group
    (:meth:`add_group`) at a time."""

    out: IO[bytes] | None = None
    rows: int = 0
    differing: int = 0
    kept: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, tuple[_Running, _Running]] = field(default_factory=dict)
    #: the graded totals under A and B (a null total, a failed grading, left out)
    total_stats: tuple[_Running, _Running] = field(
        default_factory=lambda: (_Running(), _Running()))
    per_component: dict[str, int] = field(default_factory=dict)
    groups: int = 0
    groups_changed: int = 0
    flips: int = 0
    kept_flips: list[dict[str, Any]] = field(default_factory=list)

    def add_row(self, line: int, row: dict[str, Any], a: Side, b: Side) -> None:
        """Compare one row's verdicts; a row that differs is kept (and written)."""
        self.rows += 1
        names = list(dict.fromkeys([*a[1], *b[1], "total"]))
        differ: list[str] = []
        for name in names:
            if name == "total":
                va, vb, sa, sb = a[0], b[0], "", ""
                for value, running in ((va, self.total_stats[0]), (vb, self.total_stats[1])):
                    if value is not None and math.isfinite(value):
                        running.add(value)
            else:
                va, sa, _ = a[1].get(name, (None, "absent", ""))
                vb, sb, _ = b[1].get(name, (None, "absent", ""))
                stat = self.stats.setdefault(name, (_Running(), _Running()))
                for value, status, running in ((va, sa, stat[0]), (vb, sb, stat[1])):
                    if status == "ok" and value is not None and math.isfinite(value):
                        running.add(value)
            if sa != sb or not _same(va, vb):
                differ.append(name)
                self.per_component[name] = self.per_component.get(name, 0) + 1
        if not differ:
            return
        self.differing += 1
        record = {"line": line, "differ": differ,
                  "a": {"reward": a[0], "components": _components(a)},
                  "b": {"reward": b[0], "components": _components(b)}}
        if len(self.kept) < KEEP:
            self.kept.append(record)
        if self.out is not None:
            self.out.write(render({**record, "prompt": row.get("prompt"),
                                   "completion": row.get("completion")}))

    def add_group(self, lines: Sequence[int], totals_a: Sequence[float | None],
                  totals_b: Sequence[float | None]) -> None:
        """One whole group's totals under A and B: its advantages and their sign flips."""
        self.groups += 1
        adv_a, adv_b = advantages(totals_a), advantages(totals_b)
        changed = False
        for line, x, y in zip(lines, adv_a, adv_b, strict=True):
            if not _same(None if x is None else round(x, 6), None if y is None else round(y, 6)):
                changed = True
            if _sign(x) != _sign(y):
                self.flips += 1
                if len(self.kept_flips) < KEEP:
                    self.kept_flips.append({"line": line, "advantage_a": _round(x),
                                            "advantage_b": _round(y)})
        self.groups_changed += changed

    @property
    def identical(self) -> bool:
        return self.differing == 0

    def report(self) -> dict[str, Any]:
        """The machine-readable comparison (``rewardkit diff --json``)."""
        components = {name: self._moments(name, ra, rb)
                      for name, (ra, rb) in self.stats.items()}
        return {"identical": self.identical, "rows": self.rows,
                "rows_differing": self.differing,
                "total_differing": self.per_component.get("total", 0),
                "components": components, "total": self._moments("total", *self.total_stats),
                "differing": self.kept,
                "grpo": {"groups": self.groups, "groups_with_changed_advantages":
                         self.groups_changed, "rows_advantage_sign_flipped": self.flips,
                         "flipped": self.kept_flips}}


    def _moments(self, name: str, ra: _Running, rb: _Running) -> dict[str, Any]:
        a, b = ra.report(), rb.report()
        return {"a": a, "b": b, "rows_differing": self.per_component.get(name, 0),
                "mean_delta": None if a["mean"] is None or b["mean"] is None
                else b["mean"] - a["mean"],
                "variance_delta": None if a["variance"] is None or b["variance"] is None
                else b["variance"] - a["variance"]}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _components(side: Side) -> dict[str, Any]:
    return {name: {"value": v, "status": s, "reason": r} for name, (v, s, r) in side[1].items()}


def side_of_scored_row(row: dict[str, Any], line: int, where: str) -> Side:
    """A row written by ``rewardkit score`` as a :data:`Side`; ValueError naming the line
    when it has no ``components``."""
    comps = row.get("components")
    if not isinstance(comps, dict):
        raise ValueError(f"{where}:{line}: no 'components' object: not a file written by "
                         "rewardkit score")
    if "total" in comps:
        raise ValueError(f"{where}:{line}: a component is named 'total', the name this report "
                         "gives the weighted total: rename the component")
    scores = {}
    for name, c in comps.items():
        c = c if isinstance(c, dict) else {}
        value = c.get("value")
        scores[name] = (float(value) if isinstance(value, int | float) else None,
                        str(c.get("status", "ok")), str(c.get("reason") or ""))
    total = row.get("reward")
    return (float(total) if isinstance(total, int | float) else None), scores


def same_row(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two scored rows are the same sample (prompt and completion)."""
    return json.dumps([a.get("prompt"), a.get("completion")], sort_keys=True, default=str) \
        == json.dumps([b.get("prompt"), b.get("completion")], sort_keys=True, default=str)


def _sides(result: ScoreResult) -> list[Side]:
    sides: list[Side] = []
    columns = [(name, out.values, out.scores) for name, out in result.outcomes.items()]
    for i, total in enumerate(result.totals):
        scores = {}
        for name, values, found in columns:
            score = found.get(i)
            scores[name] = (values[i], "ok", "") if score is None else (
                values[i], str(score.status), score.reason or "")
        sides.append((total, scores))
    return sides


def diff_configs(a: RewardSet, b: RewardSet, src: Path, step: int = 0,
                 batch_size: int = 1024, out: IO[bytes] | None = None
                 ) -> tuple[Comparison, dict[str, Any]]:
    """Score ``src`` under ``a`` and ``b`` (whole groups, batch by batch, with the engine
    of ``rewardkit score``) and compare; returns the comparison and A's scoring summary
    (malformed lines)."""
    comparison = Comparison(out=out)

    def consume(lines: list[int], rows: list[dict[str, Any]], samples: list[Sample],
                result: ScoreResult) -> None:
        side_a, side_b = _sides(result), _sides(b.score(samples, step=step))
        for line, row, x, y in zip(lines, rows, side_a, side_b, strict=True):
            comparison.add_row(line, row, x, y)
        for members in group_indices(samples):
            comparison.add_group([lines[i] for i in members],
                                 [side_a[i][0] for i in members],
                                 [side_b[i][0] for i in members])

    summary = score_batches(a, src, consume, step=step, batch_size=batch_size,
                            whole_groups=True)
    return comparison, summary


def diff_scored(path_a: Path, path_b: Path, out: IO[bytes] | None = None) -> Comparison:
    """Compare two files written by ``rewardkit score`` on the same rows, line by line
    (blank lines skipped). Each group's totals are held until the end (three numbers per
    row) so that its rows may be anywhere in the files. ValueError names the line where
    the files stop matching."""
    comparison = Comparison(out=out)
    groups: dict[Any, tuple[list[int], list[float | None], list[float | None]]] = {}
    with path_a.open("rb") as fa, path_b.open("rb") as fb:
        line = 0
        for raw_a, raw_b in itertools.zip_longest(fa, fb):
            line += 1
            if raw_a is None or raw_b is None:
                shorter = path_a if raw_a is None else path_b
                raise ValueError(f"{shorter} ends at line {line - 1}; the other file goes on: "
                                 "both must score the same rows")
            if not raw_a.strip() and not raw_b.strip():
                continue
            row_a, row_b = _load(raw_a, path_a, line), _load(raw_b, path_b, line)
            if not same_row(row_a, row_b):
                raise ValueError(f"line {line}: {path_a} and {path_b} hold different samples "
                                 "(prompt or completion): both must score the same rows")
            side_a = side_of_scored_row(row_a, line, str(path_a))
            side_b = side_of_scored_row(row_b, line, str(path_b))
            comparison.add_row(line, row_a, side_a, side_b)
            members = groups.setdefault(group_key(Sample.from_dict(row_a)), ([], [], []))
            members[0].append(line)
            members[1].append(side_a[0])
            members[2].append(side_b[0])
    for lines, totals_a, totals_b in groups.values():
        comparison.add_group(lines, totals_a, totals_b)
    return comparison


def _load(raw: bytes, path: Path, line: int) -> dict[str, Any]:
    try:
        row = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}:{line}: not JSON ({exc})") from None
    if not isinstance(row, dict):
        raise ValueError(f"{path}:{line}: expected a JSON object")
    return row
