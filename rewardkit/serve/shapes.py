"""The bodies each endpoint of ``rewardkit serve`` reads and writes.

Every request body is one JSON object; what it must hold depends on the endpoint:

- ``POST /score`` (native): ``{"samples": [row, ...], "step": N}``, each row as a line of
  ``rewardkit score`` reads it (``prompt``, ``completion``, ``reference``, other keys =
  metadata); the answer holds each row's total and components and the batch's metrics.
- ``POST /openrlhf``: what OpenRLHF's remote reward client posts, ``{"query": [...],
  "prompts": [...], "labels": [...]}`` (``query`` is the prompt followed by the response;
  ``prompts`` and ``labels`` are absent in its older releases; from v0.10.2 one sample a
  request, and with several URLs the others get an empty shard, answered with empty
  lists); it reads ``rewards``.
- ``POST /slime``: what slime's ``remote_rm`` posts for one sample, ``{"prompt": ...,
  "response": ..., "label": ...}``; it takes the whole answer as the reward, so the
  answer is a bare number.

An OpenRLHF query that does not begin with its prompt (a decode that does not round-trip)
is not scored whole: the prompt would be graded with it, and a few-shot prompt holds
graded answers, so a response of nothing would be paid. It is left out of the batch
(:attr:`Batch.unmatched`) and answered as a null total.

A trainer's shape cannot carry a null reward (OpenRLHF makes a tensor of the list,
slime adds the number up): a sample whose total is null gets ``null_reward`` there (and
the service counts it); the native answer keeps the null. The step comes from the body
(native) or the query string (``?step=N``, any endpoint). A body that breaks these rules
raises :class:`ShapeError`, whose message the service returns with status 400.

Neither trainer sends metadata, so a component routed by metadata (``when: {task: math}``)
would skip every row of theirs and the trainer would get the fallback for all of them:
:func:`unrouted_row` finds a row of such a request that carries none of the keys the
routing reads (the service refuses the request, 400), :func:`routing_note` says it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardkit.authoring import whole_group_needs
from rewardkit.reward_set import RewardSet, ScoreResult
from rewardkit.scoring.rows import row_problem, scored_row
from rewardkit.serve.endings import strip_end

ENDPOINTS = ("/score", "/openrlhf", "/slime")
#: the largest step (and Content-Length) read: a signed 64-bit integer
MAX_WHOLE_NUMBER = 2**63 - 1
#: row keys that are not metadata
_NOT_METADATA = ("prompt", "completion", "reference")


class ShapeError(ValueError):
    """A request body the endpoint cannot score (answered with 400 and this message)."""


@dataclass
class Batch:
    """What a request asks to score: the rows, at which step, for which endpoint, and
    the positions (in the request) of the items not scored, answered as null totals."""

    endpoint: str
    rows: list[dict[str, Any]]
    step: int
    unmatched: list[int] = field(default_factory=list)

    @property
    def size(self) -> int:
        """Items in the request (scored or not)."""
        return len(self.rows) + len(self.unmatched)


def _no_constant(name: str) -> Any:
    raise ShapeError(f"not standard JSON: {name}")


def parse_body(endpoint: str, body: bytes, step: int | None,
               end_strings: Sequence[str] = ()) -> Batch:
    """The rows of ``body`` for ``endpoint`` (one of :data:`ENDPOINTS`); ``step`` is the
    query string's, if it gave one. On the trainers' endpoints each response loses the
    ``end_strings`` it ends with (:func:`~rewardkit.serve.endings.strip_end`)."""
    try:
        data = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise ShapeError(f"the body is not UTF-8 (byte {exc.start + 1})") from None
    except json.JSONDecodeError as exc:
        raise ShapeError(f"the body is not JSON ({exc.msg} at line {exc.lineno} "
                         f"column {exc.colno})") from None
    except RecursionError:
        raise ShapeError("the body is nested too deeply") from None
    except ShapeError:  # NaN, Infinity (a ValueError too)
        raise
    except ValueError:  # an integer over Python's limit of 4,300 digits
        raise ShapeError("the body holds a number too long to read (over 4,300 digits)"
                         ) from None
    if not isinstance(data, dict):
        raise ShapeError(f"the body must be a JSON object, got {type(data).__name__}")
    unmatched: list[int] = []
    if endpoint == "/score":
        rows = _native_rows(data)
        step = _step(data.get("step", 0 if step is None else step))
    elif endpoint == "/openrlhf":
        rows, unmatched = _openrlhf_rows(data, end_strings)
    else:
        rows = [_slime_row(data, end_strings)]
    return Batch(endpoint, rows, 0 if step is None else _step(step), unmatched)


def whole_number(text: str) -> int | None:
    """``text`` as a whole number from 0 to :data:`MAX_WHOLE_NUMBER` written in ASCII
    digits, else None (``str.isdigit`` also takes '²' and other digits ``int`` refuses,
    and ``int`` refuses more than 4,300 digits)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 19:
        return None
    value = int(text)
    return value if value <= MAX_WHOLE_NUMBER else None


