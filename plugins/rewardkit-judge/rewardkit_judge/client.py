"""The chat client of the endpoint judges: requests to an OpenAI-compatible chat endpoint
with a concurrency limit, a timeout on the whole request, retries with backoff, several
endpoints (one that fails is left out for a while) and the node-wide RPM / TPM buckets.

:class:`EndpointError` is how the client, and the rewards reading its answers, say that
a grading failed for good (the reward's status is then ``error``, never a 0).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any

from rewardkit import ExecutionBudget, node_budget


class EndpointError(Exception):
    """The endpoint failed for good (after retries) or answered something unusable."""


#: the longest wait a ``Retry-After`` answer is honoured for (seconds); the component's
#: ``timeout`` bounds the whole grading anyway
MAX_RETRY_AFTER = 60.0


def retry_after(value: str | None) -> float:
    """Seconds a ``Retry-After`` header asks to wait (a number of seconds or an HTTP
    date), within 0 and ``MAX_RETRY_AFTER``; 0 when absent or unreadable."""
    if not value:
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        import email.utils

        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, IndexError):
            return 0.0
    if seconds != seconds:  # NaN
        return 0.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


#: the request fields that bound the answer's tokens (OpenAI's reasoning models take
#: only the second)
TOKEN_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")
#: the most tokens an answer is believed to have used when the request sent no limit:
#: the longest answer an OpenAI model gives (gpt-5: 128,000 output tokens)
UNLIMITED_ANSWER_TOKENS = 128_000


def answer_limit(body: Mapping[str, Any]) -> tuple[str, int] | None:
    """The field bounding the answer's tokens in ``body`` and its value, or None."""
    for field in TOKEN_LIMIT_FIELDS:
        value = body.get(field)
        if isinstance(value, int) and value > 0:
            return field, value
    return None


def estimate_tokens(body: Mapping[str, Any]) -> int:
    """The API tokens a chat request may cost, before it is sent: its messages'
    characters / 4 (about a token in English text; a TPM bucket is corrected by the
    answer's ``usage`` when the endpoint reports it) plus its answer's limit
    (``max_tokens`` or ``max_completion_tokens``; none sent: nothing)."""
    chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", ())
                if isinstance(m, Mapping))
    limit = answer_limit(body)
    return chars // 4 + 1 + (limit[1] if limit else 0)


#: chat-template tokens a message may add around its content (role, separators)
_MESSAGE_OVERHEAD_TOKENS = 16


def most_tokens(body: Mapping[str, Any]) -> int:
    """The most API tokens a chat request can cost: a token per byte of its messages
    (a byte-level tokenizer's worst case), each message's template tokens, and
    ``max_tokens``. A ``usage`` reporting more is not believed (see ``tpm``)."""
    messages = [m for m in body.get("messages", ()) if isinstance(m, Mapping)]
    size = sum(len(str(m.get("content", "")).encode()) for m in messages)
    limit = answer_limit(body)
    return size + _MESSAGE_OVERHEAD_TOKENS * (len(messages) + 1) + \
        (limit[1] if limit else UNLIMITED_ANSWER_TOKENS)


def rate_budgets(endpoints: list[str], model: str, rpm: float | None,
                 tpm: float | None) -> tuple[ExecutionBudget | None, ExecutionBudget | None]:
    """The node-wide RPM and TPM buckets of these endpoints (one pair for every process of
    the user on the node that asks the same endpoints for the same model)."""
    key = hashlib.sha256(json.dumps([sorted(endpoints), model]).encode()).hexdigest()[:16]
    requests = node_budget(f"judge-{key}-rpm", slots=1, rate_per_s=rpm / 60.0) if rpm \
        else None
    tokens = node_budget(f"judge-{key}-tpm", slots=1, rate_per_s=tpm / 60.0,
                         burst=max(1.0, tpm / 60.0)) if tpm else None
    return requests, tokens


