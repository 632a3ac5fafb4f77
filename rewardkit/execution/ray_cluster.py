"""Joining or starting a Ray cluster: Ray imported on demand, and its authentication mode
decided once for every Ray process rewardkit starts or joins.

Ray 2.60 decides alone when ``RAY_AUTH_MODE`` is unset: a new local ``ray.init()``
cluster turns token authentication on and writes ``~/.ray/auth_token``, and from then on
every ``ray start`` on that machine (and every ``ray.init()`` that finds a running local
cluster) turns it on too, because the file exists. Two processes of one job, one with
the file in its home folder and one without, then disagree and never connect
(``Unauthenticated: InvalidAuthToken``). So rewardkit never leaves the mode to Ray: the
mode the environment sets is kept (``RAY_AUTH_MODE=token`` with ``RAY_AUTH_TOKEN`` or
``RAY_AUTH_TOKEN_PATH``, the same on every node), else it is ``disabled``, whatever the
home folder holds. Used by the local Ray engine (``rewardkit score --engine ray``), the
Ray executor (``executor: ray``) and the SageMaker multi-node bootstrap.

Ray is imported only by :func:`import_ray` and :func:`init_ray`: the decision itself
works where Ray is absent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

#: the variable Ray reads its authentication mode from (``disabled`` or ``token``)
AUTH_MODE_ENV = "RAY_AUTH_MODE"
#: the mode when the environment sets none
DEFAULT_AUTH_MODE = "disabled"


class RayUnavailableError(RuntimeError):
    """Ray is not installed, or the cluster cannot be reached."""


def import_ray() -> Any:
    """The ``ray`` module; :class:`RayUnavailableError` with the install line when absent."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailableError(
            "executor: ray needs Ray: pip install 'rewardkit[ray]'") from exc
    return ray


def with_auth_mode(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with Ray's authentication mode decided: the one it sets, else ``disabled``
    (never Ray's own choice from a ``~/.ray/auth_token`` that may exist on one machine
    and not on another)."""
    if env.get(AUTH_MODE_ENV):
        return dict(env)
    return {**env, AUTH_MODE_ENV: DEFAULT_AUTH_MODE}


def decide_auth_mode() -> str:
    """Decide the mode for this process and the Ray processes it starts (they inherit
    its environment): sets ``RAY_AUTH_MODE`` in ``os.environ`` when unset, and returns
    the mode."""
    mode = with_auth_mode(os.environ)[AUTH_MODE_ENV]
    os.environ[AUTH_MODE_ENV] = mode
    return mode


def init_ray(address: str | None) -> None:
    """``ray.init(address)`` under the decided authentication mode (a new local cluster
    when ``address`` is None and no running one is found), the driver's logs kept off
    the caller's output."""
    import ray

    decide_auth_mode()
    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
