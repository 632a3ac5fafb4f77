"""Reward curves of a run: per-component mean reward by step, as CSV and PNG.

A :class:`RewardCurves` collects the ``rewards/<component>/mean`` values a trainer logs
(and the total ``reward``), then writes ``reward_curves.csv`` (one row per step) and
``reward_curves.png`` (one line per component) into the run's output folder.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any


class RewardCurves:
    """Per-step reward means, keyed by column name (``reward`` = the weighted total)."""

    def __init__(self, components: list[str]) -> None:
        self.components = components
        self.rows: list[dict[str, float]] = []

    @property
    def columns(self) -> list[str]:
        return ["step", "reward", *self.components]

    def add(self, step: int, logs: dict[str, Any]) -> dict[str, float] | None:
        """Record one trainer log entry; returns the row when it held reward values."""
        row: dict[str, float] = {"step": float(step)}
        # TRL logs None for a mean with no value in the batch (a component that skipped
        # or failed every sample): no point on that curve, not a crash of the run
        if logs.get("reward") is not None:
            row["reward"] = float(logs["reward"])
        for name in self.components:
            key = f"rewards/{name}/mean"
            if logs.get(key) is not None:
                row[name] = float(logs[key])
        if len(row) == 1:
            return None
        self.rows.append(row)
        return row

    def mean(self, column: str, first: bool, window: int = 5) -> float:
        """Mean of ``column`` over the first (or last) ``window`` recorded steps."""
        vals = [r[column] for r in self.rows if column in r and not math.isnan(r[column])]
        chosen = vals[:window] if first else vals[-window:]
        return sum(chosen) / len(chosen) if chosen else math.nan

    def write(self, out_dir: Path) -> tuple[Path, Path | None]:
        """Write the CSV and (when matplotlib is installed) the PNG; return their paths."""
        out_dir.mkdir(parents=True, exist_ok=True)
        csv_path = out_dir / "reward_curves.csv"
        with csv_path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=self.columns)
            writer.writeheader()
            for row in self.rows:
                writer.writerow({k: (int(v) if k == "step" else v) for k, v in row.items()})
        return csv_path, self._plot(out_dir / "reward_curves.png")

    def _plot(self, path: Path) -> Path | None:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return None
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for column in ["reward", *self.components]:
            points = [(r["step"], r[column]) for r in self.rows if column in r]
            if points:
                xs, ys = zip(*points, strict=True)
                style: dict[str, Any] = {}
                if column == "reward":
                    style = {"linewidth": 2.5, "color": "black"}
                label = "total (weighted)" if column == "reward" else column
                ax.plot(xs, ys, label=label, **style)
        ax.set_xlabel("step")
        ax.set_ylabel("mean reward")
        ax.set_title("rewardkit: reward per component")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path
