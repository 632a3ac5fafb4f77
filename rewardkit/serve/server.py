"""The HTTP server of ``rewardkit serve``: stdlib :class:`ThreadingHTTPServer`.

One thread per connection reads and checks the request and hands its rows to the
micro-batcher (:mod:`rewardkit.serve.batching`): the rows of requests that arrive together
are scored in one :meth:`RewardSet.score` call (the fault model and the executors are the
ones ``rewardkit score`` uses), at most ``workers`` calls at once, each request answered
with its own rows' scores; up to ``queue`` batches' worth of rows wait for a worker, and a
request beyond that is refused at once with 503 and ``Retry-After`` (a trainer's client
retries; nothing piles up in memory). What a request may be:

- a body over ``max_body_bytes`` gets 413 before it is read; a body with more than
  ``max_rows`` rows, 413 too; no ``Content-Length``, 411; a request (line, headers and
  body together) not in within ``read_timeout`` of the connection, 408: one deadline,
  enforced on the socket, so a client trickling a byte at a time cannot hold its thread;
  over ``max_connections`` open at once (idle or slow clients each hold a thread), 503
  written at accept;
- a body the endpoint cannot read (not JSON, wrong shape: :mod:`rewardkit.serve.shapes`),
  400 with a message; an unknown path, 404; a scoring failure the fault model does not
  turn into statuses (a bug), 500 with one line, never a traceback;
- with a token (``--token-file`` or ``REWARDKIT_SERVE_TOKEN``), every endpoint but
  ``/health`` needs ``Authorization: Bearer <token>`` (compared in constant time), else 401.

SIGTERM (or SIGINT) drains: new requests, and connections still sending theirs, get 503;
the batches in progress finish and are answered, then the process exits 0. It binds
127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import base64
import contextlib
import hmac
import io
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from rewardkit.reward_set import RewardSet
from rewardkit.scoring.rows import render
from rewardkit.serve.batching import MicroBatcher, ScoringFailed
from rewardkit.serve.endings import DEFAULT_END_STRINGS
from rewardkit.serve.metrics import ServeMetrics
from rewardkit.serve.shapes import (
    ENDPOINTS,
    ShapeError,
    answer,
    parse_body,
    routed_components,
    routing_note,
    unrouted_row,
    whole_group_needs_of,
    whole_group_note,
    whole_number,
)

TOKEN_ENV = "REWARDKIT_SERVE_TOKEN"
SOMAXCONN = "/proc/sys/net/core/somaxconn"
#: how long a closed connection's unread bytes are read off before the socket is closed
LINGER_SECONDS = 2.0
_REFUSED = (b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            b"Retry-After: %d\r\nConnection: close\r\n\r\n"
            b'{"error": "busy: too many open connections; retry later"}\n')
_REASONS = {408: "Request Timeout", 503: "Service Unavailable"}


class _ReadStopped(ConnectionError):
    """The request was not read to its end: its deadline passed (408) or the service is
    draining (503). ``message`` is the answer's error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _RequestReader(io.RawIOBase):
    """The connection's bytes under one deadline for the whole request (line, headers and
    body): each ``recv`` waits at most the time left, so a client sending a byte at a
    time is cut off at the deadline, not each read's timeout later. The first request's
    deadline counts from the connection; on a kept-alive connection the next request may
    take ``keep_alive`` seconds to begin (then the connection is closed without an
    answer: no request was sent), and its deadline counts from its first byte. Once the
    service stops accepting, the drain shuts the socket's read side, which ends the read
    here (a connection between requests is closed quietly)."""

    def __init__(self, sock: socket.socket, server: RewardServer) -> None:
        super().__init__()
        self.sock = sock
        self.server = server
        self.deadline = time.monotonic() + server.options.read_timeout
        #: waiting for the first byte of a request after the first (keep-alive)
        self.between_requests = False

    def next_request(self) -> None:
        """The connection was kept open after an answer: wait for another request."""
        self.between_requests = True

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.between_requests:
            return self._first_byte(buffer)
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._expired()
        self.sock.settimeout(left)
        try:
            n = self.sock.recv_into(buffer)
        except TimeoutError:
            raise self._expired() from None
        if n == 0 and self.server.batcher.draining:
            raise _ReadStopped(503, "shutting down; retry later")
        return n

    def _first_byte(self, buffer: Any) -> int:
        self.sock.settimeout(self.server.options.keep_alive)
        try:
            n = self.sock.recv_into(buffer)
        except TimeoutError:
            return 0  # idle too long: close without an answer
        self.between_requests = False
        self.deadline = time.monotonic() + self.server.options.read_timeout
        return n

    def _expired(self) -> _ReadStopped:
        return _ReadStopped(408, f"the request did not arrive within "
                            f"{self.server.options.read_timeout:g} s (--read-timeout)")


