"""``rewardkit serve CONFIG``: the composed reward as an HTTP service.

For trainers that call a reward over HTTP (OpenRLHF ``--reward.remote_url``, slime
``--rm-type remote_rm --rm-url``) and for reward CPUs kept apart from GPU nodes. It scores with the
same :class:`~rewardkit.reward_set.RewardSet`, fault model and metrics as ``rewardkit
score``. The modules, one concern each:

- :mod:`~rewardkit.serve.shapes`: the request and response bodies of each endpoint (the
  native ``/score``, OpenRLHF's ``/openrlhf``, slime's ``/slime``), checked into rows;
- :mod:`~rewardkit.serve.endings`: the end-of-sequence and pad strings stripped from the
  trainers' responses;
- :mod:`~rewardkit.serve.metrics`: the counters ``GET /metrics`` prints (Prometheus text);
- :mod:`~rewardkit.serve.batching`: micro-batching: the rows of requests that arrive
  together scored in one call, each request answered its own; the bounded queue (503
  with ``Retry-After`` beyond it);
- :mod:`~rewardkit.serve.server`: the HTTP server: request size (413), the token,
  keep-alive, graceful shutdown on SIGTERM.
- :mod:`~rewardkit.serve.instances`: ``--instances N``: N servers on one port
  (``SO_REUSEPORT``), supervised (restarted when one dies, drained together).
"""

from __future__ import annotations

from rewardkit.serve.server import ServeOptions, build_server, run_server

__all__ = ["ServeOptions", "build_server", "run_server"]