def _step(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not \
            0 <= value <= MAX_WHOLE_NUMBER:
        shown = json.dumps(value)
        shown = shown if len(shown) <= 40 else f"{shown[:30]}... ({len(shown):,} characters)"
        raise ShapeError(f"'step' must be a whole number from 0 to 2**63-1, got {shown}")
    return value


def routed_components(rs: RewardSet) -> dict[str, list[str]]:
    """Each component routed by metadata (``when``) and the keys its routing reads."""
    return {name: sorted(c.when) for name, c in rs.components.items() if c.when}


def whole_group_needs_of(rs: RewardSet) -> list[tuple[str, str]]:
    """Why ``rs`` cannot score a response without the rest of its group (empty: it can):
    :func:`rewardkit.authoring.whole_group_needs` of its config."""
    return whole_group_needs(rs.config.aggregate,
                             {name: c.reward_class for name, c in rs.components.items()})


def whole_group_note(needs: Sequence[tuple[str, str]]) -> str:
    """What a config that needs whole groups means for the per-sample endpoints."""
    why = "; ".join(f"{key}: {reason}" for key, reason in needs)
    return (f"this config needs each prompt's whole group ({why}), and /openrlhf and "
            "/slime receive one sample per request: scored alone, every sample would be "
            "paid as a group of one (0.0 under normalize_then_sum, right or wrong). Send "
            "each group whole, its rows carrying 'group', to POST /score (rewardkit serve "
            "--native-only), or serve a config without normalize_then_sum and group rewards")


def routing_note(routed: Mapping[str, list[str]]) -> str:
    """What a config routed by metadata means for the trainers' endpoints."""
    parts = ", ".join(f"{name} (when: {', '.join(keys)})" for name, keys in routed.items())
    return (f"components routed by metadata: {parts}; OpenRLHF and slime send no metadata, "
            "so on their endpoints these components would skip every row and the trainer "
            "would get --null-reward for them")


def unrouted_row(batch: Batch, routed: Mapping[str, list[str]]) -> str | None:
    """Why ``batch`` cannot be scored as its trainer means (a row carrying none of the
    metadata keys the routing reads), else None."""
    keys = {key for keys in routed.values() for key in keys}
    for row in batch.rows:
        if not any(key in row and key not in _NOT_METADATA for key in keys):
            where = "the sample" if batch.endpoint == "/slime" else "a query"
            return (f"{where} carries none of the metadata keys ({', '.join(sorted(keys))}) "
                    f"this config routes by: {routing_note(routed)}. Send the rows with "
                    "their metadata to POST /score (slime: a 'metadata' object in the "
                    "body), or drop when: from the config")
    return None


def _checked(row: Any, where: str) -> dict[str, Any]:
    why = row_problem(row)
    if why:
        raise ShapeError(f"{where}: {why}")
    return dict(row)


#: the keys of the native body (another is refused: a misspelt "step" would score at 0)
_NATIVE_KEYS = ("samples", "step")


def _native_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    unknown = sorted(set(data) - set(_NATIVE_KEYS))
    if unknown:
        raise ShapeError(f"unknown key(s) {', '.join(map(repr, unknown))[:200]} in the body "
                         "(it holds 'samples' and optionally 'step'; a row's own keys go "
                         "inside its sample)")
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


def _openrlhf_rows(data: Mapping[str, Any], end_strings: Sequence[str]
                   ) -> tuple[list[dict[str, Any]], list[int]]:
    queries = _strings(data, "query")  # empty: a shard of nothing (OpenRLHF, several URLs)
    prompts = _strings(data, "prompts") if data.get("prompts") is not None else None
    labels = data.get("labels")
    if labels is not None and not isinstance(labels, list):
        raise ShapeError("'labels' must be a list (one label per query)")
    for key, values in (("prompts", prompts), ("labels", labels)):
        if values is not None and len(values) != len(queries):
            raise ShapeError(f"'{key}' has {len(values)} items for {len(queries)} queries")
    rows, unmatched = [], []
    for i, query in enumerate(queries):
        prompt = prompts[i] if prompts is not None else ""
        if not query.startswith(prompt):
            unmatched.append(i)
            continue
        # the query is the prompt then the response; the completion is what follows it
        rows.append({"prompt": prompt, "completion": strip_end(query[len(prompt):],
                                                                end_strings),
                     "reference": labels[i] if labels is not None else None})
    return rows, unmatched


def _slime_row(data: Mapping[str, Any], end_strings: Sequence[str]) -> dict[str, Any]:
    if "response" not in data:
        raise ShapeError("no 'response' key (slime posts prompt, response and label)")
    response = data["response"]
    if not isinstance(response, str):
        raise ShapeError(f"'response' must be a string (slime's decoded response), got "
                         f"{type(response).__name__}")
    response = strip_end(response, end_strings)
    row = {"prompt": data.get("prompt") or "", "completion": response,
           "reference": data.get("label")}
    metadata = data.get("metadata")
    if isinstance(metadata, dict):
        row.update({k: v for k, v in metadata.items() if k not in row})
    return _checked(row, "the sample")


def _in_request_order(batch: Batch, scored: list[float | None]) -> list[float | None]:
    """``scored`` (one per row of the batch) with None at the unmatched positions."""
    values = iter(scored)
    skip = set(batch.unmatched)
    return [None if i in skip else next(values) for i in range(batch.size)]


def answer(batch: Batch, result: ScoreResult | None, null_reward: float) -> Any:
    """The JSON answer to ``batch`` scored as ``result`` (None: no row was scorable), in
    its endpoint's shape."""
    if batch.endpoint == "/score":
        assert result is not None  # native rows are all scored
        return {"step": result.step, "rewards": result.totals,
                "rows": [scored_row({}, scored) for scored in result],
                "metrics": result.metrics}

    def numbers(values: list[float | None]) -> list[float]:
        return [null_reward if v is None else v for v in _in_request_order(batch, values)]

    rewards = numbers(result.totals if result is not None else [])
    if batch.endpoint == "/slime":
        return rewards[0]
    components = result.outcomes if result is not None else {}
    return {"rewards": rewards, "scores": rewards,
            "extra_logs": {name: numbers(result.values(name)) if result else []
                           for name in components}}