def _raw_answer(code: int, message: str, retry_after: int) -> bytes:
    """A whole answer for a request that was not read to its end (no request version to
    answer in: HTTP/1.0, the server's own)."""
    body = render({"error": message})
    retry = f"Retry-After: {retry_after}\r\n" if code == 503 else ""
    return (f"HTTP/1.0 {code} {_REASONS[code]}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{retry}Connection: close\r\n\r\n"
            ).encode() + body


@dataclass
class ServeOptions:
    """How the service runs (the ``rewardkit serve`` options)."""

    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 2
    queue: int = 16
    max_body_bytes: int = 16 << 20
    max_rows: int = 4096
    retry_after: int = 1
    null_reward: float = 0.0
    token: str | None = None
    read_timeout: float = 30.0
    max_connections: int = 4096
    #: longer than aiohttp's 15 s (OpenRLHF's and slime's client): the client closes an
    #: idle connection first, so no request is sent on one the server is closing
    keep_alive: float = 20.0
    #: stripped from the end of each response on /openrlhf and /slime
    end_strings: tuple[str, ...] = DEFAULT_END_STRINGS
    #: serve only POST /score (a config that needs whole groups)
    native_only: bool = False
    #: micro-batching: the longest a request waits for others to join its batch
    #: (seconds), and the rows at which a batch goes without waiting
    batch_wait: float = 0.010
    max_batch_rows: int = 256
    #: one of several instances on one port (``--instances``): its number from 0 and
    #: how many there are; None: a lone service
    instance: int | None = None
    instances: int = 1
    #: bind with SO_REUSEPORT (the instances share the port; the kernel spreads
    #: connections over them)
    reuse_port: bool = False


def listen_backlog() -> int:
    """The listen backlog: the kernel's own cap (``/proc/sys/net/core/somaxconn``), so
    a burst of connections waits in the kernel's queue for the accept loop instead of
    being reset (the standard library's backlog is 5); 4096 where the cap is unknown."""
    try:
        return max(int(Path(SOMAXCONN).read_text().strip()), 128)
    except (OSError, ValueError):
        return 4096


def raise_open_files(connections: int) -> str | None:
    """Raise this process's soft limit of open files (within the hard limit) so that
    ``connections`` sockets, and the files scoring opens, fit; a warning when the hard
    limit is lower (a connection beyond it fails at accept instead of a 503)."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    wanted = connections + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return None
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    if soft >= wanted:
        return None
    return (f"open files are limited to {soft} (ulimit -n), under --max-connections "
            f"{connections} plus room for scoring: lower --max-connections or raise the "
            "limit")


def _linger_close(sock: socket.socket, seconds: float) -> None:
    """Close ``sock`` without resetting it: closing a socket with unread bytes (a
    request the server refused unread) makes the kernel send a reset, which can reach
    the client before it reads the answer. So stop writing, read off what the client
    still sends until it closes or ``seconds`` pass, then close."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(65536):
                break
    with contextlib.suppress(OSError):
        sock.close()


