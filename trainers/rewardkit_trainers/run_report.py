"""What a training run leaves for ``rewardkit report``: its scored samples and the page.

A :class:`ScoredSampleLog` keeps the samples the reward scored during training (a
bounded number of whole groups per step, from steps spread evenly over the whole run), in
the rows ``rewardkit score`` writes plus their ``step`` and ``group``;
at the end of the run :func:`write_run_report` writes ``scored_samples.jsonl``,
``rewards.yaml`` (the reward config) and ``report.html`` next to the reward curves.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from rewardkit.config import RewardConfig
from rewardkit.reward_set import RewardSet, ScoreResult
from rewardkit.types import Sample

#: rows kept per step and in all (a report of a long run shows a sample of it: every
#: step's rows while they fit, then every 2nd step's, every 4th's ...)
PER_STEP = 64
LIMIT = 20_000
#: results remembered to tell a batch already recorded (one per component at most)
SEEN = 16


class ScoredSampleLog:
    """The scored samples of a run, recorded from the scorer all components share.

    Each row gets a ``group``: ``"<step>:<batch>:<k>"``, the k-th run of
    ``num_generations`` rows of the step's batch-th scored batch. That is how the trainer
    groups them (TRL lays a batch out as each prompt's G completions in a row and takes
    the advantage over ``rewards.view(-1, G)``), so a prompt drawn twice in one step is
    two groups, not one of 2G.

    The log never holds more than ``limit`` rows and always spans the whole run: it keeps
    the steps that are multiples of ``stride`` (1 at first); when the next step's rows
    would not fit, the stride doubles and the rows of the steps off it are dropped. A run
    of 600 steps of 64 rows under the 20,000 cap keeps steps 0, 2, 4 ... 598 (19,200 rows),
    not steps 0 to 312.
    """

    def __init__(self, per_step: int = PER_STEP, limit: int = LIMIT,
                 num_generations: int = 1) -> None:
        self.per_step = per_step
        self.limit = limit
        self.num_generations = max(1, num_generations)
        self.rows: list[dict[str, Any]] = []
        #: the rows kept are those of the steps that are multiples of it
        self.stride = 1
        self._per_step: dict[int, int] = {}
        self._batches: dict[int, int] = {}
        #: the last results recorded, held so that their ids cannot be reused: the next
        #: component asks the scorer for the same batch and gets the same result object
        self._seen: deque[ScoreResult] = deque(maxlen=SEEN)
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
            if any(result is seen for seen in self._seen):  # asked for by the next component
                return
            self._seen.append(result)
            size = self.num_generations
            batch = self._batches.get(step, 0)
            self._batches[step] = batch + 1
            wanted = min(self.per_step - self._per_step.get(step, 0), len(samples))
            wanted = max(0, wanted) // size * size  # whole groups only
            while (wanted and step % self.stride == 0 and self.stride <= step
                   and len(self.rows) + wanted > self.limit):
                self.stride *= 2  # keep every other step kept so far
                self.rows = [r for r in self.rows if r["step"] % self.stride == 0]
            room = wanted if step % self.stride == 0 else 0
            room = min(room, max(0, self.limit - len(self.rows)) // size * size)
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
