"""EasyR1's reward: a batch reward file (``compute_score``) and the packed ``answer`` column.

``rewardkit export easyr1 CONFIG -o reward.py`` writes a file EasyR1 loads with
``worker.reward.reward_function=reward.py:compute_score``. EasyR1 (``verl/workers/
reward/function.py``) imports it with ``spec_from_file_location``, reads
``REWARD_TYPE = "batch"``, and calls ``compute_score(reward_inputs,
**reward_function_kwargs)`` with ``reward_inputs = [{"response", "response_length",
"ground_truth"}, ...]``. Each returned dict has ``overall`` (what trains), one key per
component and ``<component>_failed`` (0/1: its mean is the failure rate), under
``on_error: null`` also ``imputed_group_share`` (:func:`score_batch`), the same keys
every call, all numbers (EasyR1 averages each key into a metric).

Lengths in tokens: EasyR1 passes each response's token count (``response_length``) but
not its ids, so ``unit: tokens`` lengths (overlong_penalty, cosine_scaled, group_length)
use that count (``metadata["completion_length"]``); token n-grams
(``repetition_penalty``) need the reward's ``tokenizer`` parameter.

The prompt a response answers and the row's columns travel in the ``answer`` column
(:func:`pack_answer`): EasyR1 passes nothing else and reorders the batch before scoring.

Multi-turn: EasyR1 (at hiyouga/EasyR1 b44b311) rolls out one generation per prompt (vLLM
SPMD, no agent or tool loop), so the response is text: rewards that read a trajectory
(tool calls, turns) and ``finish_reason`` / ``truncated`` (the row's recorded values are
dropped: they describe a dataset completion, not this rollout) give status error.

EasyR1 passes no step, so the file is pinned to one step (``STEP``): stages and
schedules are evaluated there. ``rewardkit train`` with ``backend: easyr1`` runs one job
(a *segment*) per reward stage, each with its own pinned file, each resuming from the
previous segment's last checkpoint (:mod:`rewardkit_trainers.launch.easyr1`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rewardkit import Sample, Status
from rewardkit.config import RewardConfig
from rewardkit.text.lengths import COMPLETION_LENGTH
from rewardkit.types import group_key

from rewardkit_trainers.fidelity import group_needs
from rewardkit_trainers.rewards.scoring import (
    SharedScorer,
    config_literal,
    imputed_group_share,
    neutralise_failed_rows,
)
from rewardkit_trainers.rewards.verl import ROLLOUT_COLUMNS  # a plain module: no verl import

#: marks an ``answer`` cell packed by :func:`pack_answer` (reference, prompt id, metadata)
PACKED = "rewardkit/v1"


def pack_answer(reference: Any, prompt_id: int, metadata: Mapping[str, Any]) -> str:
    """The ``answer`` cell EasyR1 hands back as ``ground_truth``: JSON carrying the
    reference, the prompt's id and the row's other columns.

    EasyR1's reward inputs hold only ``response``, ``response_length`` and
    ``ground_truth``, and it reorders the batch (``_balance_batch``) before scoring, so
    the prompt a response answers and the row's metadata must travel inside the answer.
    """
    return json.dumps({PACKED: True, "reference": reference, "prompt_id": prompt_id,
                       "metadata": dict(metadata)}, ensure_ascii=False, default=str)


def unpack_answer(ground_truth: Any) -> tuple[Any, Any, dict[str, Any]] | None:
    """(reference, prompt id, metadata) from a packed answer; None for a plain one."""
    if not isinstance(ground_truth, str) or PACKED not in ground_truth:
        return None
    try:
        data = json.loads(ground_truth)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get(PACKED) is not True:
        return None
    return data.get("reference"), data.get("prompt_id"), dict(data.get("metadata") or {})


def score_batch(scorer: SharedScorer, reward_inputs: Sequence[Mapping[str, Any]], step: int,
                fallback: float = 0.0, **ignored: Any) -> list[dict[str, float]]:
    """EasyR1 batch scores for ``reward_inputs`` at ``step``.

    Groups (per-group rewards, ``normalize_then_sum``, masking failed rows) come from the
    prompt id packed in the ground truth (:func:`pack_answer`), never from positions:
    EasyR1 reorders the batch. A config that needs groups or metadata on a batch whose
    ground truths are not packed raises :class:`GroupsUnknown`.

    A failed row (``on_error: null``) gets its group's mean ``overall``: EasyR1's GRPO
    advantage and reward manager offer no way to leave a row out (the reward only fills
    the last token's score; a NaN would spread to the whole group), so the row stays in
    the group's sample std, and the other rows' advantages are ``sqrt((n - 1) / (k - 1))``
    times a mask's (:func:`~rewardkit_trainers.rewards.scoring.neutralise_failed_rows`).
    """
    samples = _batch_samples(scorer, reward_inputs)
    result = scorer.reward_set.score(samples, step=step)
    groups = [group_key(s) for s in samples]  # as the scoring groups them
    failed = scorer.null_rows(result)
    names = scorer.names
    columns = {name: result.scores(name) for name in names}
    totals: list[float | None] = list(result.totals)
    if failed:
        # a failed row's total becomes its group's mean: GRPO gives it zero advantage
        totals = neutralise_failed_rows(totals, groups, failed)
    imputing = scorer.config.on_error == "null"
    if imputing and IMPUTED_SHARE in names:
        raise ValueError(f"rewardkit EasyR1 reward: a component named {IMPUTED_SHARE!r} "
                         "clashes with the metric key of that name; rename the component")
    # every row carries the batch's share, so EasyR1's mean of the key is that share
    share = imputed_group_share(groups, failed)
    out = []
    for i, total in enumerate(totals):
        row: dict[str, float] = {"overall": fallback if total is None else float(total)}
        for name in names:
            sc = columns[name][i]
            bad = sc.status in (Status.ERROR, Status.TIMEOUT)
            row[name] = float(sc.value) if sc.value is not None else (fallback if bad else 0.0)
            row[f"{name}_failed"] = 1.0 if bad else 0.0
        if imputing:
            row[IMPUTED_SHARE] = share
        out.append(row)
    return out


def _batch_samples(scorer: SharedScorer,
                   reward_inputs: Sequence[Mapping[str, Any]]) -> list[Sample]:
    """Samples of EasyR1's reward inputs, each in its packed prompt's group; raises
    :class:`GroupsUnknown` when some are not packed and the config needs them to be."""
    samples = []
    unpacked = 0
    for item in reward_inputs:
        packed = unpack_answer(item.get("ground_truth"))
        reference, prompt_id, metadata = packed or (item.get("ground_truth"), None, {})
        unpacked += packed is None
        for column in ROLLOUT_COLUMNS:  # the dataset row's, not this rollout's
            metadata.pop(column, None)
        metadata["response_length"] = item.get("response_length")
        if item.get("response_length") is not None:  # the policy's token count: unit tokens
            metadata[COMPLETION_LENGTH] = item["response_length"]
        sample = Sample(completion=str(item.get("response", "")), reference=reference,
                        metadata=metadata)
        if packed is not None:
            sample.group = prompt_id
        samples.append(sample)
    if unpacked and (needs := needs_prompt_identity(scorer.config)):
        raise GroupsUnknown(
            f"rewardkit EasyR1 reward: {unpacked} of {len(samples)} ground truths carry no "
            f"prompt id or metadata, but the config needs them ({'; '.join(needs)}). "
            "Pack the reference, prompt id and columns into the answer column: "
            "`python -m rewardkit_trainers.easyr1 pack data/train.parquet ...` rewrites "
            "existing EasyR1 parquet files in place (answer_key/prompt_key: --answer-key, "
            "--prompt-key), or `rewardkit train --backend easyr1 --dry-run` writes the "
            "dataset packed."
        )
    return samples


#: the score key (EasyR1 metric ``reward/imputed_group_share``) under ``on_error: null``:
#: the share of graded rows whose group held an imputed (failed) row, whose advantage
#: the imputation scales up by sqrt((n - 1) / (k - 1))
IMPUTED_SHARE = "imputed_group_share"


class GroupsUnknown(ValueError):
    """The batch does not say which prompt each response answers, and the config needs it."""


def needs_prompt_identity(config: RewardConfig) -> list[str]:
    """Why scoring ``config`` needs each response's prompt and metadata (empty: it does
    not): what needs whole groups (:func:`rewardkit_trainers.fidelity.group_needs`), and
    ``when:`` routing, which reads the row's columns."""
    reasons = [f"{key}: {why}" for key, why in group_needs(config)]
    reasons += [f"rewards.{name}.when routes on metadata"
                for name, component in config.rewards.items() if component.when]
    return reasons


