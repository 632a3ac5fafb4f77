"""``rewardkit serve`` under load on 127.0.0.1, side by side with ``rewardkit score``.

    python benchmarks/bench_serve.py [--rows 2048] [--batch 16] [--clients 4] [--workers 2]
                                     [--instances 1 [2 ...]] [--rounds 1]
                                     [--seconds 60] [--json PATH]

The rows are long GSM8K-style solutions (``gsm8k_style.py``, ~1 KB each). For each of two
configs, a cheap one (``math_answer`` inline) and a process-mode one (``math_answer`` and
``reasoning_steps`` with ``mode: process``, the worker pool), the benchmark:

1. scores the rows with ``rewardkit score CONFIG ROWS --out ... --json`` (its own
   ``seconds``: scoring time, start-up excluded);
2. starts ``rewardkit serve CONFIG --port 0 --workers W``, sends one warm-up request, then
   ``C`` client threads post the same rows as OpenRLHF does (``/openrlhf``, ``B`` rows a
   request) until every row has been sent once or ``S`` seconds pass, and reports
   requests/s, rows/s and the p50/p95 request latency; for the cheap config also slime's
   shape (``/slime``, one row a request);
3. checks that every reward the server answered equals the total ``rewardkit score``
   wrote for that row (a mismatch fails the run).

With ``--instances 1 2`` step 2 runs once per instance count (``rewardkit serve
--instances N``: N processes on one port), side by side, ``--rounds`` times in turn; each
request opens its own connection, so the kernel spreads them over the instances.

Bounded: at most ``--rows`` rows per run and ``--seconds`` per load phase; the server is
stopped with SIGTERM (and killed if it does not drain in 30 s).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gsm8k_style import solutions

RK = [sys.executable, "-m", "rewardkit.cli"]
MATH = {"reward": "math_answer", "params": {"symbolic": False}}
CONFIGS: dict[str, dict[str, Any]] = {
    "cheap (inline math_answer)": {"rewards": {"correct": {**MATH, "mode": "inline"}}},
    "process mode (math_answer + reasoning_steps)": {
        "rewards": {"correct": {**MATH, "mode": "process"},
                    "steps": {"reward": "reasoning_steps", "mode": "process",
                              "weight": 0.1}}},
}


def make_rows(n: int) -> list[dict[str, Any]]:
    return [{"prompt": f"question {i // 8}: ", "completion": s.text, "reference": s.gold}
            for i, s in enumerate(solutions(n, seed=11))]


def score_with_cli(config: Path, rows_file: Path, out: Path) -> tuple[list[float], float]:
    """The totals ``rewardkit score`` writes and its scoring seconds."""
    proc = subprocess.run([*RK, "score", str(config), str(rows_file), "--out", str(out),
                           "--json"], capture_output=True, text=True, timeout=600, check=True)
    summary = json.loads(proc.stdout)
    totals = [json.loads(line)["reward"] for line in out.read_text().splitlines()]
    return totals, float(summary["seconds"])


def start_server(config: Path, workers: int, folder: Path, instances: int = 1
                 ) -> tuple[subprocess.Popen[str], str]:
    port_file = folder / "port"
    port_file.unlink(missing_ok=True)
    proc = subprocess.Popen([*RK, "serve", str(config), "--port", "0", "--port-file",
                             str(port_file), "--workers", str(workers), "--queue", "256",
                             "--instances", str(instances)],
                            stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 120
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("rewardkit serve did not start")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{int(port_file.read_text())}"


def stop_server(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def post(url: str, body: Any) -> Any:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def load(url: str, shape: str, rows: list[dict[str, Any]], batch: int, clients: int,
         seconds: float) -> dict[str, Any]:
    """Post ``rows`` in batches from ``clients`` threads; latencies and answers."""
    if shape == "/slime":  # one sample a request
        batch = 1
    batches = [list(range(i, min(i + batch, len(rows)))) for i in range(0, len(rows), batch)]
    answers: dict[int, float] = {}
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    todo = iter(batches)
    deadline = time.monotonic() + seconds

    def body(idx: list[int]) -> Any:
        if shape == "/slime":
            r = rows[idx[0]]
            return {"prompt": r["prompt"], "response": r["completion"], "label": r["reference"]}
        return {"query": [rows[i]["prompt"] + rows[i]["completion"] for i in idx],
                "prompts": [rows[i]["prompt"] for i in idx],
                "labels": [rows[i]["reference"] for i in idx]}

    def client() -> None:
        while time.monotonic() < deadline:
            with lock:
                idx = next(todo, None)
            if idx is None:
                return
            started = time.perf_counter()
            try:
                got = post(url + shape, body(idx))
            except OSError as exc:  # a refused or failed request is reported, not raised
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                continue
            elapsed = time.perf_counter() - started
            rewards = [got] if shape == "/slime" else got["rewards"]
            with lock:
                latencies.append(elapsed)
                answers.update(zip(idx, rewards, strict=True))

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    q = statistics.quantiles(latencies, n=20) if len(latencies) >= 2 else [float("nan")] * 19
    return {"shape": shape, "batch": batch, "clients": clients,
            "requests": len(latencies), "rows": len(answers), "errors": errors[:5],
            "error_count": len(errors), "seconds": round(wall, 3),
            "requests_per_s": round(len(latencies) / wall, 1),
            "rows_per_s": round(len(answers) / wall, 1),
            "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
            "p95_ms": round(q[18] * 1000, 1), "answers": answers}


def run(args: argparse.Namespace) -> dict[str, Any]:
    rows = make_rows(args.rows)
    report: dict[str, Any] = {"rows": len(rows), "batch": args.batch, "clients": args.clients,
                              "workers": args.workers, "instances": args.instances,
                              "rounds": args.rounds, "cpus": os.cpu_count(),
                              "load_average": [round(x, 2) for x in os.getloadavg()],
                              "configs": {}}
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        folder = Path(tmp)
        rows_file = folder / "rows.jsonl"
        rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
        for name, config in CONFIGS.items():
            cfg = folder / "config.json"
            cfg.write_text(json.dumps(config))
            totals, score_seconds = score_with_cli(cfg, rows_file, folder / "out.jsonl")
            runs = []
            for _round in range(args.rounds):
                for instances in args.instances:
                    proc, url = start_server(cfg, args.workers, folder, instances)
                    try:
                        for _ in range(4 * instances):  # each instance's first request
                            post(url + "/openrlhf", {"query": ["warm up"], "prompts": [""]})
                        shapes = ["/openrlhf"] + (["/slime"] if name.startswith("cheap")
                                                  else [])
                        for shape in shapes:
                            runs.append({"instances": instances, **load(
                                url, shape, rows, args.batch, args.clients, args.seconds)})
                            runs[-1]["load_average_after"] = [round(x, 2)
                                                              for x in os.getloadavg()]
                    finally:
                        stop_server(proc)
            for r in runs:
                answers = r.pop("answers")
                wrong = [i for i, v in answers.items() if abs(v - (totals[i] or 0.0)) > 1e-9]
                if wrong:
                    raise SystemExit(f"{name} {r['shape']}: {len(wrong)} rewards differ from "
                                     f"rewardkit score (first row {wrong[0]})")
                r["agrees_with_score"] = len(answers)
            report["configs"][name] = {
                "score": {"rows": len(rows), "seconds": score_seconds,
                          "rows_per_s": round(len(rows) / score_seconds, 1)},
                "serve": runs}
    return report


def show(report: dict[str, Any]) -> None:
    print(f"rewardkit serve vs rewardkit score: {report['rows']} rows, {report['clients']} "
          f"clients, --workers {report['workers']}, --instances "
          f"{' '.join(map(str, report.get('instances', [1])))}; {report['cpus']} CPUs, load "
          f"average {report['load_average']}")
    print(f"{'config':46} {'how':42} {'req/s':>7} {'rows/s':>8} {'p50 ms':>8} "
          f"{'p95 ms':>8} {'errors':>6} {'load after':>10}")
    for name, r in report["configs"].items():
        s = r["score"]
        print(f"{name:46} {'rewardkit score':42} {'-':>7} {s['rows_per_s']:>8} {'-':>8} "
              f"{'-':>8} {'-':>6}")
        for run in r["serve"]:
            how = (f"serve {run['shape']} ({run['batch']} rows/req), "
                   f"{run.get('instances', 1)} instance(s)")
            after = run.get("load_average_after", ["-"])[0]
            print(f"{'':46} {how:42} {run['requests_per_s']:>7} {run['rows_per_s']:>8} "
                  f"{run['p50_ms']:>8} {run['p95_ms']:>8} {run['error_count']:>6} "
                  f"{after:>10}")
    print("every served reward equals rewardkit score's total for its row; rewardkit "
          "score's time includes its first call's set-up (imports; the worker pool in "
          "process mode), which the server did in its warm-up request")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--instances", type=int, nargs="+", default=[1],
                    help="rewardkit serve --instances N for each N given, side by side")
    ap.add_argument("--rounds", type=int, default=1,
                    help="times each instance count runs, in turn")
    ap.add_argument("--seconds", type=float, default=60.0, help="cap on each load phase")
    ap.add_argument("--json", type=Path, help="also write the report here")
    args = ap.parse_args()
    report = run(args)
    show(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
