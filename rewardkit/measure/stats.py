"""The statistics of a verifier measured against labels: Wilson score intervals,
confusion counts at a threshold and, from a histogram of values by label, the ROC AUC
and the threshold that maximises F1. Everything here holds counts, never rows, so
memory stays flat in the number of rows."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: z for a two-sided 95% interval
Z95 = 1.959963984540054
#: values are binned to this many decimals for the AUC and the best threshold, so the
#: histogram's size is bounded by the reward's range, never by the row count
VALUE_DECIMALS = 4


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes / n``; None when ``n`` is 0.

    >>> [round(x, 3) for x in wilson(8, 10)]
    [0.49, 0.943]
    """
    if n <= 0:
        return None
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # exact ends at 0 and n successes (float noise would print 0 as 6.9e-18)
    return (0.0 if successes <= 0 else max(0.0, centre - half),
            1.0 if successes >= n else min(1.0, centre + half))


def _rate(successes: float, n: float) -> dict[str, Any]:
    interval = wilson(successes, n)
    return {"value": successes / n if n else None,
            "ci95": None if interval is None else [round(interval[0], 6),
                                                   round(interval[1], 6)]}


@dataclass
class Confusion:
    """Counts of predictions (value >= threshold) against labels, plus the rows not
    judged: ``failed`` (status error / timeout: never a negative), ``skipped`` (the
    reward does not apply to the row, e.g. routed elsewhere)."""

    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    failed: int = 0
    skipped: int = 0
    #: value (rounded to VALUE_DECIMALS) -> [positives, negatives] among graded rows
    histogram: Counter[float] = field(default_factory=Counter)
    negatives_at: Counter[float] = field(default_factory=Counter)

    def add(self, value: float, label: bool, threshold: float) -> bool:
        """Count one graded row; returns whether the prediction agrees with the label."""
        predicted = value >= threshold
        if predicted and label:
            self.tp += 1
        elif predicted:
            self.fp += 1
        elif label:
            self.fn += 1
        else:
            self.tn += 1
        key = round(value, VALUE_DECIMALS)
        if label:
            self.histogram[key] += 1
        else:
            self.negatives_at[key] += 1
        return predicted == label

    def report(self) -> dict[str, Any]:
        """The documented keys of one component (``rewardkit calibrate --json``)."""
        tp, fp, tn, fn = self.tp, self.fp, self.tn, self.fn
        graded = tp + fp + tn + fn
        values = set(self.histogram) | set(self.negatives_at)
        auc, best = roc_auc(self.histogram, self.negatives_at), best_f1_threshold(
            self.histogram, self.negatives_at)
        return {
            "tp": tp, "fp": fp, "tn": tn, "fn": fn, "graded": graded,
            "failed": self.failed, "skipped": self.skipped,
            "precision": _rate(tp, tp + fp),
            "recall": _rate(tp, tp + fn),
            "false_positive_rate": _rate(fp, fp + tn),
            "accuracy": _rate(tp + tn, graded),
            # F1 = tp / (tp + (fp + fn) / 2): its interval is that ratio's Wilson interval
            "f1": _rate(tp, tp + (fp + fn) / 2),
            "continuous": not values <= {0.0, 1.0},
            "roc_auc": auc,
            "best_f1_threshold": best,
        }


def roc_auc(positives: Counter[float], negatives: Counter[float]) -> float | None:
    """The area under the ROC curve (ties count half): the chance that a random positive
    row scores above a random negative one; None without both classes."""
    n_pos, n_neg = sum(positives.values()), sum(negatives.values())
    if not n_pos or not n_neg:
        return None
    below = 0  # negatives seen with a lower value
    area = 0.0
    for value in sorted(set(positives) | set(negatives)):
        pos, neg = positives.get(value, 0), negatives.get(value, 0)
        area += pos * (below + neg / 2)
        below += neg
    return round(area / (n_pos * n_neg), 6)


def best_f1_threshold(positives: Counter[float], negatives: Counter[float]
                      ) -> dict[str, float] | None:
    """The threshold (one of the values seen) whose ``value >= threshold`` maximises F1,
    and that F1; None without a positive row."""
    n_pos = sum(positives.values())
    if not n_pos:
        return None
    best: dict[str, float] | None = None
    tp = fp = 0
    for value in sorted(set(positives) | set(negatives), reverse=True):
        tp += positives.get(value, 0)
        fp += negatives.get(value, 0)
        f1 = 2 * tp / (tp + n_pos + fp)
        if best is None or f1 > best["f1"]:
            best = {"threshold": value, "f1": round(f1, 6)}
    return best
