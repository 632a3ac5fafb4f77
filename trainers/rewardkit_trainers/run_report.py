"""What a training run leaves for ``rewardkit report``: its scored samples and the page.

A :class:`ScoredSampleLog` keeps the samples the reward scored during training (a
bounded number of whole groups per step), in the rows ``rewardkit score`` writes plus
their ``step`` and ``group``;
at the end of the run :func:`write_run_report` writes ``scored_samples.jsonl``,
``rewards.yaml`` (the reward config) and ``report.html`` next to the reward curves.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from rewardkit.config import RewardConfig
from rewardkit.reward_set import RewardSet, ScoreResult
from rewardkit.types import Sample

#: rows kept per step and in all (a report of a long run shows a sample of it)
PER_STEP = 64
LIMIT = 20_000


class ScoredSampleLog:
    """The scored samples of a run, recorded from the scorer all components share.

    Each row gets a ``group``: ``"<step>:<batch>:<k>"``, the k-th run of
    ``num_generations`` rows of the step's batch-th scored batch. That is how the trainer
    groups them (TRL lays a batch out as each prompt's G completions in a row and takes
    the advantage over ``rewards.view(-1, G)``), so a prompt drawn twice in one step is
    two groups, not one of 2G.
    """

    def __init__(self, per_step: int = PER_STEP, limit: int = LIMIT,
                 num_generations: int = 1) -> None:
        self.per_step = per_step
        self.limit = limit
        self.num_generations = max(1, num_generations)
        self.rows: list[dict[str, Any]] = []
        self._per_step: dict[int, int] = {}
        self._batches: dict[int, int] = {}
        self._seen: set[int] = set()
        self._lock = threading.Lock()

    def watch(self, scorer: Any) -> None:
        """Record every batch ``scorer.score(samples, step)`` scores from now on."""
        score = scorer.score

        def recording_score(samples: Sequence[Sample], step: int) -> ScoreResult:
            result: ScoreResult = score(samples, step)
            self.record(step, samples, result)
            return result

        scorer.score = recording_score

    def record(self, step: int, samples: Sequence[Sample], result: ScoreResult) -> None:
        with self._lock:
            if id(result) in self._seen:  # the same batch, asked for by the next component
                return
            self._seen.add(id(result))
            size = self.num_generations
            room = min(self.per_step - self._per_step.get(step, 0), self.limit - len(self.rows))
            room = max(0, room) // size * size  # whole groups only
            batch = self._batches.get(step, 0)
            self._batches[step] = batch + 1
            for i, sample in enumerate(samples[:room]):
                scored = result[i]
                components: dict[str, dict[str, Any]] = {}
                for name, s in scored.scores.items():
                    entry: dict[str, Any] = {"value": s.value, "status": str(s.status),
                                             "reason": s.reason}
                    seconds = result.outcomes[name].sample_seconds.get(i)
                    if seconds is not None:  # timed alone (process mode)
                        entry["latency_ms"] = round(seconds * 1000, 3)
                    components[name] = entry
                self.rows.append({
                    "step": step, "prompt": sample.prompt, "completion": sample.completion,
                    "reference": sample.reference, **_plain(sample.metadata),
                    "group": f"{step}:{batch}:{i // size}",
                    "reward": scored.total, "components": components,
                })
            self._per_step[step] = self._per_step.get(step, 0) + min(room, len(samples))

    def write(self, path: Path) -> Path:
        with path.open("w", encoding="utf-8") as fh:
            for row in self.rows:
                fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        return path


def _plain(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata that fits a JSON line (images and other blobs become their type name)."""
    out = {}
    for key, value in metadata.items():
        if key in ("step", "prompt", "completion", "reference", "group", "reward", "components"):
            key = f"metadata.{key}"
        out[key] = value if isinstance(value, str | int | float | bool | type(None) | list
                                       | dict) else f"<{type(value).__name__}>"
    return out


def write_run_report(output_dir: Path, log: ScoredSampleLog, reward_config: RewardConfig,
                     curves: Sequence[dict[str, float]], steps: int) -> Path | None:
    """Write the run's scored samples, its reward config and ``report.html``."""
    from rewardkit.report import RUN_CONFIG, RUN_SAMPLES, build_report

    if not log.rows:
        return None
    log.write(output_dir / RUN_SAMPLES)
    kept = reward_config.model_dump(mode="json", exclude_none=True,
                                    exclude={"train", "eval", "sagemaker"})
    (output_dir / RUN_CONFIG).write_text(yaml.safe_dump(kept, sort_keys=False),
                                         encoding="utf-8")
    page = build_report(log.rows, title=f"rewardkit training run: {output_dir.name}",
                        source=str(output_dir), reward_set=RewardSet(reward_config),
                        steps=steps, curves=curves)
    path = output_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
