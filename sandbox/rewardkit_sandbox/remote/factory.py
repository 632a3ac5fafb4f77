"""A remote runner from a reward's settings: which provider, its options, its budget.

Rewards name a runner (``sandboxfusion``, ``piston``, ``judge0``, ``e2b``) and give an
endpoint, a language, limits and a dict of provider options; ``check_remote_settings``
says at config time what is wrong with them, ``build_remote_runner`` makes the client,
under the node's ``ExecutionBudget`` for that provider and endpoint.  (Not imported by
``rewardkit_sandbox.remote`` itself: it needs ``runners``, which needs ``remote``.)
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from rewardkit_sandbox.budget import node_budget
from rewardkit_sandbox.remote.base import RemoteOptions, RemoteRunner
from rewardkit_sandbox.remote.e2b import COMMANDS as E2B_LANGUAGES
from rewardkit_sandbox.remote.e2b import E2BRunner
from rewardkit_sandbox.remote.judge0 import Judge0Runner
from rewardkit_sandbox.remote.piston import PistonRunner
from rewardkit_sandbox.remote.sandbox_fusion import SandboxFusionRunner

#: ``runner_options`` that are fields of every runner's ``RemoteOptions``
_SHARED = frozenset({"request_timeout_s", "max_retry_wait_s", "max_wait_s"})
#: options every remote runner takes
_COMMON = _SHARED | {"api_key_header"}
#: per runner: the options it takes beyond the common ones, and its default endpoint
REMOTE_RUNNERS: dict[str, tuple[frozenset[str], str | None]] = {
    "sandboxfusion": (frozenset(), None),
    "piston": (frozenset({"version", "compile_timeout_s"}), None),
    "judge0": (frozenset({"language_id"}), None),
    "e2b": (frozenset({"template", "sandbox_url", "domain", "internet"}), "https://api.e2b.app"),
}
#: the header an API key goes in, unless ``api_key_header`` says otherwise
_KEY_HEADERS = {
    "sandboxfusion": "Authorization",
    "piston": "Authorization",
    "judge0": "X-Auth-Token",
    "e2b": "X-API-Key",
}


#: the most seconds a time option may say: past an hour a run is not waiting, it is lost
_MOST_SECONDS = 3600.0
#: what each option's value must be: (kind, lowest, lowest allowed itself, highest)
_OPTION_VALUES: dict[str, tuple[str, float, bool, float]] = {
    "request_timeout_s": ("seconds", 0.0, False, _MOST_SECONDS),
    "max_retry_wait_s": ("seconds", 0.0, True, _MOST_SECONDS),
    "max_wait_s": ("seconds", 0.0, True, _MOST_SECONDS),
    "compile_timeout_s": ("seconds", 0.0, False, 600.0),
    "language_id": ("integer", 1, True, 1_000_000),
    "version": ("text", 0, True, 0),
    "template": ("text", 0, True, 0),
    "domain": ("text", 0, True, 0),
    "sandbox_url": ("url", 0, True, 0),
    "api_key_header": ("header", 0, True, 0),
    "internet": ("boolean", 0, True, 0),
}
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")


def option_problem(name: str, value: Any) -> str | None:
    """Why ``runner_options.<name>`` cannot be ``value`` (its type or range), or None.

    >>> print(option_problem("request_timeout_s", -1))
    runner_options.request_timeout_s must be a number of seconds above 0 and at most 3600 (got -1)
    >>> option_problem("max_wait_s", 30) is None
    True
    """
    kind, low, low_ok, high = _OPTION_VALUES[name]
    where = f"runner_options.{name}"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "seconds":
        above = f"{'at least' if low_ok else 'above'} {low:g}"
        fits = number and math.isfinite(value) and (value >= low if low_ok else value > low)
        if not fits or value > high:
            return f"{where} must be a number of seconds {above} and at most {high:g} " \
                f"(got {value!r})"
    elif kind == "integer":
        if type(value) is not int or not low <= value <= high:
            return f"{where} must be a whole number from {low:g} to {high:g} (got {value!r})"
    elif kind == "boolean":
        if not isinstance(value, bool):
            return f"{where} must be true or false (got {value!r})"
    elif not isinstance(value, str) or not value.strip():
        return f"{where} must be a non-empty text (got {value!r})"
    elif kind == "url" and not value.startswith(("http://", "https://")):
        return f"{where} must be an http(s) URL (got {value!r})"
    elif kind == "header" and not _HEADER_NAME.match(value):
        return f"{where} must be an HTTP header name such as X-Auth-Token (got {value!r})"
    return None


def check_remote_settings(
    runner: str, endpoint: str | None, language: str, options: Mapping[str, Any]
) -> None:
    """``ValueError`` (for people) when these settings cannot make a ``runner``."""
    if runner not in REMOTE_RUNNERS:
        raise ValueError(f"unknown remote runner {runner!r} (one of {', '.join(REMOTE_RUNNERS)})")
    extra, default = REMOTE_RUNNERS[runner]
    url = urlsplit(endpoint or default or "")
    if url.scheme not in ("http", "https") or not url.netloc:
        raise ValueError(
            f"runner {runner} needs endpoint: the server's http(s) URL (got {endpoint!r})"
        )
    unknown = sorted(set(options) - _COMMON - extra)
    if unknown:
        allowed = ", ".join(sorted(_COMMON | extra))
        raise ValueError(f"runner {runner} has no option {', '.join(unknown)} (it takes {allowed})")
    for name, value in options.items():
        problem = option_problem(name, value)
        if problem:
            raise ValueError(problem)
    if runner == "e2b" and language.lower() not in E2B_LANGUAGES:
        raise ValueError(f"the e2b runner runs {', '.join(E2B_LANGUAGES)}; not {language!r}")


def build_remote_runner(
    runner: str,
    *,
    endpoint: str | None,
    language: str,
    run_timeout_s: float,
    memory_limit_mb: int | None,
    stop_on_first_failure: bool,
    slots: int,
    requests_per_s: float | None,
    api_key_env: str | None,
    options: Mapping[str, Any],
) -> RemoteRunner:
    """The client for ``runner``, sharing the node-wide budget of its endpoint.

    Raises ``ValueError`` when ``api_key_env`` names an unset variable (E2B: always
    needs one, ``E2B_API_KEY`` by default).
    """
    check_remote_settings(runner, endpoint, language, options)
    base = (endpoint or REMOTE_RUNNERS[runner][1] or "").rstrip("/")
    options = dict(options)
    key_header = str(options.pop("api_key_header", _KEY_HEADERS[runner]))
    key_name = api_key_env or ("E2B_API_KEY" if runner == "e2b" else None)
    key = os.environ.get(key_name) if key_name else None
    if key_name and not key:
        raise ValueError(f"runner {runner} needs an API key in ${key_name} (it is not set)")
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", urlsplit(base).netloc)
    headers = {}
    if key and runner != "e2b":  # E2B sends its key as its own X-API-Key
        bearer = key_header.lower() == "authorization" and " " not in key
        headers[key_header] = f"Bearer {key}" if bearer else key
    settings = RemoteOptions(
        language=language,
        run_timeout_s=run_timeout_s,
        memory_limit_mb=memory_limit_mb,
        stop_on_first_failure=stop_on_first_failure,
        headers=headers,
        budget=node_budget(f"{runner}-{host}", slots=slots, rate_per_s=requests_per_s),
        **{name: options.pop(name) for name in _SHARED & set(options)},
    )
    if runner == "e2b":
        assert key is not None
        return E2BRunner(key, settings, api_url=base, **options)
    if runner == "piston":
        return PistonRunner(base, settings, **options)
    if runner == "judge0":
        return Judge0Runner(base, settings, **options)
    return SandboxFusionRunner(base, settings)
