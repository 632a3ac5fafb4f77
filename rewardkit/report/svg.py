"""Inline SVG charts for the report: histograms, stacked status bars and line charts.

Plain strings, no library and nothing fetched: the page must work offline.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
STATUS_COLOURS = {"ok": "#2ca02c", "skipped": "#9e9e9e", "error": "#d62728",
                  "timeout": "#ff7f0e"}


def fmt(v: float | None) -> str:
    """A short number for labels ('-' for missing)."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.3g}"


def histogram(bins: Sequence[tuple[float, float, int]], title: str, width: int = 320,
              height: int = 150, colour: str = PALETTE[0]) -> str:
    """Bars of (low, high, count); discrete bins (low == high) are labelled by value."""
    if not bins:
        return f'<svg class="chart" width="{width}" height="40" role="img"><title>' \
               f'{escape(title)}</title><text x="4" y="24">no values</text></svg>'
    pad_l, pad_b, pad_t = 34, 30, 8
    plot_w, plot_h = width - pad_l - 6, height - pad_b - pad_t
    top = max(c for _, _, c in bins) or 1
    bar_w = plot_w / len(bins)
    parts = [f'<svg class="chart" width="{width}" height="{height}" role="img" '
             f'viewBox="0 0 {width} {height}"><title>{escape(title)}</title>',
             f'<text x="2" y="{pad_t + 8}" class="axis">{top}</text>',
             f'<text x="2" y="{pad_t + plot_h}" class="axis">0</text>']
    for i, (lo, hi, count) in enumerate(bins):
        h = plot_h * count / top
        x = pad_l + i * bar_w
        label = fmt(lo) if lo == hi else f"{fmt(lo)} to {fmt(hi)}"
        parts.append(f'<rect x="{x + 1:.1f}" y="{pad_t + plot_h - h:.1f}" '
                     f'width="{max(bar_w - 2, 1):.1f}" height="{h:.1f}" fill="{colour}">'
                     f'<title>{escape(label)}: {count}</title></rect>')
    discrete = all(lo == hi for lo, hi, _ in bins)
    if discrete and len(bins) <= 8:
        for i, (lo, _, _) in enumerate(bins):
            x = pad_l + (i + 0.5) * bar_w
            parts.append(f'<text x="{x:.1f}" y="{height - 12}" class="axis" '
                         f'text-anchor="middle">{fmt(lo)}</text>')
    else:
        parts.append(f'<text x="{pad_l}" y="{height - 12}" class="axis">{fmt(bins[0][0])}</text>')
        parts.append(f'<text x="{width - 6}" y="{height - 12}" class="axis" '
                     f'text-anchor="end">{fmt(bins[-1][1])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def status_bar(counts: Mapping[str, int], width: int = 320, height: int = 22) -> str:
    """One stacked bar of status shares (ok / skipped / error / timeout)."""
    total = sum(counts.values()) or 1
    parts = [f'<svg class="chart" width="{width}" height="{height}" role="img">'
             '<title>status rates</title>']
    x = 0.0
    for status, count in counts.items():
        if not count:
            continue
        w = width * count / total
        parts.append(f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="{height}" '
                     f'fill="{STATUS_COLOURS.get(status, "#444")}"><title>{status}: {count} '
                     f'({100 * count / total:.1f}%)</title></rect>')
        x += w
    parts.append("</svg>")
    return "".join(parts)


#: width of one character of an 11px label, a little over the widest common glyphs' mean
CHAR_WIDTH = 6.6
#: height of one row of stage-switch labels
MARK_ROW = 13


def _place_marks(marks: Sequence[tuple[float, str]], sx: Callable[[float], float],
                 right: float) -> list[tuple[float, str, float, str, int]]:
    """Where each vertical mark's label goes: ``(step, label, x, anchor, row)``.

    Marks at one step share one label; a label that would run past the plot's right edge
    (into the legend) ends at its line instead of starting there; a label that would
    overlap one already placed goes down a row.
    """
    merged: dict[float, list[str]] = {}
    for step, label in marks:
        merged.setdefault(step, []).append(label)
    placed: list[tuple[float, str, float, str, int]] = []
    taken: list[tuple[int, float, float]] = []  # (row, left, right) of the labels so far
    for step in sorted(merged):
        names = merged[step]
        suffix = ": stage switch"
        label = (", ".join(n.removesuffix(suffix) for n in names) + suffix
                 if all(n.endswith(suffix) for n in names) else "; ".join(names))
        x = sx(step)
        width = CHAR_WIDTH * len(label)
        if x + 3 + width <= right:
            left, anchor, lx = x + 3, "start", x + 3
        else:
            left, anchor, lx = x - 3 - width, "end", x - 3
        row = 0
        while any(r == row and left < b + 4 and a < left + width + 4 for r, a, b in taken):
            row += 1
        taken.append((row, left, left + width))
        placed.append((step, label, lx, anchor, row))
    return placed


def line_chart(series: Mapping[str, Sequence[tuple[float, float]]], title: str,
               y_label: str, marks: Sequence[tuple[float, str]] = (),
               dashed: Sequence[str] = (), width: int = 900, height: int = 280) -> str:
    """Lines by step, with a legend; ``marks`` are labelled vertical lines (stage switches)."""
    points = [p for pts in series.values() for p in pts]
    if not points:
        return f'<p class="muted">{escape(title)}: nothing recorded</p>'
    pad_l, pad_r, pad_t, pad_b = 50, 290, 12, 34
    plot_w, plot_h = width - pad_l - pad_r, height - pad_t - pad_b
    xs = [p[0] for p in points] + [m[0] for m in marks]
    ys = [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y0, y1 = y0 - 0.5, y1 + 0.5

    def sx(x: float) -> float:
        return pad_l + plot_w * (x - x0) / (x1 - x0)

    def sy(y: float) -> float:
        return pad_t + plot_h * (1 - (y - y0) / (y1 - y0))

    parts = [f'<svg class="chart" width="{width}" height="{height}" role="img" '
             f'viewBox="0 0 {width} {height}"><title>{escape(title)}</title>',
             f'<rect x="{pad_l}" y="{pad_t}" width="{plot_w}" height="{plot_h}" '
             'fill="none" stroke="#ccc"/>',
             f'<text x="{pad_l - 4}" y="{pad_t + 10}" class="axis" text-anchor="end">'
             f'{fmt(y1)}</text>',
             f'<text x="{pad_l - 4}" y="{pad_t + plot_h}" class="axis" text-anchor="end">'
             f'{fmt(y0)}</text>',
             f'<text x="{pad_l}" y="{height - 18}" class="axis">{fmt(x0)}</text>',
             f'<text x="{pad_l + plot_w}" y="{height - 18}" class="axis" text-anchor="end">'
             f'{fmt(x1)}</text>',
             f'<text x="{pad_l + plot_w / 2}" y="{height - 4}" class="axis" '
             'text-anchor="middle">step</text>',
             f'<text x="12" y="{pad_t + plot_h / 2}" class="axis" text-anchor="middle" '
             f'transform="rotate(-90 12 {pad_t + plot_h / 2})">{escape(y_label)}</text>']
    for step, label, lx, anchor, row in _place_marks(marks, sx, pad_l + plot_w):
        x = sx(step)
        parts.append(f'<line x1="{x:.1f}" y1="{pad_t}" x2="{x:.1f}" y2="{pad_t + plot_h}" '
                     f'stroke="#888" stroke-dasharray="4 3"><title>{escape(label)}</title></line>'
                     f'<text x="{lx:.1f}" y="{pad_t + 10 + MARK_ROW * row}" class="axis mark" '
                     f'text-anchor="{anchor}">{escape(label)}</text>')
    for i, (name, pts) in enumerate(series.items()):
        colour = "#000" if name.startswith("total") else PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="6 4"' if name in dashed else ""
        widths = "2.5" if name.startswith("total") else "1.6"
        if len(pts) == 1:
            parts.append(f'<circle cx="{sx(pts[0][0]):.1f}" cy="{sy(pts[0][1]):.1f}" r="3" '
                         f'fill="{colour}"/>')
        else:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                         f'stroke-width="{widths}"{dash}><title>{escape(name)}</title>'
                         '</polyline>')
        ly = pad_t + 14 + 16 * i
        lx = pad_l + plot_w + 10
        parts.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 18}" y2="{ly - 4}" '
                     f'stroke="{colour}" stroke-width="{widths}"{dash}/>'
                     f'<text x="{lx + 22}" y="{ly}" class="legend">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)
