"""``rewardkit serve CONFIG``: its options and the command (registered with the other
built-in commands by :mod:`rewardkit.cli.commands`)."""

from __future__ import annotations

import argparse

from rewardkit.cli import EXIT_OK, UsageError
from rewardkit.hookspecs import Subcommands


def add_serve(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("serve", help="score over HTTP (OpenRLHF, slime, native JSON)")
    p.add_argument("config")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="0: any free port (see --port-file)")
    p.add_argument("--workers", type=int, default=2, help="batches scored at once")
    p.add_argument("--queue", type=int, default=16,
                   help="requests that may wait for a worker; beyond, 503 with Retry-After")
    p.add_argument("--max-body-bytes", type=int, default=16 << 20,
                   help="larger request bodies get 413 (default 16 MiB)")
    p.add_argument("--max-rows", type=int, default=4096,
                   help="rows per request; more get 413")
    p.add_argument("--retry-after", type=int, default=1,
                   help="seconds a refused client is told to wait (Retry-After)")
    p.add_argument("--read-timeout", type=float, default=30.0,
                   help="seconds a client may take to send its request; then 408")
    p.add_argument("--max-connections", type=int, default=128,
                   help="connections open at once; beyond, 503 at once")
    p.add_argument("--null-reward", type=float, default=0.0,
                   help="what the OpenRLHF and slime endpoints answer for a null total "
                   "(the native /score answers null)")
    p.add_argument("--token-file", default=None,
                   help="a file holding the bearer token (default: REWARDKIT_SERVE_TOKEN; "
                   "neither: no token)")
    p.add_argument("--port-file", default=None,
                   help="write the bound port here once the server accepts connections")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from rewardkit.config import load_config
    from rewardkit.reward_set import RewardSet
    from rewardkit.serve.server import ServeOptions, build_server, read_token, run_server

    for flag in ("workers", "max_body_bytes", "max_rows", "retry_after", "max_connections"):
        if getattr(args, flag) < 1:
            raise UsageError(f"--{flag.replace('_', '-')} must be at least 1")
    if args.queue < 0 or not 0 <= args.port <= 65535 or not args.read_timeout > 0:
        raise UsageError("--queue must be >= 0, --port within 0..65535 and "
                         "--read-timeout above 0")
    try:
        token = read_token(args.token_file)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    rs = RewardSet(load_config(args.config))
    options = ServeOptions(host=args.host, port=args.port, workers=args.workers,
                           queue=args.queue, max_body_bytes=args.max_body_bytes,
                           max_rows=args.max_rows, retry_after=args.retry_after,
                           null_reward=args.null_reward, token=token,
                           read_timeout=args.read_timeout,
                           max_connections=args.max_connections)
    run_server(build_server(rs, options), args.port_file)
    return EXIT_OK
