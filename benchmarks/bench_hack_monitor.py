"""False alarms and detection of the hack monitor's trend flag, on simulated runs.

Each run has 200 steps: the trained component's mean rises from 0 to 1 over 100 steps
(noise sd 0.05), the audit sits around 0.5 with noise of sd ``SD`` that is independent
from step to step or wanders (AR(1) with coefficient ``PHI``). Without a drop, any flag
is a false alarm (200 runs); with a drop (-0.3 over 100 steps, -0.5 over 30 steps), a
flag is a catch (100 runs), and its start step says how late.

    python benchmarks/bench_hack_monitor.py                  # the monitor as shipped
    python benchmarks/bench_hack_monitor.py --window 20 --uncorrected   # for comparison

The figures in docs/report.md come from this script (docs/records/hack-monitor-sim.txt).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

from rewardkit.report import monitor
from rewardkit.report.monitor import HackFlag, HackMonitor, Trend, mann_kendall_z

NOISE = ((0.05, 0.0), (0.1, 0.0), (0.1, 0.5), (0.1, 0.8))
DROPS = ((0.3, 100), (0.5, 30))


def run(seed: int, sd: float, phi: float, drop: float, over: int = 100) -> list[HackFlag]:
    rng = random.Random(seed)
    watched = HackMonitor(audits=["audit"])
    wander = 0.0
    for step in range(200):
        wander = phi * wander + rng.gauss(0, sd)
        audit = 0.5 - drop * min(1.0, step / over) + wander
        trained = min(1.0, step / 100) + rng.gauss(0, 0.05)
        watched.step(step, {"trained": trained, "audit": audit}, [])
    return watched.flags


def _uncorrected(xs: Sequence[float], ys: Sequence[float]) -> Trend:
    return Trend(mann_kendall_z(ys), monitor.theil_sen_change(xs, ys), int(xs[0]), int(xs[-1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--window", type=int, default=monitor.TREND_WINDOW)
    parser.add_argument("--uncorrected", action="store_true",
                        help="plain Mann-Kendall z (no autocorrelation correction)")
    args = parser.parse_args()
    monitor.TREND_WINDOW = args.window
    if args.uncorrected:
        Trend.of = staticmethod(_uncorrected)  # type: ignore[assignment]
    print(f"window {args.window}, {'uncorrected' if args.uncorrected else 'corrected'} z")
    for sd, phi in NOISE:
        alarms = sum(bool(run(s, sd, phi, 0.0)) for s in range(200))
        cells = []
        for drop, over in DROPS:
            starts = sorted(f[0].since for f in (run(s, sd, phi, drop, over)
                                                 for s in range(100)) if f)
            median = starts[len(starts) // 2] if starts else "-"
            cells.append(f"-{drop} over {over} steps: {len(starts)}/100, start {median}")
        print(f"noise sd {sd}, AR {phi}: false alarms {alarms}/200; " + "; ".join(cells))


if __name__ == "__main__":
    main()
