"""A comparison point for ``bench_serve_burst.py --stack asgi``: the same RewardSet and
the same ``/slime`` body and answer as ``rewardkit serve``, behind uvicorn + Starlette
(one event loop; scoring in Starlette's thread pool). Not a product: only what the
burst benchmark needs to weigh an ASGI stack against the standard library's.

    python benchmarks/serve_asgi_baseline.py CONFIG PORT_FILE
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
import time
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from rewardkit.config import load_config
from rewardkit.reward_set import RewardSet
from rewardkit.serve.endings import DEFAULT_END_STRINGS
from rewardkit.serve.shapes import ShapeError, answer, parse_body


def main() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    config, port_file = sys.argv[1], sys.argv[2]
    rs = RewardSet(load_config(config))

    async def slime(request: Request) -> JSONResponse:
        try:
            batch = parse_body("/slime", await request.body(), None, DEFAULT_END_STRINGS)
        except ShapeError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        result = await run_in_threadpool(rs.score, batch.rows, step=batch.step)
        return JSONResponse(answer(batch, result, 0.0))

    app = Starlette(routes=[Route("/slime", slime, methods=["POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", backlog=4096))
    runner = threading.Thread(target=server.run, daemon=True)
    runner.start()
    while not server.started:  # the port, once it accepts
        if not runner.is_alive():
            raise SystemExit("uvicorn did not start")
        time.sleep(0.05)
    tmp = Path(f"{port_file}.tmp")
    tmp.write_text(f"{port}\n")
    tmp.replace(port_file)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    server.should_exit = True
    runner.join(timeout=30)

if __name__ == "__main__":
    main()