class RewardServer(ThreadingHTTPServer):
    """The server: its RewardSet, options, metrics and micro-batcher, for the handlers.
    Closing the server waits for every connection's thread (the drain)."""

    def __init__(self, rs: RewardSet, options: ServeOptions) -> None:
        self.request_queue_size = listen_backlog()
        self.rs = rs
        self.options = options
        self.metrics = ServeMetrics()
        #: components routed by metadata (``when``), and the keys each reads
        self.routed = routed_components(rs)
        #: why the config needs whole groups (empty: it does not)
        self.whole_groups = whole_group_needs_of(rs)
        self.batcher = MicroBatcher(rs, self.metrics, workers=options.workers,
                                    queue=options.queue, max_wait=options.batch_wait,
                                    max_batch_rows=options.max_batch_rows,
                                    whole_groups=bool(self.whole_groups))
        self._open = 0
        self._open_lock = threading.Lock()
        self._all_closed = threading.Condition(self._open_lock)
        #: connections still reading their request (a drain stops them)
        self._reading: set[socket.socket] = set()
        self._reads_closed = False
        self.allow_reuse_port = options.reuse_port
        super().__init__((options.host, options.port), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for the connection, or (over ``max_connections`` open at once: idle or
        slow clients holding threads) a 503 written from here and the socket closed."""
        with self._open_lock:
            refuse = self._open >= self.options.max_connections
            if not refuse:
                self._open += 1
        if refuse:  # answered from a thread of its own: the accept loop goes on
            self.metrics.request("other", 503, 0.0)
            threading.Thread(target=self._refuse, args=(request,), daemon=True,
                             name="rewardkit-serve-refuse").start()
            return
        # not the stdlib mixin's thread list, which it scans at every accept (2,000 live
        # connections: 2,000 checks an accept); the drain waits for the count of open
        # connections instead. Thread.start returns once the thread runs, which paces the
        # accept loop: threads started without that wait (_thread) all contended at once
        # for the interpreter, 2,000 of them (25 s of system CPU for one burst, measured)
        threading.Thread(target=self.process_request_thread, args=(request, client_address),
                         daemon=True, name="rewardkit-serve-connection").start()

    def server_close(self) -> None:
        """Stop listening, then wait until every connection's thread is done (the drain)."""
        super().server_close()
        with self._all_closed:
            while self._open:
                self._all_closed.wait()

    def _refuse(self, request: socket.socket) -> None:
        try:
            request.settimeout(1.0)
            request.sendall(_REFUSED % self.options.retry_after)
        except OSError:
            pass
        _linger_close(request, LINGER_SECONDS)

    def shutdown_request(self, request: Any) -> None:
        """Close a connection the handler is done with, reading off what the client
        still sends first (a body the server refused unread), so it is not reset."""
        _linger_close(request, LINGER_SECONDS)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        except BaseException as exc:  # no signal reaches this thread: a bug
            print(f"rewardkit serve: request from {client_address[0]} failed: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        finally:
            with self._open_lock:
                self._open -= 1
                self._reading.discard(request)
                if not self._open:
                    self._all_closed.notify_all()

    def reading(self, sock: socket.socket, still: bool) -> None:
        """Note that ``sock`` is (``still``) or is no longer reading its request."""
        with self._open_lock:
            if not still:
                self._reading.discard(sock)
            elif self._reads_closed:  # accepted just before the loop stopped
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RD)
            else:
                self._reading.add(sock)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed (the client went away, a read timed out): one line,
        not the traceback socketserver prints."""
        exc = sys.exception()
        if not isinstance(exc, OSError):
            print(f"rewardkit serve: request from {client_address[0]} failed: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    def drain(self) -> None:
        """Refuse new work, and stop accepting once the loop sees it (from any thread
        but the one running :meth:`serve_forever`)."""
        self.batcher.drain()
        threading.Thread(target=self._stop, name="rewardkit-serve-drain").start()

    def _stop(self) -> None:
        # once no connection is accepted any more, one still sending its request is not
        # waited for: shutting its read side ends the read, answered 503 (here, not in
        # the signal handler: the lock may be held by the code the handler interrupted)
        self.shutdown()
        with self._open_lock:
            self._reads_closed = True
            for sock in self._reading:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RD)


class _Handler(BaseHTTPRequestHandler):
    server: RewardServer
    server_version = "rewardkit-serve"
    # the headers and the body go out in two writes: without TCP_NODELAY the body waits
    # for the client's delayed ACK of the headers (40 ms a request on a kept-alive
    # connection, measured)
    disable_nagle_algorithm = True
    # keep-alive: a drain closes the idle connections (their reads are shut), see _stop
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.rfile.close()
        self.reader = _RequestReader(self.connection, self.server)
        self.rfile = io.BufferedReader(self.reader)
        self.answered = 0

    def handle_one_request(self) -> None:
        self.server.reading(self.connection, True)
        if self.answered:
            self.reader.next_request()
        super().handle_one_request()
        self.answered += 1

    def handle(self) -> None:
        try:
            super().handle()
        except _ReadStopped as stop:  # in the request line or the headers
            self.close_connection = True
            self._answer_unread(stop)
            self.server.metrics.request("other", stop.code, 0.0)

    def _answer_unread(self, stop: _ReadStopped) -> None:
        try:
            self.connection.settimeout(self.server.options.read_timeout)
            self.connection.sendall(_raw_answer(stop.code, stop.message,
                                                self.server.options.retry_after))
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        return  # one line per request would swamp a trainer's logs; /metrics counts them

    def _send(self, code: int, body: Any, *, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else render(body)
        self.server.reading(self.connection, False)
        self.connection.settimeout(self.server.options.read_timeout)  # a client not reading
        if self.server.batcher.draining:
            self.close_connection = True
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.server.options.instance is not None:
            self.send_header("X-Rewardkit-Instance", str(self.server.options.instance))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, message: str, headers: dict[str, str] | None = None) -> int:
        self._send(code, {"error": message}, headers=headers)
        return code

    def _authorized(self) -> bool:
        token = self.server.options.token
        return token is None or token_matches(self.headers.get("Authorization", ""), token)

    def do_GET(self) -> None:
        self.server.reading(self.connection, False)
        started = time.perf_counter()
        path = urlsplit(self.path).path
        if path == "/health":
            draining = self.server.batcher.draining
            m = self.server.metrics
            code = 503 if draining else 200
            health = {"status": "draining" if draining else "ok",
                      "components": self.server.rs.names,
                      "in_flight": m.in_flight, "queued": m.queued}
            opts = self.server.options
            if opts.instance is not None:  # one of --instances N: which one answered
                health.update(instance=opts.instance, instances=opts.instances,
                              pid=os.getpid())
            self._send(code, health)
        elif not self._authorized():
            code = self._unauthorized()
        elif path == "/metrics":
            code = 200
            self._send(200, self.server.metrics.render().encode(),
                       content_type="text/plain; version=0.0.4; charset=utf-8")
        else:
            code = self._error(404, f"no such endpoint: GET {path} (GET /health, /metrics)")
        self.server.metrics.request(path if code != 404 else "other", code,
                                    time.perf_counter() - started)

    def _unauthorized(self) -> int:
        return self._error(401, "missing or wrong token (Authorization: Bearer TOKEN, or the "
                           "token as the password of the URL: http://rk:TOKEN@host/...)",
                           {"WWW-Authenticate": "Bearer"})

    def do_POST(self) -> None:
        started = time.perf_counter()
        parts = urlsplit(self.path)
        endpoint = parts.path.rstrip("/") or "/"
        code = self._post(endpoint, parts.query)
        self.server.metrics.request(endpoint if endpoint in ENDPOINTS else "other", code,
                                    time.perf_counter() - started)

    def _post(self, endpoint: str, query: str) -> int:
        opts = self.server.options
        if endpoint not in ENDPOINTS:
            self.close_connection = True
            return self._error(404, f"no such endpoint: POST {endpoint} "
                               f"(POST {', '.join(ENDPOINTS)})")
        if not self._authorized():
            self.close_connection = True
            return self._unauthorized()
        header = self.headers.get("Content-Length")
        if header is None:
            self.close_connection = True  # a body, if any, is not read
            return self._error(411, "Content-Length is required")
        length = whole_number(header)
        if length is None:
            self.close_connection = True
            return self._error(400, f"bad Content-Length: {_shown(header)} (expected a "
                               "whole number of bytes in ASCII digits, at most 2**63-1)")
        if length > opts.max_body_bytes:
            self.close_connection = True  # the body is never read
            return self._error(413, f"body of {length:,} bytes is over the limit of "
                               f"{opts.max_body_bytes:,} (--max-body-bytes)")
        try:
            body = self.rfile.read(length)
        except _ReadStopped as stop:
            self.close_connection = True
            headers = {"Retry-After": str(opts.retry_after)} if stop.code == 503 else None
            return self._error(stop.code, stop.message, headers)
        if len(body) < length:
            self.close_connection = True
            return self._error(400, f"the body ended after {len(body)} of {length} bytes")
        self.server.reading(self.connection, False)
        try:
            step = _query_step(query)
            batch = parse_body(endpoint, body, step, opts.end_strings)
        except ShapeError as exc:
            return self._error(400, str(exc))
        if endpoint != "/score" and (opts.native_only or self.server.whole_groups):
            return self._error(400, whole_group_note(self.server.whole_groups)
                               if self.server.whole_groups else
                               "this service was started with --native-only: POST /score")
        if endpoint != "/score" and self.server.routed:
            why = unrouted_row(batch, self.server.routed)
            if why:
                return self._error(400, why)
        if batch.size > opts.max_rows:
            return self._error(413, f"{batch.size} rows is over the limit of "
                               f"{opts.max_rows} (--max-rows); send smaller batches")
        entry = self.server.batcher.submit(batch.rows, batch.step) if batch.rows else None
        if batch.rows and entry is None:
            why = "shutting down" if self.server.batcher.draining else \
                "busy: the queue is full"
            return self._error(503, f"{why}; retry later",
                               {"Retry-After": str(opts.retry_after)})
        try:
            result = self.server.batcher.result(entry) if entry is not None else None
        except ScoringFailed as exc:
            return self._error(500, f"scoring failed: {exc}")
        self.server.metrics.scored(result.metrics if result is not None else None,
                                   unmatched=len(batch.unmatched))
        self._send(200, answer(batch, result, opts.null_reward))
        return 200


def _shown(text: str) -> str:
    """``text`` quoted for an error message, cut to a readable length."""
    return repr(text) if len(text) <= 40 else f"{text[:30]!r}... ({len(text):,} characters)"


def _query_step(query: str) -> int | None:
    values = parse_qs(query).get("step")
    if not values:
        return None
    step = whole_number(values[-1])
    if step is None:
        raise ShapeError(f"'step' in the query string must be a whole number from 0 to "
                         f"2**63-1 in ASCII digits, got {_shown(values[-1])}")
    return step


def token_matches(authorization: str, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``token``, compared in constant time:
    ``Bearer <token>``, or HTTP Basic with the token as the password and any user name
    (what aiohttp, OpenRLHF's and slime's client, sends for ``http://user:TOKEN@host/``)."""
    scheme, _, value = authorization.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.encode("ascii"), validate=True).decode("utf-8")
        except (ValueError, UnicodeError):  # binascii.Error is a ValueError
            return False
        _, colon, given = decoded.partition(":")
        if not colon:
            return False
    elif scheme.lower() == "bearer":
        given = value
    else:
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def read_token(token_file: str | None) -> str | None:
    """The bearer token: the file's content (stripped), else ``REWARDKIT_SERVE_TOKEN``,
    else None (no token: keep the service on 127.0.0.1 or a private network)."""
    if token_file is not None:
        token = Path(token_file).read_text(encoding="utf-8").strip()
        if not token:
            raise ValueError(f"--token-file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV, "").strip() or None


def build_server(rs: RewardSet, options: ServeOptions) -> RewardServer:
    """A bound server (``port`` 0: a free port, read it from ``server_address``)."""
    return RewardServer(rs, options)


def run_server(server: RewardServer, port_file: str | None = None) -> None:
    """Serve until SIGTERM or SIGINT, then drain (in-flight batches are answered) and
    close. ``port_file`` gets the bound port once the server accepts connections."""
    def on_signal(signum: int, frame: Any) -> None:
        print(f"rewardkit serve: {signal.Signals(signum).name}: finishing "
              f"{server.metrics.in_flight + server.metrics.queued} request(s), "
              "refusing new ones", file=sys.stderr, flush=True)
        server.drain()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    files_note = raise_open_files(server.options.max_connections)
    if files_note:
        print(f"rewardkit serve: warning: {files_note}", file=sys.stderr, flush=True)
    host, port = server.server_address[:2]
    if port_file:
        tmp = Path(f"{port_file}.tmp")
        tmp.write_text(f"{port}\n", encoding="utf-8")
        tmp.replace(port_file)
    opts = server.options
    if opts.instance is not None:
        print(f"rewardkit serve: instance {opts.instance} of {opts.instances} (pid "
              f"{os.getpid()}):", file=sys.stderr, flush=True)
    print(f"rewardkit serve: http://{host!s}:{port} (POST /score /openrlhf /slime, "
          f"GET /health /metrics; {opts.workers} worker(s), queue {opts.queue}; batches "
          f"of up to {opts.max_batch_rows} rows, waiting at most "
          f"{opts.batch_wait * 1000:g} ms)", file=sys.stderr, flush=True)
    print(f"rewardkit serve: stripped from the end of responses on /openrlhf and /slime: "
          f"{' '.join(server.options.end_strings) or 'nothing (--no-strip)'}",
          file=sys.stderr, flush=True)
    if server.routed:
        print(f"rewardkit serve: warning: {routing_note(server.routed)}; on /openrlhf and "
              "/slime a request whose rows carry none of those keys gets 400",
              file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()  # waits for the connections' threads: the drain
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("rewardkit serve: stopped", file=sys.stderr, flush=True)


