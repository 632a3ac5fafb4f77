"""``rewardkit serve CONFIG``: its options and the command (registered with the other
built-in commands by :mod:`rewardkit.cli.commands`)."""

from __future__ import annotations

import argparse
import ipaddress
import math
import os

from rewardkit.cli import EXIT_OK, UsageError
from rewardkit.hookspecs import Subcommands

#: the longest --read-timeout, seconds (a day; beyond, the socket's timer cannot hold it)
MAX_READ_TIMEOUT = 86_400.0
#: the longest --batch-wait-ms (a minute: a latency bound, not a schedule)
MAX_BATCH_WAIT_MS = 60_000.0
#: the largest --null-reward in magnitude (the fault model's bound on a reward's value)
MAX_NULL_REWARD = 1e12
#: the most --instances (each a process with its own workers and pool)
MAX_INSTANCES = 256


def add_serve(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("serve", help="score over HTTP (OpenRLHF, slime, native JSON)")
    p.add_argument("config")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only; any other "
                   "needs a token, or --no-auth)")
    p.add_argument("--port", type=int, default=8000, help="0: any free port (see --port-file)")
    p.add_argument("--workers", type=int, default=2, help="batches scored at once")
    p.add_argument("--queue", type=int, default=16,
                   help="batches (of up to --max-batch-rows rows) that may wait for a "
                   "worker; a request beyond, 503 with Retry-After")
    p.add_argument("--batch-wait-ms", type=float, default=10.0,
                   help="micro-batching: the longest a request waits for other requests' "
                   "rows to join its batch before a free worker scores it (default 10; "
                   "0: no wait). At most 60000")
    p.add_argument("--max-batch-rows", type=int, default=256,
                   help="micro-batching: a batch this large is scored without waiting; "
                   "requests join a batch while it stays within this (1: every request "
                   "scored alone)")
    p.add_argument("--max-body-bytes", type=int, default=16 << 20,
                   help="larger request bodies get 413 (default 16 MiB)")
    p.add_argument("--max-rows", type=int, default=4096,
                   help="rows per request; more get 413")
    p.add_argument("--retry-after", type=int, default=1,
                   help="seconds a refused client is told to wait (Retry-After)")
    p.add_argument("--read-timeout", type=float, default=30.0,
                   help="seconds a client may take to send its whole request (headers "
                   "and body, from the connection); then 408. At most 86400")
    p.add_argument("--max-connections", type=int, default=4096,
                   help="connections open at once; beyond, 503 at once")
    p.add_argument("--keep-alive", type=float, default=20.0,
                   help="seconds a kept-alive connection may wait for its next request; "
                   "then it is closed (default 20: longer than aiohttp's 15, so the "
                   "trainers' clients close idle connections first). Above 0, at most "
                   "86400")
    p.add_argument("--null-reward", type=float, default=0.0,
                   help="what the OpenRLHF and slime endpoints answer for a null total "
                   "(the native /score answers null); a finite number")
    p.add_argument("--strip-suffix", action="append", default=None, metavar="STRING",
                   help="a string stripped from the end of each response on /openrlhf "
                   "and /slime (repeat it; replaces the default end-of-sequence strings)")
    p.add_argument("--tokenizer", default=None, metavar="DIR",
                   help="also strip the eos_token and pad_token of this local tokenizer "
                   "(its tokenizer_config.json)")
    p.add_argument("--no-strip", action="store_true",
                   help="score the responses as sent (no end string stripped)")
    p.add_argument("--native-only", action="store_true",
                   help="serve POST /score only (/openrlhf and /slime answer 400): for a "
                   "config that needs whole groups, which is refused otherwise")
    p.add_argument("--token-file", default=None,
                   help="a file holding the bearer token (default: REWARDKIT_SERVE_TOKEN; "
                   "neither: no token)")
    p.add_argument("--no-auth", action="store_true",
                   help="serve without a token on an address beyond this machine (a "
                   "private network you trust); without it, --host other than loopback "
                   "needs --token-file or REWARDKIT_SERVE_TOKEN")
    p.add_argument("--port-file", default=None,
                   help="write the bound port here once the server accepts connections")
    p.add_argument("--instances", type=int, default=1,
                   help="server processes on the one port (SO_REUSEPORT: the kernel "
                   "spreads connections over them), each with its own --workers and "
                   "queue, supervised by this process (default 1)")
    # an instance of --instances N: "NUMBER/N/PARENT_PID" (set by the parent only)
    p.add_argument("--instance-of", default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from rewardkit.config import load_config
    from rewardkit.reward_set import RewardSet
    from rewardkit.serve.server import ServeOptions, build_server, read_token, run_server
    from rewardkit.serve.shapes import whole_group_needs_of, whole_group_note

    instance = _instance_of(args.instance_of)
    if not 1 <= args.instances <= MAX_INSTANCES:
        raise UsageError(f"--instances must be from 1 to {MAX_INSTANCES}, got "
                         f"{args.instances}")
    for flag in ("workers", "max_body_bytes", "max_rows", "retry_after", "max_connections",
                 "max_batch_rows"):
        if getattr(args, flag) < 1:
            raise UsageError(f"--{flag.replace('_', '-')} must be at least 1")
    if args.queue < 0 or not 0 <= args.port <= 65535:
        raise UsageError("--queue must be >= 0 and --port within 0..65535")
    if not 0 < args.read_timeout <= MAX_READ_TIMEOUT:  # nan, inf and 1e300 fail here
        raise UsageError(f"--read-timeout must be above 0 and at most {MAX_READ_TIMEOUT:g} "
                         f"seconds, got {args.read_timeout:g}")
    if not 0 <= args.batch_wait_ms <= MAX_BATCH_WAIT_MS:  # nan fails here
        raise UsageError(f"--batch-wait-ms must be from 0 to {MAX_BATCH_WAIT_MS:g}, got "
                         f"{args.batch_wait_ms:g}")
    if not 0 < args.keep_alive <= MAX_READ_TIMEOUT:
        raise UsageError(f"--keep-alive must be above 0 and at most {MAX_READ_TIMEOUT:g} "
                         f"seconds, got {args.keep_alive:g}")
    if not (math.isfinite(args.null_reward) and abs(args.null_reward) <= MAX_NULL_REWARD):
        raise UsageError(f"--null-reward must be a finite number within +-{MAX_NULL_REWARD:g} "
                         f"(the trainers add it up), got {args.null_reward:g}")
    _check_port_file(args.port_file, {"the config": args.config,
                                      "--token-file": args.token_file})
    try:
        token = read_token(args.token_file)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if args.no_auth and token is not None:
        raise UsageError("--no-auth contradicts the token given (--token-file or "
                         "REWARDKIT_SERVE_TOKEN); drop one")
    if token is None and not args.no_auth and not is_loopback(args.host):
        raise UsageError(f"--host {args.host} serves beyond this machine: give a token "
                         "(--token-file FILE or REWARDKIT_SERVE_TOKEN; the trainers pass it "
                         "as http://rk:TOKEN@host/...), or say --no-auth on a network "
                         "you trust")
    end_strings = _end_strings(args)
    rs = RewardSet(load_config(args.config))
    needs = whole_group_needs_of(rs)
    if needs and not args.native_only:
        raise UsageError(f"{args.config}: {whole_group_note(needs)}")
    if args.instances > 1:
        from rewardkit.serve.instances import InstancesError, child_command, run_instances

        try:
            command = child_command(args.config)
        except InstancesError as exc:
            raise UsageError(str(exc)) from exc
        try:
            return run_instances(command, args.instances, args.host, args.port,
                                 args.port_file)
        except InstancesError as exc:
            raise UsageError(str(exc)) from exc
    options = ServeOptions(host=args.host, port=args.port, workers=args.workers,
                           queue=args.queue, max_body_bytes=args.max_body_bytes,
                           max_rows=args.max_rows, retry_after=args.retry_after,
                           null_reward=args.null_reward, token=token,
                           read_timeout=args.read_timeout,
                           max_connections=args.max_connections,
                           keep_alive=args.keep_alive, end_strings=end_strings,
                           native_only=args.native_only,
                           batch_wait=args.batch_wait_ms / 1000.0,
                           max_batch_rows=args.max_batch_rows,
                           instance=instance[0] if instance else None,
                           instances=instance[1] if instance else 1,
                           reuse_port=instance is not None)
    run_server(build_server(rs, options), args.port_file)
    return EXIT_OK


def _instance_of(value: str | None) -> tuple[int, int] | None:
    """In an instance of ``--instances N`` (``--instance-of NUMBER/N/PARENT``, given by
    the parent): (number, N), after asking to die with the parent; None otherwise."""
    if value is None:
        return None
    from rewardkit.serve.instances import die_with_parent

    try:
        number, count, parent = (int(part) for part in value.split("/"))
    except ValueError:
        raise UsageError(f"--instance-of is set by rewardkit serve --instances, got "
                         f"{value!r}") from None
    die_with_parent(parent)
    return number, count


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def _end_strings(args: argparse.Namespace) -> tuple[str, ...]:
    """What is stripped from the end of the trainers' responses (see
    :mod:`rewardkit.serve.endings`)."""
    from rewardkit.serve.endings import (
        DEFAULT_END_STRINGS,
        EndStringsError,
        tokenizer_end_strings,
    )

    if args.no_strip:
        if args.strip_suffix or args.tokenizer:
            raise UsageError("--no-strip contradicts --strip-suffix and --tokenizer")
        return ()
    if args.strip_suffix is not None and not all(args.strip_suffix):
        raise UsageError("--strip-suffix needs a non-empty string (--no-strip: none)")
    strings = list(args.strip_suffix or DEFAULT_END_STRINGS)
    if args.tokenizer:
        try:
            strings += tokenizer_end_strings(args.tokenizer)
        except EndStringsError as exc:
            raise UsageError(str(exc)) from exc
    return tuple(dict.fromkeys(strings))


def _check_port_file(port_file: str | None, inputs: dict[str, str | None]) -> None:
    """Refuse a ``--port-file`` (or the ``.tmp`` file written beside it) that is one of
    the service's inputs: writing the port would replace it."""
    if port_file is None:
        return
    for written in (port_file, f"{port_file}.tmp"):
        for what, path in inputs.items():
            if path is not None and _same_file(written, path):
                raise UsageError(f"--port-file {port_file} would overwrite {what} "
                                 f"({path}); name another file")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet: compare where they lead
        return os.path.realpath(a) == os.path.realpath(b)
