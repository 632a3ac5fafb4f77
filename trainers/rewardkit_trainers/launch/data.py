"""Datasets for training runs: read rows, and write them in each backend's format.

Rows are read from ``.jsonl``, ``.json`` (a list of rows) or ``.parquet`` files, or
generated (``{generate: quickstart}``). Every backend gets the same rows:

* TRL: a ``datasets.Dataset`` with ``prompt`` (text or chat messages), the reference
  column and the other columns (TRL passes them to the reward functions).
* ms-swift: JSONL with ``messages`` (system/user turns) plus the reference as
  ``solution`` and the other columns (ms-swift passes them to ORMs as kwargs).
* EasyR1: parquet with ``problem`` (the user text; EasyR1 renders it with the
  ``format_prompt`` Jinja file) and ``answer`` (the reference, as text).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rewardkit import ConfigError, prompt_text

from rewardkit_trainers.config import DatasetSpec, GeneratedData, TrainConfig, resolve


def read_rows(path: str | Path, source: str = "<config>", key: str = "train.dataset.train"
              ) -> list[dict[str, Any]]:
    """Rows of a ``.jsonl`` / ``.json`` / ``.parquet`` file (a ConfigError if unreadable)."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(source, [(key, f"file not found: {p}")])
    suffix = p.suffix.lower()
    try:
        if suffix == ".jsonl":
            with p.open(encoding="utf-8") as fh:
                return [json.loads(line) for line in fh if line.strip()]
        if suffix == ".json":
            data = json.loads(p.read_text(encoding="utf-8"))
            if isinstance(data, dict) and "data" in data:
                data = data["data"]
            if not isinstance(data, list):
                raise ValueError("expected a JSON list of rows")
            return [dict(r) for r in data]
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(p).to_pylist()
    except (OSError, ValueError) as exc:
        raise ConfigError(source, [(key, f"cannot read {p}: {exc}")]) from None
    raise ConfigError(source, [(key, f"unsupported file type {suffix!r} "
                                     "(use .jsonl, .json or .parquet)")])


def materialise(train: TrainConfig, config_file: str | Path | None, out_dir: Path
                ) -> tuple[Path, Path | None]:
    """The train (and test) files of a run, generating them into ``out_dir`` if needed."""
    spec = train.dataset
    if isinstance(spec.train, GeneratedData):
        from rewardkit_trainers.quickstart import write_splits

        return write_splits(spec.train, out_dir / "data")
    test = resolve(spec.test, config_file) if spec.test else None
    return resolve(spec.train, config_file), test


def normalise_rows(rows: Iterable[dict[str, Any]], spec: DatasetSpec) -> list[dict[str, Any]]:
    """Rows with ``prompt`` (system prompt applied) and the reference column in place."""
    out = []
    for row in rows:
        row = dict(row)
        if spec.prompt_column != "prompt":
            row["prompt"] = row.pop(spec.prompt_column, "")
        if spec.system_prompt:
            prompt = row.get("prompt", "")
            if isinstance(prompt, str):
                prompt = [{"role": "user", "content": prompt}]
            if not prompt or prompt[0].get("role") != "system":
                prompt = [{"role": "system", "content": spec.system_prompt}, *prompt]
            row["prompt"] = prompt
        out.append(row)
    return out


def system_text(prompt: Any) -> str | None:
    if isinstance(prompt, list):
        for m in prompt:
            if isinstance(m, dict) and m.get("role") == "system":
                return str(m.get("content", ""))
    return None


def to_swift_jsonl(rows: Iterable[dict[str, Any]], spec: DatasetSpec, path: Path) -> Path:
    """ms-swift GRPO rows: ``messages`` + ``solution`` (the reference) + other columns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            prompt = row.get("prompt", "")
            messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            out: dict[str, Any] = {"messages": messages}
            for key, value in row.items():
                if key == "prompt":
                    continue
                out["solution" if key == spec.reference_column else key] = value
            fh.write(json.dumps(out, ensure_ascii=False) + "\n")
    return path


def to_easyr1_parquet(rows: Iterable[dict[str, Any]], spec: DatasetSpec, path: Path) -> Path:
    """EasyR1 rows: ``problem`` (user text) and ``answer``: the reference, the row's number
    (the prompt id) and its other columns, packed as JSON
    (:func:`rewardkit_trainers.rewards.easyr1.pack_answer`), since EasyR1 hands the reward only the
    response and this cell, in an order of its own."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rewardkit_trainers.rewards.easyr1 import pack_answer

    problems, answers = [], []
    for i, row in enumerate(rows):
        problems.append(prompt_text(row.get("prompt", ""), turns="last_user"))
        others = {k: v for k, v in row.items() if k not in ("prompt", spec.reference_column)}
        answers.append(pack_answer(row.get(spec.reference_column), i, others))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"problem": problems, "answer": answers}), path)
    return path


def easyr1_template(rows: list[dict[str, Any]], spec: DatasetSpec, path: Path) -> Path:
    """The ``format_prompt`` Jinja file: the prompt template, with the system prompt
    folded in (EasyR1 sends only the rendered user turn)."""
    template = spec.prompt_template
    system = spec.system_prompt or (system_text(rows[0].get("prompt")) if rows else None)
    if system and "{{" in template:
        template = f"{system}\n{template}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(template + "\n", encoding="utf-8")
    return path


def to_verl_parquet(rows: Iterable[dict[str, Any]], spec: DatasetSpec, path: Path,
                    split: str = "train") -> Path:
    """verl RL rows: ``data_source``, ``prompt`` (chat messages), ``ability``,
    ``reward_model`` (``{"style": "rule", "ground_truth": ...}``) and ``extra_info``
    (index, the user text as ``prompt``, the other columns as JSON text)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out: dict[str, list[Any]] = {"data_source": [], "prompt": [], "ability": [],
                                 "reward_model": [], "extra_info": []}
    for i, row in enumerate(rows):
        prompt = row.get("prompt", "")
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        ref = row.get(spec.reference_column)
        others = {k: v for k, v in row.items() if k not in ("prompt", spec.reference_column)}
        out["data_source"].append(str(row.get("data_source", "rewardkit")))
        out["prompt"].append([{"role": str(m.get("role", "user")),
                               "content": prompt_text([m])} for m in messages])
        out["ability"].append(str(row.get("task", "rewardkit")))
        out["reward_model"].append({"style": "rule", "ground_truth":
                                    ref if isinstance(ref, str) else json.dumps(ref)})
        out["extra_info"].append({"split": split, "index": i,
                                  "prompt": prompt_text(prompt, turns="last_user"),
                                  "metadata": json.dumps(others, default=str)})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(out), path)
    return path