_FILE_TEMPLATE = '''\
"""EasyR1 reward file generated by `rewardkit export easyr1` from {source}.

Use with:  worker.reward.reward_function={path}:compute_score
Pinned to training step {step} (EasyR1 passes no step): stages and schedules of the
config are evaluated there. Needs rewardkit and rewardkit-trainers installed.
"""

from rewardkit_trainers.rewards.easyr1 import score_batch
from rewardkit_trainers.rewards.scoring import SharedScorer

REWARD_NAME = "rewardkit"
REWARD_TYPE = "batch"
STEP = {step}
FALLBACK = {fallback!r}
CONFIG = {config}

_SCORER = SharedScorer(CONFIG)


def compute_score(reward_inputs, step=STEP, fallback=FALLBACK, **kwargs):
    """list of {{"response", "response_length", "ground_truth"}} -> list of score dicts."""
    return score_batch(_SCORER, reward_inputs, step=step, fallback=fallback, **kwargs)
'''


def export_reward_file(config: RewardConfig, config_path: Path | None, out: Path, step: int = 0,
                       fallback: float = 0.0) -> Path:
    """Write the EasyR1 reward file for ``config`` (embedded), pinned to ``step``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(_FILE_TEMPLATE.format(
        source=str(config_path.resolve()) if config_path else "<config>",
        path=out.resolve(), step=int(step), fallback=float(fallback),
        config=config_literal(config)), encoding="utf-8")
    return out


#: EasyR1 columns that are model inputs, not metadata
_INPUT_COLUMNS = frozenset({"images", "videos", "image", "video"})


def pack_parquet(path: Path, answer_key: str = "answer", prompt_key: str = "problem") -> int:
    """Pack the ``answer_key`` column of an EasyR1 parquet file in place
    (:func:`pack_answer`: the row number as prompt id, the scalar columns as metadata);
    returns the number of rows. Already packed cells are left alone."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    if answer_key not in table.column_names:
        raise ValueError(f"{path}: no {answer_key!r} column (columns: "
                         f"{', '.join(table.column_names)})")
    rows = table.to_pylist()
    packed = []
    for i, row in enumerate(rows):
        answer = row[answer_key]
        if unpack_answer(answer) is not None:
            packed.append(answer)
            continue
        metadata = {k: v for k, v in row.items()
                    if k not in (answer_key, prompt_key) and k not in _INPUT_COLUMNS
                    and (v is None or isinstance(v, str | int | float | bool))}
        packed.append(pack_answer(answer, i, metadata))
    index = table.column_names.index(answer_key)
    table = table.set_column(index, answer_key, pa.array(packed, type=pa.string()))
    pq.write_table(table, path)
    return len(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rewardkit_trainers.easyr1 pack FILE.parquet ...``."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m rewardkit_trainers.easyr1",
        description="pack: rewrite the answer column of EasyR1 parquet files so that the "
        "reward knows each response's prompt and the row's columns (EasyR1 passes only the "
        "response and the answer, in an order of its own).")
    sub = parser.add_subparsers(dest="command", required=True)
    pack = sub.add_parser("pack", help="pack the answer column in place")
    pack.add_argument("files", nargs="+", type=Path)
    pack.add_argument("--answer-key", default="answer")
    pack.add_argument("--prompt-key", default="problem")
    args = parser.parse_args(argv)
    for file in args.files:
        try:
            n = pack_parquet(file, args.answer_key, args.prompt_key)
        except (OSError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"packed {n} rows of {file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
