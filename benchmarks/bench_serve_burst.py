"""``rewardkit serve`` under a burst of simultaneous connections, as a trainer opens them.

    python benchmarks/bench_serve_burst.py [--connections 128 1000] [--json PATH]
                                           [-- SERVE_OPTION ...]

OpenRLHF at its current head posts one sample per request from every vLLM engine at
once; slime's client does the same from its connection pool. This benchmark starts
``rewardkit serve`` (a cheap inline config, on 127.0.0.1, a free port, the options after
``--``) and for each burst size N opens N connections at the same moment (N threads
behind a barrier, each ``http.client``: connect, ``POST /slime`` one sample, read the
answer) and counts what each connection got:

- ``200``: scored (checked: the answer is the reward ``rewardkit score`` gives the row);
- ``503``: the documented refusal (checked: it carries ``Retry-After``);
- ``reset``, ``refused``, ``timeout``, ``other``: anything else, which a trainer's
  client sees as a failed try. The service's contract is that these stay at 0.

It then sends 64 requests over one kept-alive connection (``http.client`` reuses it when
the server speaks HTTP/1.1 keep-alive) and reports how many sockets they took.

``--goal N`` measures the micro-batching goal instead (issue 39 #2) on N distinct
GSM8K-style rows (``gsm8k_style.py``): ``rewardkit score`` on the rows in one file (its
wall-clock time, start-up included, and its own scoring seconds), then against one server
(the options after ``--``, defaults otherwise): N connections at once each posting one row
(``/slime``; opened from one asyncio event loop, so the client's own cost stays small);
16 clients at once each posting 64 rows in one request (``/openrlhf``); and 16 clients
each posting 64 rows one a request over a kept-alive connection (``/slime``).
Every answer is checked against the total ``rewardkit score`` wrote for its row; each
phase reports the status counts, wall seconds, rows/s and p50/p99 request latency, and
the server's ``rewardkit_serve_batch_rows`` (rows per scoring call) when it has one.

Timings on a shared machine are labelled with its load average; the counts are what the
benchmark is for. Bounded: every socket operation has a 60 s timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gsm8k_style import solutions

RK = [sys.executable, "-m", "rewardkit.cli"]
CONFIG = {"rewards": {"correct": {"reward": "math_answer", "params": {"symbolic": False},
                                  "mode": "inline"}}}
#: the configs of --goal: the cheap one above, and process mode (the worker pool)
GOAL_CONFIGS = {"cheap": CONFIG, "process": {"rewards": {
    "correct": {"reward": "math_answer", "params": {"symbolic": False}, "mode": "process"},
    "steps": {"reward": "reasoning_steps", "mode": "process", "weight": 0.1}}}}
SAMPLE = {"prompt": "What is 2+3?", "response": "2+3 = 5. The answer is \\boxed{5}",
          "label": "5"}
TIMEOUT = 60.0


def start_server(config: Path, folder: Path, options: list[str], stack: str = "rewardkit"
                 ) -> tuple[subprocess.Popen[str], int]:
    port_file = folder / "port"
    port_file.unlink(missing_ok=True)
    command = [*RK, "serve", str(config), "--port", "0", "--port-file", str(port_file),
               *options] if stack == "rewardkit" else \
        [sys.executable, str(Path(__file__).with_name("serve_asgi_baseline.py")),
         str(config), str(port_file)]
    proc = subprocess.Popen(command, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("rewardkit serve did not start")
        time.sleep(0.05)
    return proc, int(port_file.read_text())


def stop_server(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        return -9


def one_request(port: int, expected: float) -> str:
    """What one fresh connection got: '200', '503', 'reset', 'refused', 'timeout', or
    'other: ...'."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        conn.request("POST", "/slime", body=json.dumps(SAMPLE),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        body = resp.read()
        if resp.status == 200:
            return "200" if json.loads(body) == expected else f"other: wrong reward {body!r}"
        if resp.status == 503 and resp.getheader("Retry-After"):
            return "503"
        return f"other: {resp.status}"
    except ConnectionResetError:
        return "reset"
    except (ConnectionRefusedError, ConnectionAbortedError):
        return "refused"
    except (TimeoutError, OSError) as exc:
        if isinstance(exc, TimeoutError):
            return "timeout"
        return f"other: {type(exc).__name__}"
    except http.client.HTTPException as exc:  # RemoteDisconnected, BadStatusLine
        return f"other: {type(exc).__name__}"
    finally:
        conn.close()