class _Endpoint:
    """One endpoint's state in a client: requests in flight, left out until when."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.in_flight = 0
        self.dead_until = 0.0
        self.failures = 0


class ChatClient:
    """Posts chat-completion requests with a concurrency limit, timeouts and retries, to
    one of several endpoints, under the node's RPM and TPM buckets.

    A request goes to a live endpoint (``round_robin`` or ``least_loaded``); one that
    refuses the connection, times out or answers 5xx is left out for
    ``dead_retry_s`` and the retry goes to another at once (when every endpoint is out,
    the one due back first is tried). A 429's ``Retry-After`` (bounded by
    ``MAX_RETRY_AFTER``) holds back every request of this client, and, with an RPM bucket,
    of every process on the node.
    Built inside the event loop that uses it (httpx clients belong to one loop).
    """

    RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
    #: answers that take an endpoint out (it is down or failing), beside connection errors
    DEAD_STATUS = frozenset({500, 502, 503, 504})

    def __init__(self, endpoints: str | list[str], concurrency: int, timeout: float,
                 retries: int, backoff: float, api_key: str | None, *,
                 policy: str = "round_robin", dead_retry_s: float = 30.0,
                 requests: ExecutionBudget | None = None,
                 tokens: ExecutionBudget | None = None) -> None:
        import httpx

        urls = [endpoints] if isinstance(endpoints, str) else list(endpoints)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(max_connections=concurrency * len(urls),
                              max_keepalive_connections=concurrency * len(urls))
        self._httpx = httpx
        self._client = httpx.AsyncClient(timeout=timeout, headers=headers, limits=limits)
        self._gate = asyncio.Semaphore(concurrency)
        self._timeout = timeout
        self._retries = retries
        self._backoff = backoff
        self._endpoints = [_Endpoint(url.rstrip("/")) for url in urls]
        self._policy = policy
        self._dead_retry_s = dead_retry_s
        self._turn = 0
        self._paused_until = 0.0
        self._requests = requests
        self._tokens = tokens
        self.requests = 0  # requests sent, retries included
        self.sent_to: dict[str, int] = {e.url: 0 for e in self._endpoints}

    def _pick(self, avoid: _Endpoint | None) -> _Endpoint:
        """The endpoint for the next attempt: a live one by the policy, not ``avoid`` (the
        one that just failed) when another is live; else the one due back first."""
        now = time.monotonic()
        live = [e for e in self._endpoints if e.dead_until <= now]
        if avoid is not None and len(live) > 1:
            live = [e for e in live if e is not avoid]
        if not live:
            return min(self._endpoints, key=lambda e: e.dead_until)
        self._turn += 1
        if self._policy == "least_loaded":
            least = min(e.in_flight for e in live)
            live = [e for e in live if e.in_flight == least]
        return live[self._turn % len(live)]

    def _dead(self, endpoint: _Endpoint) -> None:
        endpoint.failures += 1
        endpoint.dead_until = time.monotonic() + self._dead_retry_s

    async def _take(self, estimate: int) -> None:
        """Wait out a ``Retry-After`` this client was given, then for the node's RPM and
        TPM tokens of one request: each wait an ``asyncio.sleep`` on the event loop, so
        the component's timeout or a Ctrl-C ends it at once (a thread sleeping in the
        bucket would hold the interpreter's exit until the bucket paid)."""
        paused = self._paused_until - time.monotonic()
        if paused > 0:
            await asyncio.sleep(paused)
        for bucket, amount in ((self._requests, 1.0), (self._tokens, float(estimate))):
            if bucket is not None:
                while (wait := await asyncio.to_thread(bucket.try_take, amount)) > 0:
                    await asyncio.sleep(wait)

    async def complete(self, body: dict[str, Any]) -> str:
        """The assistant message's content for ``body``; raises :class:`EndpointError`."""
        delay = self._backoff
        asked = 0.0  # the wait the endpoint asked for (Retry-After)
        problem = ""
        failed: _Endpoint | None = None
        estimate = estimate_tokens(body)
        for attempt in range(self._retries + 1):
            if attempt:
                switched = failed is not None and self._pick(failed) is not failed
                # another live endpoint takes the retry at once; the same one is backed off
                await asyncio.sleep(asked if switched else max(delay, asked))
                if not switched:
                    delay *= 2
                asked = 0.0
            async with self._gate:
                endpoint = self._pick(failed)
                await self._take(estimate)
                self.requests += 1
                self.sent_to[endpoint.url] += 1
                endpoint.in_flight += 1
                where = f" {endpoint.url}" if len(self._endpoints) > 1 else ""
                try:
                    # the whole request, not each read: httpx's timeout restarts with
                    # every byte, so a server trickling its answer would hold it longer
                    response = await asyncio.wait_for(self._client.post(
                        f"{endpoint.url}/chat/completions", json=body), self._timeout)
                except (self._httpx.TimeoutException, TimeoutError):
                    problem = f"request{where and ' to' + where} timed out"
                    self._dead(endpoint)
                    failed = endpoint
                    continue
                except self._httpx.HTTPError as exc:
                    problem = (f"cannot reach the endpoint{where}: "
                               f"{type(exc).__name__}: {exc}")
                    self._dead(endpoint)
                    failed = endpoint
                    continue
                finally:
                    endpoint.in_flight -= 1
            if response.status_code in self.RETRY_STATUS:
                problem = f"endpoint{where} answered HTTP {response.status_code}"
                asked = retry_after(response.headers.get("Retry-After"))
                if response.status_code in self.DEAD_STATUS:
                    self._dead(endpoint)
                    failed = endpoint
                else:
                    failed = None
                if response.status_code == 429 and asked:
                    # every request of this client waits, and with rpm every process's
                    self._paused_until = max(self._paused_until, time.monotonic() + asked)
                    if self._requests is not None:
                        await asyncio.to_thread(self._requests.pause, asked)
                continue
            if response.status_code >= 400:
                raise EndpointError(f"endpoint answered HTTP {response.status_code}: "
                                    f"{response.text[:200]}")
            try:
                answer = response.json()
                choice = answer["choices"][0]
                content = choice["message"]["content"]
            except (ValueError, KeyError, IndexError, TypeError, RecursionError):
                raise EndpointError("endpoint answer is not a chat completion: "
                                    f"{response.text[:200]!r}") from None
            endpoint.failures = 0
            self._correct(answer, body, estimate)
            if not isinstance(content, str):
                raise EndpointError(f"chat completion content is {type(content).__name__}")
            if isinstance(choice, Mapping) and choice.get("finish_reason") == "length":
                # "Score: 10" cut to "Score: 1": what is there is not what the judge said
                field, most = answer_limit(body) or ("its length limit", None)
                raise EndpointError(
                    f"the judge's answer was cut at {field} ({most}) before it ended: "
                    f"no verdict (raise max_tokens): {content[-160:]!r}")
            return content
        raise EndpointError(f"{problem} (after {self._retries + 1} attempts)")

    def _correct(self, answer: Any, body: Mapping[str, Any], estimate: int) -> None:
        """Charge the TPM bucket the difference between the tokens the answer's ``usage``
        reports and the estimate taken (nothing when it reports none), the reported
        count bounded by what the request can have cost (:func:`most_tokens`): an
        answer claiming a billion tokens is charged the request's most."""
        usage = answer.get("usage") if isinstance(answer, Mapping) else None
        total = usage.get("total_tokens") if isinstance(usage, Mapping) else None
        if self._tokens is not None and isinstance(total, int) and \
                not isinstance(total, bool) and total >= 0:
            self._tokens.charge(float(min(total, most_tokens(body)) - estimate))
