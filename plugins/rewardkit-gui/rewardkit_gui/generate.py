"""Write a synthetic TV-menu navigation dataset for vision-language GRPO (EasyR1 layout).

Command line::

    python -m rewardkit_gui.generate --out data/gui --samples 1600 --seed 0
    python -m rewardkit_gui.generate --out data/gui --samples 200 --seed 1 --split val

writes, under ``--out``:

- ``images/<split>-00000.png`` ...: the screenshots, focused button highlighted;
- ``<split>.parquet``: columns ``images`` (list of ``{bytes, path}``, the PNG embedded,
  which EasyR1's dataset loader opens from ``bytes``), ``problem`` (``<image>`` then
  the instruction) and ``answer`` (``{"action": ["UP", ...]}``);
- ``<split>.jsonl``: the same rows with ``images`` as paths relative to ``--out``
  (EasyR1: set ``data.image_dir`` to the output folder).

The same arguments give byte-identical files. Needs Pillow and pyarrow
(``pip install 'rewardkit-gui[generate]'``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardkit_gui.menu import MenuTask, make_tasks

PROMPT = "<image>The highlighted button has the focus. {instruction}"


@dataclass(frozen=True)
class GeneratedDataset:
    """What :func:`generate_dataset` wrote."""

    parquet: Path
    jsonl: Path
    images: tuple[Path, ...]

    @property
    def rows(self) -> int:
        return len(self.images)


def problem_text(task: MenuTask) -> str:
    """The ``problem`` column of a task: the image placeholder and the instruction."""
    return PROMPT.format(instruction=task.instruction)


def answer_text(task: MenuTask) -> str:
    """The ``answer`` column of a task: its gold action list as JSON."""
    return json.dumps({"action": list(task.actions)})


def generate_dataset(
    out_dir: str | Path,
    samples: int,
    seed: int = 0,
    *,
    split: str = "train",
    noise: float = 0.3,
    image_size: tuple[int, int] = (640, 360),
) -> GeneratedDataset:
    """Generate ``samples`` tasks, render them and write parquet + JSONL under ``out_dir``.

    Deterministic: the same arguments give byte-identical files. ``noise`` in [0, 1]
    scales the visual variation and the share of replaced labels (half of ``noise``).
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from rewardkit_gui.render import png_bytes, render_task
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"the GUI dataset generator needs Pillow and pyarrow ({exc.name} is missing); "
            "install them with: pip install 'rewardkit-gui[generate]'"
        ) from exc
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise must be within [0, 1], got {noise}")
    if not split or any(ch in split for ch in "/\\") or split.startswith("."):
        raise ValueError(f"split must be a plain name like 'train', got {split!r}")

    out = Path(out_dir)
    (out / "images").mkdir(parents=True, exist_ok=True)
    tasks = make_tasks(samples, seed, replace_prob=0.5 * noise)
    render_rng = random.Random(f"render:{seed}")

    image_paths: list[Path] = []
    parquet_images: list[list[dict[str, Any]]] = []
    jsonl_lines: list[str] = []
    for i, task in enumerate(tasks):
        relative = f"images/{split}-{i:05d}.png"
        data = png_bytes(render_task(task, render_rng, size=image_size, noise=noise))
        (out / relative).write_bytes(data)
        image_paths.append(out / relative)
        parquet_images.append([{"bytes": data, "path": relative}])
        row = {"images": [relative], "problem": problem_text(task), "answer": answer_text(task)}
        jsonl_lines.append(json.dumps(row, ensure_ascii=False))

    image_type = pa.list_(pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    table = pa.table(
        {
            "images": pa.array(parquet_images, type=image_type),
            "problem": pa.array([problem_text(t) for t in tasks], type=pa.string()),
            "answer": pa.array([answer_text(t) for t in tasks], type=pa.string()),
        }
    )
    parquet_path = out / f"{split}.parquet"
    pq.write_table(table, parquet_path)
    jsonl_path = out / f"{split}.jsonl"
    jsonl_path.write_text("".join(line + "\n" for line in jsonl_lines), encoding="utf-8")
    return GeneratedDataset(parquet_path, jsonl_path, tuple(image_paths))


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: ``python -m rewardkit_gui.generate --out DIR --samples N``."""
    parser = argparse.ArgumentParser(
        prog="python -m rewardkit_gui.generate",
        description="Write a synthetic TV-menu navigation dataset (PNG screenshots, "
        "parquet and JSONL with EasyR1's images/problem/answer columns).",
    )
    parser.add_argument("--out", required=True, help="output folder (created if missing)")
    parser.add_argument("--samples", type=int, default=1600, help="number of rows (1600)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (0)")
    parser.add_argument("--split", default="train", help="file name stem: train, val... (train)")
    parser.add_argument(
        "--noise", type=float, default=0.3, help="variation in [0, 1]: speckles, layout "
        "jitter, replaced labels (0.3)",
    )
    args = parser.parse_args(argv)
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    try:
        result = generate_dataset(
            args.out, args.samples, args.seed, split=args.split, noise=args.noise
        )
    except (ValueError, ImportError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {result.rows} rows: {result.parquet}, {result.jsonl}, "
          f"{result.rows} images under {Path(args.out) / 'images'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
