"""What ``GET /metrics`` of ``rewardkit serve`` reports, in the Prometheus text format.

Requests by endpoint and HTTP status, rows scored, each component's statuses (``ok``,
``skipped``, ``error``, ``timeout``: the fault model's, counted as ``rewardkit score``
counts them), totals that were null (given the trainer's fallback), OpenRLHF queries not
scored because they do not begin with their prompt, the request latency
as a histogram, the rows and requests of each scoring call (micro-batching: one
:meth:`RewardSet.score` call scores the rows of several requests), and the queue:
requests scoring now and requests waiting.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

#: upper bounds (seconds) of the latency histogram's buckets
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
#: upper bounds of the rows-per-scoring-call histogram's buckets
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class ServeMetrics:
    """Counters shared by every request thread (one lock; each update is a few adds)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, int]] = Counter()
        self.statuses: Counter[tuple[str, str]] = Counter()
        self.rows = 0
        self.null_totals = 0
        self.unmatched = 0
        self.buckets = [0] * len(LATENCY_BUCKETS)
        self.latency_sum = 0.0
        self.latency_count = 0
        self.in_flight = 0
        self.queued = 0
        self.batch_buckets = [0] * len(BATCH_BUCKETS)
        self.batch_rows = 0
        self.batch_requests = 0
        self.batches = 0

    def request(self, endpoint: str, code: int, seconds: float) -> None:
        """One answered request (any status) and how long it took."""
        with self._lock:
            self.requests[(endpoint, code)] += 1
            self.latency_sum += seconds
            self.latency_count += 1
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    self.buckets[i] += 1

    def batch(self, rows: int, requests: int) -> None:
        """One :meth:`RewardSet.score` call: its rows and the requests they came from."""
        with self._lock:
            self.batches += 1
            self.batch_rows += rows
            self.batch_requests += requests
            for i, bound in enumerate(BATCH_BUCKETS):
                if rows <= bound:
                    self.batch_buckets[i] += 1

    def scored(self, metrics: dict[str, Any] | None, unmatched: int = 0) -> None:
        """A scored batch, from its :attr:`ScoreResult.metrics` (None: no row scored),
        and its ``unmatched`` items (answered as null totals, not scored)."""
        with self._lock:
            self.unmatched += unmatched
            self.null_totals += unmatched
            if metrics is None:
                return
            self.rows += metrics["samples"]
            self.null_totals += metrics["total"]["null"]
            for name, m in metrics["components"].items():
                for status, n in m["count"].items():
                    self.statuses[(name, status)] += n

    def render(self) -> str:
        """The Prometheus text exposition of every counter."""
        with self._lock:
            lines = ["# HELP rewardkit_serve_requests_total Requests answered, by endpoint "
                     "and HTTP status.", "# TYPE rewardkit_serve_requests_total counter"]
            lines += [f'rewardkit_serve_requests_total{{endpoint="{_label(ep)}",'
                      f'code="{code}"}} {n}' for (ep, code), n in sorted(self.requests.items())]
            lines += ["# HELP rewardkit_serve_rows_total Rows scored.",
                      "# TYPE rewardkit_serve_rows_total counter",
                      f"rewardkit_serve_rows_total {self.rows}",
                      "# HELP rewardkit_serve_null_totals_total Rows whose total was null "
                      "(trainer shapes answer the fallback).",
                      "# TYPE rewardkit_serve_null_totals_total counter",
                      f"rewardkit_serve_null_totals_total {self.null_totals}",
                      "# HELP rewardkit_serve_unmatched_prompts_total OpenRLHF queries not "
                      "scored: they do not begin with their prompt.",
                      "# TYPE rewardkit_serve_unmatched_prompts_total counter",
                      f"rewardkit_serve_unmatched_prompts_total {self.unmatched}",
                      "# HELP rewardkit_serve_component_status_total Component scores, by "
                      "status.", "# TYPE rewardkit_serve_component_status_total counter"]
            lines += [f'rewardkit_serve_component_status_total{{component="{_label(c)}",'
                      f'status="{s}"}} {n}' for (c, s), n in sorted(self.statuses.items())]
            lines += ["# HELP rewardkit_serve_request_seconds Request latency.",
                      "# TYPE rewardkit_serve_request_seconds histogram"]
            lines += [f'rewardkit_serve_request_seconds_bucket{{le="{bound:g}"}} {n}'
                      for bound, n in zip(LATENCY_BUCKETS, self.buckets, strict=True)]
            lines += [f'rewardkit_serve_request_seconds_bucket{{le="+Inf"}} '
                      f"{self.latency_count}",
                      f"rewardkit_serve_request_seconds_sum {self.latency_sum:.6f}",
                      f"rewardkit_serve_request_seconds_count {self.latency_count}",
                      "# HELP rewardkit_serve_batch_rows Rows per scoring call (the rows "
                      "of every request in the batch).",
                      "# TYPE rewardkit_serve_batch_rows histogram"]
            lines += [f'rewardkit_serve_batch_rows_bucket{{le="{bound}"}} {n}'
                      for bound, n in zip(BATCH_BUCKETS, self.batch_buckets, strict=True)]
            lines += [f'rewardkit_serve_batch_rows_bucket{{le="+Inf"}} {self.batches}',
                      f"rewardkit_serve_batch_rows_sum {self.batch_rows}",
                      f"rewardkit_serve_batch_rows_count {self.batches}",
                      "# HELP rewardkit_serve_batch_requests_total Requests scored, summed "
                      "over the scoring calls (divided by the calls: requests per call).",
                      "# TYPE rewardkit_serve_batch_requests_total counter",
                      f"rewardkit_serve_batch_requests_total {self.batch_requests}",
                      "# HELP rewardkit_serve_in_flight Requests being scored now.",
                      "# TYPE rewardkit_serve_in_flight gauge",
                      f"rewardkit_serve_in_flight {self.in_flight}",
                      "# HELP rewardkit_serve_queue_depth Requests waiting for a worker.",
                      "# TYPE rewardkit_serve_queue_depth gauge",
                      f"rewardkit_serve_queue_depth {self.queued}"]
        return "\n".join(lines) + "\n"
