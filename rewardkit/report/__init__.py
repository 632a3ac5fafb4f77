"""``rewardkit report``: an offline HTML page showing what the rewards of a run did.

>>> import json, pathlib, tempfile
>>> from rewardkit.report import write_report
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> row = {"prompt": "2+2?", "completion": "4", "reward": 1.0,
...        "components": {"number": {"value": 1.0, "status": "ok"}}}
>>> _ = (folder / "scored.jsonl").write_text(json.dumps(row), encoding="utf-8")
>>> write_report(folder / "scored.jsonl", folder / "report.html").samples
1

Input: the JSONL that ``rewardkit score`` writes, or the folder of a ``rewardkit train``
run (its ``scored_samples.jsonl``, ``reward_curves.csv`` and ``rewards.yaml``).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rewardkit.config.models import TURN_METRICS
from rewardkit.report.analysis import (
    ReportInputError,
    RunSummary,
    StepCoverage,
    read_scored,
    summarise,
)
from rewardkit.report.hacking import ComponentRoles
from rewardkit.report.monitor import monitor_run
from rewardkit.report.page import WeightsOverSteps, render

__all__ = ["ReportInputError", "RunSummary", "build_report", "read_curves", "write_report"]

#: what a training run leaves in its output folder for the report
RUN_SAMPLES = "scored_samples.jsonl"
RUN_CURVES = "reward_curves.csv"
RUN_CONFIG = "rewards.yaml"


def read_curves(path: str | Path) -> list[dict[str, float]]:
    """Rows of a ``reward_curves.csv`` (step, reward, one column per component)."""
    rows: list[dict[str, float]] = []
    with Path(path).open(newline="", encoding="utf-8") as fh:
        for raw in csv.DictReader(fh):
            row: dict[str, float] = {}
            for key, text in raw.items():
                if key is None or text in (None, ""):
                    continue
                try:
                    row[key] = float(text)
                except ValueError:
                    continue
            if "step" in row:
                rows.append(row)
    return rows


def build_report(rows: Sequence[Mapping[str, Any]], *, title: str = "rewardkit report",
                 source: str = "", reward_set: Any = None, steps: int | None = None,
                 curves: Sequence[Mapping[str, float]] | None = None,
                 bad_lines: Sequence[tuple[int, str]] = (),
                 summary: RunSummary | None = None) -> str:
    """The report page for scored ``rows``.

    ``reward_set`` (a :class:`~rewardkit.RewardSet`) adds the weights over the steps
    (to ``steps``, the run's last step, or the schedule's end if later) with stage
    switches, names each component's reward and tells the hack monitor which components
    train and which audit; ``curves`` (per-step means, as ``reward_curves.csv`` holds
    them) adds the reward curves of a training run. The page says which training steps
    the rows come from, and warns when they stop well before the run's last step
    (``steps``, else the curves' last step).
    """
    if summary is None:
        summary = summarise(rows, bad_lines, _turn_metrics(reward_set))
    rewards = ({name: c.config.reward for name, c in reward_set.components.items()}
               if reward_set is not None else {})
    roles = ComponentRoles.guess(list(summary.components), rewards)
    weights = None
    curve_steps = [int(r["step"]) for r in curves or () if math.isfinite(r.get("step", math.nan))]
    run_end = steps if steps is not None else (max(curve_steps) if curve_steps else None)
    coverage = StepCoverage.of(rows, run_end)
    if reward_set is not None:
        last = steps
        if last is None:
            seen = curve_steps + [int(r["step"]) for r in rows if isinstance(r.get("step"), int)]
            last = int(max(seen)) if seen else 0
        weights = WeightsOverSteps.from_reward_set(
            reward_set, WeightsOverSteps.chart_end(reward_set, last))
    monitor = monitor_run(rows, curves, reward_set)
    return render(rows, summary, title=title, source=source, roles=roles, weights=weights,
                  curves=list(curves) if curves else None, monitor=monitor, coverage=coverage)


def _turn_metrics(reward_set: Any) -> int:
    """The config's ``turn_metrics`` (the default without a config)."""
    return reward_set.config.turn_metrics if reward_set is not None else TURN_METRICS


def write_report(src: str | Path, out: str | Path, *, config: str | Path | None = None,
                 steps: int | None = None, curves: str | Path | None = None,
                 title: str | None = None) -> RunSummary:
    """Read a scored JSONL file (or a training run's folder) and write the HTML page."""
    from rewardkit.reward_set import RewardSet

    src = Path(src)
    samples = src
    if src.is_dir():
        samples = src / RUN_SAMPLES
        if curves is None and (src / RUN_CURVES).is_file():
            curves = src / RUN_CURVES
        if config is None and (src / RUN_CONFIG).is_file():
            config = src / RUN_CONFIG
        if not samples.is_file():
            raise ReportInputError(f"{src}: no {RUN_SAMPLES} (a `rewardkit train` run folder "
                                   "holds one)")
    rows, bad = read_scored(samples)
    reward_set = RewardSet.from_file(config) if config is not None else None
    curve_rows = read_curves(curves) if curves is not None else None
    summary = summarise(rows, bad, _turn_metrics(reward_set))
    page = build_report(rows, title=title or f"rewardkit report: {src.name}",
                        source=str(src), reward_set=reward_set, steps=steps,
                        curves=curve_rows, summary=summary)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return summary
