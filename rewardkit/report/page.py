"""The report page: one self-contained HTML file (inline CSS, JS, SVG and data).

Nothing is fetched when the page opens: no script, font or image from the network, so
it works offline and can be attached to a ticket or a run's artefacts as it is.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping, Sequence
from html import escape
from importlib import resources
from typing import Any

from rewardkit.measure import passk
from rewardkit.report import monitor as monitor_rules
from rewardkit.report import svg
from rewardkit.report.analysis import RunSummary, StepCoverage, status_of, total_of, value_of
from rewardkit.report.hacking import (
    FLAG_TEXT,
    FORMAT_PAID_SHARE,
    ComponentRoles,
    completion_text,
    flag_samples,
)
from rewardkit.report.monitor import FLAG_TEXT as MONITOR_TEXT
from rewardkit.report.monitor import HackMonitor
from rewardkit.reward_set import percentile
from rewardkit.schedules import (
    CosineSchedule,
    LinearSchedule,
    PiecewiseSchedule,
    WarmupSchedule,
)
from rewardkit.trajectory import render_messages

#: rows embedded in the sample browser (flagged rows first); the figures use all rows
MAX_BROWSER_ROWS = 5000
MAX_TEXT = 4000


def _asset(name: str) -> str:
    return resources.files("rewardkit.report").joinpath(name).read_text(encoding="utf-8")


def _pct(part: float, whole: float) -> str:
    return "-" if not whole else f"{100 * part / whole:.1f}%"


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[:MAX_TEXT] + f"... [{len(value) - MAX_TEXT} more characters]"
    return value


def _json_for_script(data: Any) -> str:
    """JSON safe inside a <script> element ('</' and '<!--' cannot close or open it)."""
    text = json.dumps(data, ensure_ascii=False, default=str, allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


class WeightsOverSteps:
    """Each component's weight at each step, and the steps where a stage switches."""

    def __init__(self, series: Mapping[str, Sequence[tuple[float, float]]],
                 switches: Sequence[tuple[float, str]]) -> None:
        self.series = series
        self.switches = switches

    @staticmethod
    def chart_end(reward_set: Any, run_last: int) -> int:
        """Where the weights chart ends: the run's last step or the schedule's end,
        whichever is later; past a stage switch by a tenth of it at least, so the stage
        that goes on after the last switch shows."""
        end = run_last
        for comp in reward_set.components.values():
            for stage in comp.stages:
                end = max(end, _last_change(stage.weight))
                if stage.until_step is not None and stage is not comp.stages[-1]:
                    end = max(end, stage.until_step + max(1, stage.until_step // 10))
        return max(1, end)

    @classmethod
    def from_reward_set(cls, reward_set: Any, steps: int) -> WeightsOverSteps:
        """Sample ``reward_set.weights(step)`` over ``0..steps`` (at most ~200 points)."""
        stride = max(1, steps // 200)
        points = sorted({*range(0, steps + 1, stride), steps})
        series: dict[str, list[tuple[float, float]]] = {}
        switches: list[tuple[float, str]] = []
        for name, comp in reward_set.components.items():
            for stage in comp.stages[:-1]:
                if stage.until_step is not None and stage.until_step <= steps:
                    points.append(stage.until_step)
                    points.append(stage.until_step - 1)
                    switches.append((float(stage.until_step), f"{name}: stage switch"))
        points = sorted(set(p for p in points if 0 <= p <= steps))
        for step in points:
            for name, weight in reward_set.weights(step).items():
                series.setdefault(name, []).append((float(step), float(weight)))
        return cls(series, switches)


def _last_change(weight: Any) -> int:
    """The step after which a weight stays as it is (0 for a number)."""
    if isinstance(weight, LinearSchedule | CosineSchedule):
        return weight.start_step + weight.steps
    if isinstance(weight, PiecewiseSchedule):
        return weight.boundaries[-1] if weight.boundaries else 0
    if isinstance(weight, WarmupSchedule):
        return weight.warmup_steps
    return 0


def latency_text(ms: float) -> str:
    """A latency people read at a glance: ``0.42 ms``, ``8.1 ms``, ``1537 ms``, ``12.3 s``."""
    if not math.isfinite(ms):
        return "-"
    if ms < 1:
        return f"{ms:.2f} ms"
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 10_000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.1f} s"


def render(rows: Sequence[Mapping[str, Any]], summary: RunSummary, *, title: str,
           source: str, roles: ComponentRoles,
           weights: WeightsOverSteps | None = None,
           curves: Sequence[Mapping[str, float]] | None = None,
           monitor: HackMonitor | None = None,
           coverage: StepCoverage | None = None) -> str:
    """The whole page as a string (``coverage``: the training steps the rows come from)."""
    flags = flag_samples(rows, roles)
    steps = f" · <span id='coverage'>{escape(coverage.text())}</span>" if coverage else ""
    body = [
        f"<header><h1>{escape(title)}</h1><p class='muted'>{escape(source)} · "
        f"{summary.samples} samples · {summary.groups} prompt groups{steps} · generated "
        f"{_dt.datetime.now(_dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}</p>",
        _partial(coverage), _bad_lines(summary), "</header>",
        _nav(curves is not None, weights is not None, monitor is not None),
        _overview(summary),
        _components(summary),
        _signal(summary),
        _pass_at_k(rows),
        _correlation(summary),
    ]
    if weights is not None or curves is not None:
        body.append(_training(weights, curves))
    if monitor is not None:
        body.append(_monitor(monitor, configured=weights is not None))
    body.append(_hacking(rows, flags, roles))
    body.append(_browser(rows, flags))
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
            f"<title>{escape(title)}</title><style>{_asset('report.css')}</style></head>"
            f"<body>{''.join(body)}<script>{_asset('browser.js')}</script></body></html>\n")


def _partial(coverage: StepCoverage | None) -> str:
    if coverage is None or not coverage.partial:
        return ""
    return (f"<p class='warn'>The samples stop at step {coverage.last} of a run to step "
            f"{coverage.run_end}: the overview, the components and the suspected hacking "
            f"describe steps {coverage.first}-{coverage.last} only (the reward curves cover "
            "the whole run).</p>")


def _bad_lines(summary: RunSummary) -> str:
    if not summary.bad_lines:
        return ""
    shown = "; ".join(f"line {n}: {escape(r)}" for n, r in summary.bad_lines[:5])
    return (f"<p class='warn'>{len(summary.bad_lines)} line(s) of the input were not scored "
            f"samples and are left out ({shown})</p>")


def _nav(training: bool, weights: bool, monitor: bool) -> str:
    links = [("overview", "Overview"), ("components", "Components"),
             ("signal", "GRPO signal"), ("correlation", "Correlation")]
    if training or weights:
        links.append(("training", "Weights and curves"))
    if monitor:
        links.append(("monitor", "Hack monitor"))
    links += [("hacking", "Suspected hacking"), ("samples", "Samples")]
    return "<nav>" + " ".join(f"<a href='#{a}'>{t}</a>" for a, t in links) + "</nav>"


def _overview(summary: RunSummary) -> str:
    head = ("<tr><th>component</th><th>mean</th><th>std</th><th>ok</th><th>skipped</th>"
            "<th>error</th><th>timeout</th><th>latency p50</th><th>latency p95</th>"
            "<th>groups with no variance</th></tr>")
    rows = []
    n = summary.samples
    for name, c in summary.components.items():
        lat = c.latencies_ms
        rows.append(
            f"<tr><td>{escape(name)}</td><td>{svg.fmt(c.mean)}</td><td>{svg.fmt(c.std)}</td>"
            + "".join(f"<td>{_pct(c.counts[s], n)}</td>" for s in
                      ("ok", "skipped", "error", "timeout"))
            + f"<td>{latency_text(percentile(lat, 50)) if lat else '-'}</td>"
            f"<td>{latency_text(percentile(lat, 95)) if lat else '-'}</td>"
            f"<td>{_pct(c.zero_variance_groups, c.groups_scored)}</td></tr>")
    totals = summary.totals
    mean = sum(totals) / len(totals) if totals else math.nan
    return ("<section id='overview'><h2>Overview</h2><table class='grid'>" + head
            + "".join(rows) + "</table>"
            f"<p>Total (the reward that trains): mean {svg.fmt(mean)} over {len(totals)} "
            f"samples; null totals: {summary.null_totals}. Latency columns show '-' where the "
            "input holds no per-sample latency.</p>"
            + _turns(summary)
            + "<h3>Totals</h3>" + svg.histogram(summary.total_histogram, "totals", width=480,
                                                colour="#333") + "</section>")


def _turns(summary: RunSummary) -> str:
    """Per-turn rewards' mean at each turn bucket some sample reached, with how many did
    (later buckets hold fewer, longer trajectories: not a like-for-like comparison)."""
    per_turn = {name: c.turns for name, c in summary.components.items() if c.turns}
    if not per_turn:
        return ""
    buckets = [key for key in next(iter(per_turn.values()))
               if any(turns[key]["count"] for turns in per_turn.values())]
    head = "<tr><th>component</th>" + "".join(
        f"<th>turn {escape(key.replace('plus', '+'))}</th>" for key in buckets) + "</tr>"
    rows = "".join(
        f"<tr><td>{escape(name)}</td>" + "".join(
            f"<td>{svg.fmt(turns[k]['mean'])} ({int(turns[k]['count'])})</td>"
            for k in buckets) + "</tr>" for name, turns in per_turn.items())
    return ("<h3 id='turns'>Per turn</h3><p class='muted'>mean of each per-turn reward at "
            "each assistant turn (samples that reached it); a turn no sample reached is "
            "left out</p><table class='grid'>" + head + rows + "</table>")


def _components(summary: RunSummary) -> str:
    cards = []
    for i, (name, c) in enumerate(summary.components.items()):
        legend = ", ".join(f"{s} {c.counts[s]}" for s in c.counts if c.counts[s])
        cards.append(
            f"<div class='card'><h3>{escape(name)}</h3>"
            + svg.histogram(c.histogram, f"{name} values",
                            colour=svg.PALETTE[i % len(svg.PALETTE)])
            + f"<p class='muted'>value distribution ({len(c.values)} values)</p>"
            + svg.status_bar(c.counts) + f"<p class='muted'>status: {escape(legend)}</p>"
            + "</div>")
    return ("<section id='components'><h2>Components</h2><div class='cards'>"
            + "".join(cards) + "</div></section>")


def _signal(summary: RunSummary) -> str:
    multi = sum(c for size, c in summary.group_sizes.items() if size > 1)
    sizes = ", ".join(f"{c} of size {s}" for s, c in summary.group_sizes.items())
    if not multi:
        return ("<section id='signal'><h2>GRPO signal</h2><p>No prompt has more than one "
                f"completion here ({sizes}), so group variance cannot be measured.</p></section>")
    rows = "".join(
        f"<tr><td>{escape(name)}</td><td>{_pct(c.zero_variance_groups, c.groups_scored)}</td>"
        f"<td>{c.zero_variance_groups} / {c.groups_scored}</td></tr>"
        for name, c in summary.components.items())
    return (
        "<section id='signal'><h2>GRPO signal</h2><p>A group whose rewards are all equal "
        "has zero advantage for every completion: it teaches nothing.</p>"
        f"<p class='big' id='zero-variance-total'>{_pct(summary.zero_variance_groups, multi)}"
        f" of groups have a total with zero variance ({summary.zero_variance_groups} of "
        f"{multi})</p><p class='muted'>groups: {escape(sizes)}</p>"
        "<table class='grid'><tr><th>component</th><th>groups with zero variance</th>"
        f"<th>count</th></tr>{rows}</table></section>")


def _pass_at_k(rows: Sequence[Mapping[str, Any]]) -> str:
    """pass@k and maj@k per component over the prompts with several completions
    (:func:`rewardkit.measure.passk.by_component`); nothing when no prompt has two."""
    table = passk.by_component([dict(r) for r in rows])
    if not table:
        return ""

    def cell(m: dict[str, Any]) -> str:
        ci = m["ci95"]
        interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
        return f"<td>{m['value']:.3f}{interval}</td>"

    ks = list(next(iter(table.values())))
    head = "".join(f"<th>pass@{k}</th><th>maj@{k}</th>" for k in ks)
    body = "".join(
        f"<tr><td>{escape(name)}</td>" + "".join(
            cell(per_k[k]["pass@k"]) + cell(per_k[k]["maj@k"]) if k in per_k
            else "<td>-</td><td>-</td>" for k in ks) + "</tr>"
        for name, per_k in table.items())
    return ("<section id='pass-at-k'><h2>pass@k and maj@k</h2><p>Per component, over the "
            "prompts with several completions: pass@k, the unbiased estimate of the chance "
            "that one of k completions is paid in full (1 - C(n-c,k)/C(n,k)); maj@k, the "
            "chance that the most frequent answer among k is. 95% intervals over "
            f"prompts.</p><table class='grid'><tr><th>component</th>{head}</tr>{body}"
            "</table></section>")


def _correlation(summary: RunSummary) -> str:
    names = list(summary.correlation)
    if len(names) < 2:
        return ("<section id='correlation'><h2>Correlation</h2><p>One component only."
                "</p></section>")
    head = "<tr><th></th>" + "".join(f"<th>{escape(n)}</th>" for n in names) + "</tr>"
    rows = []
    for a in names:
        cells = []
        for b in names:
            r = summary.correlation[a][b]
            if r is None:
                cells.append("<td class='muted'>-</td>")
                continue
            colour = (f"rgba(31,119,180,{abs(r):.2f})" if r >= 0
                      else f"rgba(214,39,40,{abs(r):.2f})")
            cells.append(f"<td style='background:{colour}'>{r:+.2f}</td>")
        rows.append(f"<tr><th>{escape(a)}</th>{''.join(cells)}</tr>")
    return ("<section id='correlation'><h2>Correlation between components</h2>"
            "<p class='muted'>Pearson r over samples both components scored; '-' where a "
            "component is constant or too few pairs.</p><table class='grid corr'>"
            + head + "".join(rows) + "</table></section>")


def _training(weights: WeightsOverSteps | None,
              curves: Sequence[Mapping[str, float]] | None) -> str:
    parts = ["<section id='training'><h2>Weights and reward curves</h2>"]
    marks = list(weights.switches) if weights else []
    if weights is not None:
        parts.append("<h3>Weights over steps</h3>")
        parts.append(svg.line_chart(weights.series, "weights over steps", "weight", marks))
    if curves:
        columns = [k for k in curves[0] if k not in ("step",)]
        for row in curves[1:]:
            columns += [k for k in row if k not in columns and k != "step"]
        total = {"total (weighted sum: what trains)":
                 [(r["step"], r["reward"]) for r in curves if _finite(r.get("reward"))]}
        raw = {f"{c} (raw mean, unweighted)": [(r["step"], r[c]) for r in curves
                                                if _finite(r.get(c))]
               for c in columns if c != "reward"}
        parts.append("<h3>Total reward, weighted</h3>")
        parts.append(svg.line_chart(total, "total reward (weighted)", "weighted total", marks))
        parts.append("<h3>Component rewards, unweighted</h3><p class='muted'>Each component's "
                     "mean raw value before its weight is applied.</p>")
        parts.append(svg.line_chart(raw, "component means (unweighted)", "raw mean", marks,
                                    dashed=list(raw)))
        if weights is not None:
            contrib: dict[str, list[tuple[float, float]]] = {}
            for c in columns:
                if c == "reward" or c not in weights.series:
                    continue
                w = weights.series[c]
                contrib[f"{c} (weight x mean)"] = [
                    (r["step"], r[c] * _weight_at(w, r["step"])) for r in curves
                    if _finite(r.get(c))]
            parts.append("<h3>Component contributions, weighted</h3>")
            parts.append(svg.line_chart(contrib, "weighted contributions",
                                        "weight x mean", marks))
    parts.append("</section>")
    return "".join(parts)


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and math.isfinite(v)


def _weight_at(series: Sequence[tuple[float, float]], step: float) -> float:
    found = series[0][1]
    for s, w in series:
        if s > step:
            break
        found = w
    return found


def _monitor(monitor: HackMonitor, configured: bool) -> str:
    parts = ["<section id='monitor'><h2>Hack monitor</h2>"]
    trained = ", ".join(sorted(monitor.trained_seen)) or "none"
    audits = ", ".join(monitor.audits) or "none"
    parts.append(f"<p class='muted'>{monitor.steps} step(s) watched; trained components: "
                 f"{escape(trained)}; audit components (weight 0 at every step): "
                 f"{escape(audits)}.</p>")
    if not configured:
        parts.append("<p class='warn'>Without the reward config (<code>--config</code>) "
                     "every component counts as trained and no audit is known.</p>")
    elif not monitor.audits:
        parts.append("<p class='warn'>No audit component: add one with <code>weight: 0</code> "
                     "(a strict variant or a judge) to see a trained reward rise while it "
                     "falls.</p>")
    if not monitor.flags:
        parts.append("<p class='big' id='monitor-verdict'>Silent: no hack pattern held.</p>")
        return "".join(parts) + "</section>"
    parts.append(f"<p class='big warn' id='monitor-verdict'>{len(monitor.flags)} hack "
                 "pattern(s)</p><table class='grid' id='monitor-flags'><tr><th>pattern</th>"
                 "<th>component</th><th>since step</th><th>last held</th><th>evidence</th>"
                 "<th>examples</th></tr>")
    for flag in monitor.flags:
        examples = "".join(
            f"<pre>step {escape(str(r.get('step', '-')))}, "
            + ", ".join(f"{escape(n)} {svg.fmt(value_of(r, n))}" for n in r.get("components") or {})
            + f": {escape(_clip_to(completion_text(r), 300))}</pre>" for r in flag.examples)
        state = "still holds" if flag.active else f"step {flag.last}"
        parts.append(f"<tr data-kind='{escape(flag.kind)}'><td>{escape(MONITOR_TEXT[flag.kind])}"
                     f"</td><td>{escape(flag.component)}</td><td>{flag.since}</td>"
                     f"<td>{escape(state)}</td><td class='evidence'>{escape(flag.evidence)}</td>"
                     f"<td class='examples'>{examples or '-'}</td></tr>")
    parts.append(f"</table><p class='muted'>Trends: Mann-Kendall z (corrected for "
                 f"autocorrelation) over the last {monitor_rules.TREND_WINDOW} recorded steps "
                 f"({monitor_rules.MIN_STEPS} at least), |z| ≥ {monitor_rules.TREND_Z:g} and a "
                 f"Theil-Sen change of {monitor_rules.MIN_CHANGE:g} or more, held "
                 f"{monitor_rules.PERSIST} steps in a row. Shares: over the last "
                 f"{monitor_rules.SHARE_WINDOW} steps, of at least {monitor_rules.MIN_PAID} "
                 "completions paid the component's full value. See docs/report.md.</p>")
    return "".join(parts) + "</section>"


def _clip_to(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more]"


def _hacking(rows: Sequence[Mapping[str, Any]], flags: Sequence[list[str]],
             roles: ComponentRoles) -> str:
    counts = {k: sum(1 for f in flags if k in f) for k in FLAG_TEXT}
    items = "".join(
        f"<li><a href='#samples' class='flag-link' data-flag='{k}'>{escape(text)}</a>: "
        f"<b data-flag-count='{k}'>{counts[k]}</b> sample(s)</li>"
        for k, text in FLAG_TEXT.items())
    fmt_names = ", ".join(roles.format) or "none found"
    ans_names = ", ".join(roles.answer) or "none found"
    return ("<section id='hacking'><h2>Suspected reward hacking</h2><ul>" + items + "</ul>"
            f"<p class='muted'>format components: {escape(fmt_names)}; answer components: "
            f"{escape(ans_names)} (from their names). Format paid = a format component paid "
            f"at least {FORMAT_PAID_SHARE:.0%} of the most it paid in the run, while every "
            "answer component gave 0. Long = past the upper quartile by three "
            "interquartile ranges and over twice the median length; repetitive = half or "
            "more of its 3-grams repeat; high reward = total in the top quarter. Click a "
            "sign to list its samples.</p>"
            "</section>")


def browser_rows(flags: Sequence[list[str]], limit: int = MAX_BROWSER_ROWS) -> list[int]:
    """The rows the sample browser holds, in file order: every flagged one (up to
    ``limit``), then the others evenly spaced over the file, so a long run's browser
    shows its end as well as its start."""
    flagged = [i for i, f in enumerate(flags) if f][:limit]
    others = [i for i, f in enumerate(flags) if not f]
    room = limit - len(flagged)
    if len(others) > room:
        others = [others[k * len(others) // room] for k in range(room)] if room > 0 else []
    return sorted(flagged + others)


def _browser(rows: Sequence[Mapping[str, Any]], flags: Sequence[list[str]]) -> str:
    order = browser_rows(flags)
    names: list[str] = []
    for row in rows:
        names += [n for n in row.get("components") or {} if n not in names]
    data = []
    for i in order:
        row = rows[i]
        comps = {}
        for name in names:
            got = (row.get("components") or {}).get(name) or {}
            comps[name] = {"v": value_of(row, name), "s": status_of(row, name),
                           "r": _clip(str(got.get("reason") or "")) if isinstance(got, dict)
                           else ""}
        meta = {k: v for k, v in row.items()
                if k not in ("prompt", "completion", "reference", "reward", "components")}
        data.append({"i": i, "t": total_of(row), "p": _clip(_as_text(row.get("prompt"))),
                     "c": _clip(completion_text(row)), "ref": _clip(_as_text(row.get("reference"))),
                     "m": _clip(_as_text(meta)) if meta else "", "len": len(completion_text(row)),
                     "tr": _clip(render_messages(row.get("completion"))),
                     "comp": comps, "f": flags[i]})
    note = "" if len(order) == len(rows) else (
        f"<p class='warn'>The browser holds {len(order)} of {len(rows)} samples (flagged "
        "ones first); the figures above use all of them.</p>")
    comp_opts = "".join(f"<option>{escape(n)}</option>" for n in names)
    flag_opts = "".join(f"<option value='{k}'>{escape(t)}</option>" for k, t in FLAG_TEXT.items())
    return (
        "<section id='samples'><h2>Samples</h2>" + note +
        "<div class='controls'>"
        "<label>component <select id='f-component'><option value=''>any</option>"
        f"{comp_opts}</select></label>"
        "<label>status <select id='f-status'><option value=''>any</option>"
        "<option>ok</option><option>skipped</option><option>error</option>"
        "<option>timeout</option></select></label>"
        "<label>value ≥ <input id='f-min' type='number' step='any' size='6'></label>"
        "<label>value ≤ <input id='f-max' type='number' step='any' size='6'></label>"
        "<label>sign <select id='f-flag'><option value=''>any</option>"
        f"{flag_opts}</select></label>"
        "<label>text <input id='f-text' type='search' placeholder='in prompt or completion'>"
        "</label>"
        "<label>sort <select id='f-sort'><option value='index'>input order</option>"
        "<option value='total-desc'>total, high first</option>"
        "<option value='total-asc'>total, low first</option>"
        "<option value='value-desc'>component value, high first</option>"
        "<option value='value-asc'>component value, low first</option>"
        "<option value='len-desc'>longest completion first</option></select></label>"
        "</div><p id='match-count' class='muted'></p>"
        "<table class='grid' id='sample-table'><thead><tr><th>#</th><th>total</th>"
        + "".join(f"<th>{escape(n)}</th>" for n in names)
        + "<th>completion</th><th>signs</th></tr></thead><tbody></tbody></table>"
        "<div id='detail' hidden></div>"
        f"<script type='application/json' id='sample-data'>"
        f"{_json_for_script(_clean({'components': names, 'rows': data, 'flags': FLAG_TEXT}))}"
        "</script></section>")


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str, indent=1)
