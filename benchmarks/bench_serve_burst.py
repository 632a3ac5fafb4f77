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

Timings on a shared machine are labelled with its load average; the counts are what the
benchmark is for. Bounded: every socket operation has a 60 s timeout.
"""

from __future__ import annotations

import argparse
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

RK = [sys.executable, "-m", "rewardkit.cli"]
CONFIG = {"rewards": {"correct": {"reward": "math_answer", "params": {"symbolic": False},
                                  "mode": "inline"}}}
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
    args = parser.parse_args(argv)
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