def burst(port: int, n: int, expected: float) -> dict[str, Any]:
    outcomes: list[str] = []
    latencies: list[float] = []
    lock = threading.Lock()
    gate = threading.Barrier(n)

    def client() -> None:
        gate.wait()
        started = time.perf_counter()
        got = one_request(port, expected)
        elapsed = time.perf_counter() - started
        with lock:
            outcomes.append(got)
            latencies.append(elapsed)

    threads = [threading.Thread(target=client) for _ in range(n)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    counts = Counter("other" if o.startswith("other") else o for o in outcomes)
    latencies.sort()
    return {"connections": n, **{k: counts.get(k, 0) for k in
                                 ("200", "503", "reset", "refused", "timeout", "other")},
            "other_examples": sorted({o for o in outcomes if o.startswith("other")})[:3],
            "seconds": round(wall, 2),
            "slowest_s": round(latencies[-1], 2)}


def keep_alive(port: int, expected: float, requests: int = 64) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    sockets: list[Any] = []  # kept, so that no two share an id
    ok = 0
    try:
        for _ in range(requests):
            conn.request("POST", "/slime", body=json.dumps(SAMPLE),
                         headers={"Content-Type": "application/json"})
            if not any(s is conn.sock for s in sockets):
                sockets.append(conn.sock)
            resp = conn.getresponse()
            ok += resp.status == 200 and json.loads(resp.read()) == expected
            if resp.will_close:
                conn.close()
    finally:
        conn.close()
    return {"requests": requests, "ok": ok, "connections_used": len(sockets)}


def goal_rows(n: int) -> list[dict[str, Any]]:
    """``n`` distinct rows (about 60% right), eight to a prompt as a GRPO group."""
    return [{"prompt": f"Question {i // 8}: ", "completion": s.text, "reference": s.gold}
            for i, s in enumerate(solutions(n, seed=39))]


def cli_score(config: Path, rows: list[dict[str, Any]], folder: Path
              ) -> tuple[list[float | None], float, float]:
    """``rewardkit score`` on ``rows`` in one file: the totals, its wall-clock seconds
    (start-up included) and its own scoring seconds."""
    rows_file, out = folder / "rows.jsonl", folder / "out.jsonl"
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    started = time.perf_counter()
    proc = subprocess.run([*RK, "score", str(config), str(rows_file), "--out", str(out),
                           "--json"], capture_output=True, text=True, timeout=600, check=True)
    wall = time.perf_counter() - started
    totals = [json.loads(line)["reward"] for line in out.read_text().splitlines()]
    return totals, wall, float(json.loads(proc.stdout)["seconds"])


def _post(conn: http.client.HTTPConnection, path: str, body: Any) -> tuple[int, Any]:
    conn.request("POST", path, body=json.dumps(body),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    return resp.status, (json.loads(data) if resp.status == 200 else data)


def _slime_body(row: dict[str, Any]) -> dict[str, Any]:
    return {"prompt": row["prompt"], "response": row["completion"], "label": row["reference"]}


def _openrlhf_body(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"query": [r["prompt"] + r["completion"] for r in rows],
            "prompts": [r["prompt"] for r in rows], "labels": [r["reference"] for r in rows]}


def _phase(name: str, jobs: list[list[int]], rows: list[dict[str, Any]], port: int,
           per_request: bool) -> dict[str, Any]:
    """Each job (a client) at once behind a barrier: its row indices posted one a request
    over one kept-alive connection (``per_request``, /slime), else all in one /openrlhf
    request. Answers by row index, latencies, statuses."""
    answers: dict[int, float] = {}
    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    answered = [0]
    lock = threading.Lock()
    gate = threading.Barrier(len(jobs))

    def client(idx: list[int]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        gate.wait()
        try:
            requests = [[i] for i in idx] if per_request else [idx]
            for req in requests:
                started = time.perf_counter()
                try:
                    if per_request:
                        code, got = _post(conn, "/slime", _slime_body(rows[req[0]]))
                        got = [got] if code == 200 else got
                    else:
                        code, got = _post(conn, "/openrlhf",
                                          _openrlhf_body([rows[i] for i in req]))
                        got = got["rewards"] if code == 200 else got
                    outcome = str(code)
                except ConnectionResetError:
                    outcome, code = "reset", 0
                except (OSError, http.client.HTTPException) as exc:
                    outcome, code = f"other: {type(exc).__name__}", 0
                    conn.close()
                elapsed = time.perf_counter() - started
                with lock:
                    outcomes[outcome] += 1
                    latencies.append(elapsed)
                    if code == 200:
                        answers.update(zip(req, got, strict=True))
                        answered[0] += len(req)
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    started = time.perf_counter()  # about when the barrier opens
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    latencies.sort()

    def pct(q: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000, 1)

    return {"phase": name, "requests": len(latencies), "outcomes": dict(outcomes),
            "rows": answered[0], "seconds": round(wall, 3),
            "rows_per_s": round(answered[0] / wall, 1), "p50_ms": pct(0.50),
            "p99_ms": pct(0.99), "answers": answers}


async def _one_async(port: int, body: bytes) -> tuple[str, Any, float]:
    """One fresh connection posting ``body`` to /slime: (outcome, answer, seconds)."""
    started = time.perf_counter()
    writer = None
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /slime HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     b"application/json\r\nConnection: close\r\nContent-Length: %d\r\n"
                     b"\r\n%s" % (len(body), body))
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        code = int(head.split(b" ", 2)[1])
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        data = await reader.readexactly(length)
        return str(code), json.loads(data) if code == 200 else None, \
            time.perf_counter() - started
    except ConnectionResetError:
        return "reset", None, time.perf_counter() - started
    except (OSError, asyncio.IncompleteReadError, ValueError, StopIteration) as exc:
        return f"other: {type(exc).__name__}", None, time.perf_counter() - started
    finally:
        if writer is not None:
            writer.close()


def _burst_async(name: str, indices: list[int], rows: list[dict[str, Any]],
                 port: int) -> dict[str, Any]:
    """One connection per row, all opened at once from one event loop (no client thread
    per connection: 2,000 client threads on this machine's 2 cores measured the client's
    thread scheduling more than the server), each posting its row to /slime."""
    bodies = [json.dumps(_slime_body(rows[i])).encode() for i in indices]

    async def run() -> list[tuple[str, Any, float]]:
        return await asyncio.wait_for(
            asyncio.gather(*(_one_async(port, body) for body in bodies)), TIMEOUT * 5)

    started = time.perf_counter()
    got = asyncio.run(run())
    wall = time.perf_counter() - started
    answers = {i: answer for i, (code, answer, _) in zip(indices, got, strict=True)
               if code == "200"}
    latencies = sorted(seconds for _, _, seconds in got)

    def pct(q: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000, 1)

    return {"phase": name, "requests": len(got),
            "outcomes": dict(Counter(code for code, _, _ in got)), "rows": len(answers),
            "seconds": round(wall, 3), "rows_per_s": round(len(answers) / wall, 1),
            "p50_ms": pct(0.50), "p99_ms": pct(0.99), "answers": answers}


def _batch_metric(port: int) -> dict[str, float]:
    """The server's rows-per-scoring-call summary (``rewardkit_serve_batch_rows``), if any."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    found = {}
    for line in text.splitlines():
        for key in ("sum", "count"):
            if line.startswith(f"rewardkit_serve_batch_rows_{key} "):
                found[key] = float(line.split()[1])
    return found


def _cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) ``pid`` has used so far (Linux), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def goal(n: int, serve_options: list[str], config: str = "cheap") -> dict[str, Any]:
    """The micro-batching goal: see the module's docstring."""
    rows = goal_rows(n)
    report: dict[str, Any] = {"goal_rows": n, "config": config,
                              "serve_options": serve_options,
                              "cpus": os.cpu_count(),
                              "load_average": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="bench-burst-") as tmp:
        folder = Path(tmp)
        cfg = folder / "config.json"
        cfg.write_text(json.dumps(GOAL_CONFIGS[config]))
        totals, wall, own = cli_score(cfg, rows, folder)
        report["score"] = {"rows": n, "wall_s": round(wall, 3), "scoring_s": own}
        proc, port = start_server(cfg, folder, serve_options)
        phases = []
        try:
            # 16 clients of 64 rows: rows 0..1023 (wrapped around fewer rows)
            sixteen = [[(c * 64 + j) % n for j in range(64)] for c in range(16)]
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
            _post(conn, "/slime", SAMPLE)  # warm-up: the first call's set-up
            conn.close()
            for name, jobs, per_request in (
                    (f"{n} connections at once, 1 row each (/slime)",
                     [[i] for i in range(n)], True),
                    ("16 clients at once, 64 rows in one request each (/openrlhf)",
                     sixteen, False),
                    ("16 clients at once, 64 rows one a request each, kept alive (/slime)",
                     sixteen, True)):
                before = _batch_metric(port)
                cpu_before = _cpu_seconds(proc.pid)
                phase = _burst_async(name, [job[0] for job in jobs], rows, port) \
                    if len(jobs) == n and n > 16 else \
                    _phase(name, jobs, rows, port, per_request)
                cpu_after = _cpu_seconds(proc.pid)
                if cpu_before is not None and cpu_after is not None:
                    phase["server_cpu_s"] = round(cpu_after - cpu_before, 2)
                after = _batch_metric(port)
                if after:
                    calls = after["count"] - before.get("count", 0)
                    phase["scoring_calls"] = int(calls)
                    phase["mean_batch_rows"] = round(
                        (after["sum"] - before.get("sum", 0)) / calls, 1) if calls else None
                answers = phase.pop("answers")
                phase["wrong"] = sum(abs(v - (totals[i] or 0.0)) > 1e-9
                                     for i, v in answers.items())
                phases.append(phase)
                time.sleep(1.0)
        finally:
            report["exit_code"] = stop_server(proc)
    report["phases"] = phases
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    first = phases[0]
    report["ratio_to_score_wall"] = round(first["seconds"] / wall, 2)
    report["ratio_to_score_scoring"] = round(first["seconds"] / own, 2)
    return report


def show_goal(r: dict[str, Any]) -> None:
    s = r["score"]
    print(f"{r['config']} config; rewardkit serve "
          f"{' '.join(r['serve_options']) or '(defaults)'}: {r['cpus']} "
          f"CPUs, load average {r['load_average']} -> {r['load_average_after']}; server "
          f"exit {r['exit_code']}")
    print(f"rewardkit score, {s['rows']} rows in one file: {s['wall_s']} s wall-clock "
          f"(start-up included), {s['scoring_s']} s scoring")
    for p in r["phases"]:
        batches = (f"; {p['scoring_calls']} scoring calls, {p['mean_batch_rows']} rows "
                   "each on average" if "scoring_calls" in p else "")
        cpu = f"; server CPU {p['server_cpu_s']} s" if "server_cpu_s" in p else ""
        print(f"{p['phase']}: {p['outcomes']}, {p['rows']} rows answered, {p['wrong']} "
              f"differ from rewardkit score; {p['seconds']} s, {p['rows_per_s']} rows/s, "
              f"p50 {p['p50_ms']} ms, p99 {p['p99_ms']} ms{batches}{cpu}")
    first = r["phases"][0]
    met = (first["outcomes"] == {"200": r["goal_rows"]} and first["wrong"] == 0
           and r["ratio_to_score_wall"] <= 3)
    print(f"goal ({r['goal_rows']} at once all 200, equal to rewardkit score, within 3x "
          f"its time): {'met' if met else 'missed'}: {r['ratio_to_score_wall']}x its "
          f"wall-clock time, {r['ratio_to_score_scoring']}x its scoring time")


def main() -> None:
    argv = sys.argv[1:]
    serve_options = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, nargs="+", default=[128, 1000])
    parser.add_argument("--json", default=None, help="also write the report here")
    parser.add_argument("--stack", choices=["rewardkit", "asgi"], default="rewardkit",
                        help="asgi: the same scoring behind uvicorn + Starlette "
                        "(serve_asgi_baseline.py), for comparison")
    parser.add_argument("--goal", type=int, default=None, metavar="N",
                        help="measure the micro-batching goal on N rows instead")
    parser.add_argument("--goal-config", choices=sorted(GOAL_CONFIGS), default="cheap",
                        help="the config of --goal (process: process-mode rewards)")
    args = parser.parse_args(argv)
    if args.goal:
        goal_report = goal(args.goal, serve_options, args.goal_config)
        show_goal(goal_report)
        if args.json:
            Path(args.json).write_text(json.dumps(goal_report, indent=2) + "\n")
        return
    report: dict[str, Any] = {"stack": args.stack, "serve_options": serve_options,
                              "cpus": os.cpu_count(),
                              "load_average": [round(x, 2) for x in os.getloadavg()],
                              "bursts": []}
    with tempfile.TemporaryDirectory(prefix="bench-burst-") as tmp:
        folder = Path(tmp)
        cfg = folder / "config.json"
        cfg.write_text(json.dumps(CONFIG))
        proc, port = start_server(cfg, folder, serve_options, args.stack)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
            conn.request("POST", "/slime", body=json.dumps(SAMPLE))
            expected = json.loads(conn.getresponse().read())
            conn.close()
            report["expected_reward"] = expected
            for n in args.connections:
                report["bursts"].append(burst(port, n, expected))
                time.sleep(1.0)
            report["keep_alive"] = keep_alive(port, expected)
        finally:
            report["exit_code"] = stop_server(proc)
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    name = "uvicorn + Starlette" if args.stack == "asgi" else "rewardkit serve"
    print(f"{name} {' '.join(serve_options) or '(defaults)'}: {report['cpus']} "
          f"CPUs, load average {report['load_average']} -> {report['load_average_after']}")
    print(f"{'connections':>11} {'200':>5} {'503':>5} {'reset':>6} {'refused':>8} "
          f"{'timeout':>8} {'other':>6} {'seconds':>8} {'slowest s':>10}")
    for b in report["bursts"]:
        print(f"{b['connections']:>11} {b['200']:>5} {b['503']:>5} {b['reset']:>6} "
              f"{b['refused']:>8} {b['timeout']:>8} {b['other']:>6} {b['seconds']:>8} "
              f"{b['slowest_s']:>10}  {' '.join(b['other_examples'])}")
    k = report["keep_alive"]
    print(f"keep-alive: {k['ok']}/{k['requests']} requests answered 200 over "
          f"{k['connections_used']} connection(s); server exit {report['exit_code']}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
