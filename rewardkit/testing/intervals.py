"""Confidence intervals of the rates the testing commands report.

>>> low, high = wilson_interval(0, 20)
>>> (low, round(high, 3))
(0.0, 0.161)
"""

from __future__ import annotations

import math

#: the normal quantile of a two-sided 95% interval
Z_95 = 1.959963984540054


def wilson_interval(hits: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial rate ``hits / n`` (95% by default).

    Unlike the normal approximation it stays inside 0..1 and is not empty at 0 or n
    hits: 0 false positives in 20 tries still allows a rate up to 16%. ``n == 0``: (0, 1),
    nothing is known.
    """
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= hits <= n:
        raise ValueError(f"hits ({hits}) must lie within 0..n ({n})")
    p = hits / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if hits == 0 else max(0.0, centre - half)
    high = 1.0 if hits == n else min(1.0, centre + half)
    return low, high
