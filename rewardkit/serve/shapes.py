"""The bodies each endpoint of ``rewardkit serve`` reads and writes.

Every request body is one JSON object; what it must hold depends on the endpoint:

- ``POST /score`` (native): ``{"samples": [row, ...], "step": N}``, each row as a line of
  ``rewardkit score`` reads it (``prompt``, ``completion``, ``reference``, other keys =
  metadata); the answer holds each row's total and components and the batch's metrics.
- ``POST /openrlhf``: what OpenRLHF's ``remote_rm_fn`` posts, ``{"query": [...],
  "prompts": [...], "labels": [...]}`` (``query`` is the prompt followed by the response;
  ``prompts`` and ``labels`` are absent in its older releases); it reads ``rewards``.
- ``POST /slime``: what slime's ``remote_rm`` posts for one sample, ``{"prompt": ...,
  "response": ..., "label": ...}``; it takes the whole answer as the reward, so the
  answer is a bare number.

A trainer's shape cannot carry a null reward (OpenRLHF makes a tensor of the list,
slime adds the number up): a sample whose total is null gets ``null_reward`` there (and
the service counts it); the native answer keeps the null. The step comes from the body
(native) or the query string (``?step=N``, any endpoint). A body that breaks these rules
raises :class:`ShapeError`, whose message the service returns with status 400.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rewardkit.reward_set import ScoreResult
from rewardkit.scoring.rows import row_problem, scored_row

ENDPOINTS = ("/score", "/openrlhf", "/slime")


class ShapeError(ValueError):
    """A request body the endpoint cannot score (answered with 400 and this message)."""


@dataclass
class Batch:
    """What a request asks to score: the rows, at which step, for which endpoint."""

    endpoint: str
    rows: list[dict[str, Any]]
    step: int


def _no_constant(name: str) -> Any:
    raise ShapeError(f"not standard JSON: {name}")


def parse_body(endpoint: str, body: bytes, step: int | None) -> Batch:
    """The rows of ``body`` for ``endpoint`` (one of :data:`ENDPOINTS`); ``step`` is the
    query string's, if it gave one."""
    try:
        data = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise ShapeError(f"the body is not UTF-8 (byte {exc.start + 1})") from None
    except json.JSONDecodeError as exc:
        raise ShapeError(f"the body is not JSON ({exc.msg} at line {exc.lineno} "
                         f"column {exc.colno})") from None
    except RecursionError:
        raise ShapeError("the body is nested too deeply") from None
    if not isinstance(data, dict):
        raise ShapeError(f"the body must be a JSON object, got {type(data).__name__}")
    if endpoint == "/score":
        rows = _native_rows(data)
        step = _step(data.get("step", 0 if step is None else step))
    elif endpoint == "/openrlhf":
        rows = _openrlhf_rows(data)
    else:
        rows = [_slime_row(data)]
    return Batch(endpoint, rows, 0 if step is None else _step(step))


def _step(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ShapeError(f"'step' must be a whole number >= 0, got {json.dumps(value)}")
    return value


def _checked(row: Any, where: str) -> dict[str, Any]:
    why = row_problem(row)
    if why:
        raise ShapeError(f"{where}: {why}")
    return dict(row)


def _native_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    samples = data.get("samples")
    if not isinstance(samples, list) or not samples:
        raise ShapeError("'samples' must be a non-empty list of rows "
                         "({\"completion\": ..., \"prompt\": ..., \"reference\": ...})")
    return [_checked(row, f"samples[{i}]") for i, row in enumerate(samples)]


def _strings(data: Mapping[str, Any], key: str) -> list[str]:
    values = data.get(key)
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ShapeError(f"'{key}' must be a list of strings")
    return values


def _openrlhf_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    queries = _strings(data, "query")
    if not queries:
        raise ShapeError("'query' is empty: nothing to score")
    prompts = _strings(data, "prompts") if data.get("prompts") is not None else None
    labels = data.get("labels")
    if labels is not None and not isinstance(labels, list):
        raise ShapeError("'labels' must be a list (one label per query)")
    for key, values in (("prompts", prompts), ("labels", labels)):
        if values is not None and len(values) != len(queries):
            raise ShapeError(f"'{key}' has {len(values)} items for {len(queries)} queries")
    rows = []
    for i, query in enumerate(queries):
        prompt = prompts[i] if prompts is not None else ""
        # the query is the prompt then the response; the completion is what follows it
        completion = query[len(prompt):] if prompt and query.startswith(prompt) else query
        rows.append({"prompt": prompt, "completion": completion,
                     "reference": labels[i] if labels is not None else None})
    return rows


def _slime_row(data: Mapping[str, Any]) -> dict[str, Any]:
    if "response" not in data:
        raise ShapeError("no 'response' key (slime posts prompt, response and label)")
    row = {"prompt": data.get("prompt") or "", "completion": data["response"],
           "reference": data.get("label")}
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        row.update({k: v for k, v in metadata.items() if k not in row})
    return _checked(row, "the sample")


def answer(batch: Batch, result: ScoreResult, null_reward: float) -> Any:
    """The JSON answer to ``batch`` scored as ``result``, in its endpoint's shape."""
    if batch.endpoint == "/score":
        return {"step": result.step, "rewards": result.totals,
                "rows": [scored_row({}, scored) for scored in result],
                "metrics": result.metrics}
    rewards = [null_reward if t is None else t for t in result.totals]
    if batch.endpoint == "/slime":
        return rewards[0]
    return {"rewards": rewards, "scores": rewards,
            "extra_logs": {name: [null_reward if v is None else v
                                  for v in result.values(name)]
                           for name in result.outcomes}}
