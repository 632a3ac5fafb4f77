"""HTTP for remote runners: one deadline per request, ``Retry-After`` honoured, answers capped.

``urllib``'s ``timeout`` bounds each socket read, so a server that trickles one byte a
second (a slow-loris, an overloaded proxy) holds a sample for as long as it likes.
Here each attempt has one wall-clock deadline: a timer shuts the socket down when it
passes, whatever phase the exchange is in (connect, headers, body).  ``429`` and ``503``
are retried after their ``Retry-After`` (seconds or an HTTP date) when that wait fits
``max_retry_wait_s``, and the wait also pauses the node's request budget, so every
process backs off together.  Everything that goes wrong is a ``RemoteError`` with a
sentence for people; runners turn it into ``Status.SANDBOX_ERROR``.
"""

from __future__ import annotations

import base64
import contextlib
import email.utils
import http.client
import json
import socket
import threading
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from rewardkit_sandbox.budget import Ticket

#: statuses that mean "not now": retried after their Retry-After (or a back-off)
RETRIED_STATUSES = frozenset({429, 503})


class RemoteError(Exception):
    """A request that gave no usable answer (unreachable, timed out, refused, garbled)."""


@dataclass(frozen=True)
class HttpAnswer:
    """A complete answer: its status, headers (lower-case names) and body."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON; ``RemoteError`` when it is not."""
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError) as error:  # RecursionError: nested too deep
            raise RemoteError(f"invalid JSON ({error}): {self.body[:200]!r}") from None


@dataclass
class RequestLog:
    """What the requests of one run cost beyond the work: retries and their waits."""

    requests: int = 0
    retries: int = 0
    retry_wait_s: float = 0.0
    statuses: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class HttpClient:
    """Sends JSON requests for one provider (``name`` appears in every error)."""

    name: str
    headers: Mapping[str, str] = field(default_factory=dict)
    max_retries: int = 3
    max_retry_wait_s: float = 30.0
    max_answer_bytes: int = 64 * 1024 * 1024

    def request(
        self,
        method: str,
        url: str,
        *,
        timeout_s: float,
        body: Any = None,
        ticket: Ticket | None = None,
        log: RequestLog | None = None,
    ) -> HttpAnswer:
        """One exchange (retried on 429/503), each attempt within ``timeout_s``.

        With a ``ticket`` every attempt after the first takes a request token of its
        budget (the first was taken with the slot; a run's later requests take theirs
        explicitly with ``ticket.take_token()``).  A non-2xx answer raises ``RemoteError``.
        """
        log = log if log is not None else RequestLog()
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", **self.headers}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(self.max_retries + 1):
            if attempt and ticket is not None:
                ticket.take_token()
            log.requests += 1
            answer = self._exchange(method, url, data, headers, timeout_s)
            log.statuses.append(answer.status)
            if 200 <= answer.status < 300:
                return answer
            if answer.status not in RETRIED_STATUSES:
                raise RemoteError(f"{self.name} answered HTTP {answer.status}: {_excerpt(answer)}")
            wait = retry_after_s(answer.headers.get("retry-after"), attempt)
            if wait > self.max_retry_wait_s:
                raise RemoteError(
                    f"{self.name} is rate limiting (HTTP {answer.status}, Retry-After "
                    f"{wait:.0f} s, more than the {self.max_retry_wait_s:g} s a run waits)"
                )
            if attempt == self.max_retries:
                break
            if ticket is not None:
                ticket.budget.pause(wait)
            log.retries += 1
            log.retry_wait_s += wait
            time.sleep(wait)
        raise RemoteError(
            f"{self.name} still answered HTTP {log.statuses[-1]} after "
            f"{self.max_retries} retries ({log.retry_wait_s:.1f} s of waiting)"
        )

    def _exchange(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str], timeout_s: float
    ) -> HttpAnswer:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RemoteError(f"{self.name}: not an http(s) URL: {url!r}")
        connection, path, headers = _connection(parts, url, headers, timeout_s)
        expired = threading.Event()
        watchdog = threading.Timer(timeout_s, _shut, (connection, expired))
        watchdog.daemon = True
        watchdog.start()
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            body = self._body(response)
            answer_headers = {key.lower(): value for key, value in response.getheaders()}
            if expired.is_set():  # the deadline passed as the last byte came in
                raise TimeoutError
            return HttpAnswer(response.status, answer_headers, body)
        except RemoteError:
            raise
        except (OSError, http.client.HTTPException, ValueError) as error:
            if expired.is_set() or isinstance(error, TimeoutError):
                raise RemoteError(
                    f"{self.name} gave no complete answer within {timeout_s:g} s ({url})"
                ) from None
            if isinstance(error, http.client.HTTPException):
                raise RemoteError(
                    f"{self.name} sent a broken answer: {type(error).__name__} {error}"
                ) from None
            raise RemoteError(f"{self.name} unreachable at {url}: {error}") from None
        finally:
            watchdog.cancel()
            connection.close()

    def _body(self, response: http.client.HTTPResponse) -> bytes:
        """The whole body, at most ``max_answer_bytes``; one cut short of its
        Content-Length (the server closed early) is a broken answer, not a short one."""
        pieces: list[bytes] = []
        size = 0
        while piece := response.read(min(1 << 16, self.max_answer_bytes + 1 - size)):
            pieces.append(piece)
            size += len(piece)
            if size > self.max_answer_bytes:
                raise RemoteError(f"{self.name} answer over {self.max_answer_bytes} bytes")
        if response.length:  # bytes the headers promised that never came
            raise RemoteError(
                f"{self.name} sent a broken answer: the body ended {response.length} bytes "
                "short of its Content-Length"
            )
        return b"".join(pieces)


def _connection(
    parts: SplitResult, url: str, headers: dict[str, str], timeout_s: float
) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """The connection, request target and headers for ``url``, through the proxy that
    ``http(s)_proxy`` / ``no_proxy`` name for it, as ``urllib`` would choose it."""
    https = parts.scheme == "https"
    kind = http.client.HTTPSConnection if https else http.client.HTTPConnection
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return kind(parts.hostname or "", parts.port, timeout=timeout_s), target, headers
    via = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    auth = {}
    if via.username:
        pair = f"{unquote(via.username)}:{unquote(via.password or '')}".encode()
        auth["Proxy-Authorization"] = "Basic " + base64.b64encode(pair).decode()
    if https:  # a CONNECT tunnel through the proxy, TLS to the service inside it
        connection = kind(via.hostname or "", via.port or 80, timeout=timeout_s)
        connection.set_tunnel(parts.hostname or "", parts.port or 443, headers=auth)
        return connection, target, headers
    plain = http.client.HTTPConnection(via.hostname or "", via.port or 80, timeout=timeout_s)
    return plain, url, {**headers, **auth}


def _shut(connection: http.client.HTTPConnection, expired: threading.Event) -> None:
    """At the deadline: end the exchange whatever it is blocked on."""
    expired.set()
    sock = connection.sock
    if sock is not None:
        # the plain socket call: also right under TLS, whose reader then fails
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


def retry_after_s(value: str | None, attempt: int) -> float:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date);
    without a usable one, a back-off of 0.5, 1, 2, ... s by attempt."""
    if value:
        value = value.strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            when = None
        if when is not None and when.tzinfo is not None:
            return max(0.0, when.timestamp() - time.time())
    return 0.5 * 2**attempt


def _excerpt(answer: HttpAnswer) -> str:
    return answer.body[:300].decode(errors="replace").strip() or "(no body)"
