"""``rewardkit eval``: generate on a test split and score with the composed reward.

Reports, per model (the base model and the trained one): accuracy (share of prompts
whose accuracy component reaches its maximum, or whose total is positive when no such
component exists), for every component the share of prompts it paid in full (so
correctness and format read apart: a policy that learned the layout but not the
answer shows format 100%, accuracy 0%), and the mean value of every component and of
the total. SEEDS B reads 11% -> 41% this way.

Generation uses vLLM when it is installed and a GPU is present (``use_vllm: auto``),
else transformers' ``generate`` (greedy at ``temperature: 0``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rewardkit import ConfigError, RewardSet, Sample
from rewardkit.config import load_config

from rewardkit_trainers.config import (
    EvalConfig,
    Expected,
    GeneratedData,
    TrainConfig,
    parse_eval,
    resolve,
)
from rewardkit_trainers.launch.data import normalise_rows, read_rows
from rewardkit_trainers.launch.hardware import apply_cpu_plan, cpu_plan, passive_waits

_ACCURACY_NAMES = ("accuracy", "correctness", "correct", "acc")


def accuracy_component(names: list[str], chosen: str | None) -> str | None:
    """The component that decides correctness (explicit, or a conventional name)."""
    if chosen:
        return chosen
    return next((n for n in names if n.lower() in _ACCURACY_NAMES), None)


def evaluate_config(config: str | Path, model: str | None = None,
                    base_model: str | None = None, split: str | None = None,
                    limit: int | None = None, include_base: bool = True) -> dict[str, Any]:
    """Evaluate the base and trained models of a config; returns the report dict."""
    import time

    passive_waits()  # before torch loads
    started = time.monotonic()
    path = Path(config)
    reward_config = load_config(path)
    source = str(path)
    ev = reward_config.section("eval") or parse_eval(None, source)
    train = reward_config.section("train")
    rows = _test_rows(path, ev, train, split)
    if limit or ev.limit:
        rows = rows[: (limit or ev.limit)]
    reward_set = RewardSet(reward_config)
    acc_name = accuracy_component(reward_set.names, ev.accuracy_component)
    if acc_name is not None and acc_name not in reward_set.names:
        raise ConfigError(source, [("eval.accuracy_component",
                                    f"no component {acc_name!r} (have {reward_set.names})")])
    models: list[tuple[str, str]] = []
    out_dir = resolve(train.output_dir, path) if train else None
    base = base_model or ev.base_model or _base_model(train, out_dir)
    trained = model or ev.model or (str(out_dir / "final") if out_dir else None)
    if include_base and base:
        models.append(("base", base))
    if trained:
        models.append(("trained", trained))
    if not models:
        raise ConfigError(source, [("eval.model", "no model to evaluate: set eval.model or "
                                                  "train.model, or pass --model")])
    step = train.max_steps if train and train.max_steps else 0
    report: dict[str, Any] = {"rows": len(rows), "accuracy_component": acc_name,
                              "step": step, "models": {}}
    for label, name in models:
        if not _exists(name):
            report["models"][label] = {"model": name, "error": "not found (train first?)"}
            continue
        sampled = [row for row in rows for _ in range(ev.samples)]
        completions = generate(name, sampled, ev)
        report["models"][label] = {"model": name,
                                   **score_completions(reward_set, sampled, completions,
                                                       acc_name, step, train,
                                                       per_prompt=ev.samples)}
    report["seconds"] = round(time.monotonic() - started, 1)
    if ev.expected is not None:
        report["expected"] = expected_verdict(ev.expected, report["models"].get("trained"))
    from rewardkit_trainers.quickstart import is_built

    report["ran_on"] = _ran_on(tiny=all(is_built(name) for _, name in models))
    return report


def expected_verdict(expected: Expected, trained: dict[str, Any] | None) -> dict[str, Any]:
    """``eval.expected`` against the trained model's accuracy: the range, where it was
    measured, and ``in_range`` (None when there is no trained figure)."""
    low, high = expected.accuracy
    value = (trained or {}).get("accuracy")
    accuracy = None if value is None or math.isnan(value) else float(value)
    return {"accuracy": [low, high], "measured": expected.measured,
            "trained_accuracy": accuracy,
            "in_range": None if accuracy is None else low <= round(accuracy, 4) <= high}


def _ran_on(tiny: bool) -> str:
    """``the GPU`` or the CPU plan's words (``2 cores, 1 thread, load 2.3``)."""
    import torch

    return "the GPU" if torch.cuda.is_available() else cpu_plan(tiny=tiny).describe()


def _exists(name: str) -> bool:
    p = Path(name)
    return p.exists() or not (name.startswith((".", "/", "~")) or p.suffix)


def _base_model(train: TrainConfig | None, out_dir: Path | None) -> str | None:
    if train is None:
        return None
    if isinstance(train.model, str):
        return train.model
    return str(out_dir / "base-model") if out_dir else None


def _test_rows(path: Path, ev: EvalConfig, train: TrainConfig | None,
               split: str | None) -> list[dict[str, Any]]:
    source = str(path)
    chosen = split or ev.split
    if chosen:
        file = resolve(chosen, path)
        rows = read_rows(file, source, "eval.split")
    elif train is not None and isinstance(train.dataset.train, GeneratedData):
        from rewardkit_trainers.quickstart import generate_rows

        spec = train.dataset.train
        rows = generate_rows(spec.test_size or 64, spec.seed + 1)
    elif train is not None and train.dataset.test:
        rows = read_rows(resolve(train.dataset.test, path), source, "train.dataset.test")
    else:
        raise ConfigError(source, [("eval.split", "no test split: set eval.split or "
                                                  "train.dataset.test, or pass --split")])
    if train is not None:
        rows = normalise_rows(rows, train.dataset)
    return rows


def score_completions(reward_set: RewardSet, rows: list[dict[str, Any]], completions: list[str],
                      acc_name: str | None, step: int, train: TrainConfig | None,
                      per_prompt: int = 1) -> dict[str, Any]:
    """Accuracy and per-component means of ``completions`` for ``rows``; with
    ``per_prompt`` > 1 (each prompt's ``per_prompt`` rows adjacent) also ``pass_at_k``:
    per component, for each k, pass@k and maj@k with 95% intervals
    (:mod:`rewardkit.measure.passk`)."""
    ref_col = train.dataset.reference_column if train else "reference"
    samples = []
    for row, completion in zip(rows, completions, strict=True):
        meta = {k: v for k, v in row.items() if k not in ("prompt", ref_col)}
        samples.append(Sample(prompt=row.get("prompt", ""), completion=completion,
                              reference=row.get(ref_col), metadata=meta))
    result = reward_set.score(samples, step=step)
    means = {name: m["mean"] for name, m in result.metrics["components"].items()}
    full = {name: _share(_paid_in_full(result.values(name), reward_set, name, step))
            for name in means}
    if acc_name is not None:
        correct = _paid_in_full(result.values(acc_name), reward_set, acc_name, step)
    else:
        correct = [t is not None and t > 0 for t in result.totals]
    report = {"accuracy": _share(correct),
              "mean_reward": result.metrics["total"]["mean"],
              "max_reward": max_total(reward_set, step), "components": means,
              "full": full, "examples": completions[:3]}
    if per_prompt > 1:
        report["pass_at_k"] = _pass_at_k(result, reward_set, step, per_prompt, completions,
                                         acc_name)
    return report


def _pass_at_k(result: Any, reward_set: RewardSet, step: int, samples: int,
               completions: list[str], acc_name: str | None) -> dict[str, Any]:
    """Per component, pass@k and maj@k over the prompts' ``samples`` completions: correct
    = paid in full; a completion's answer (for the vote) is what the accuracy component
    extracted, else its text."""
    from rewardkit.measure.passk import pass_and_maj

    answers: list[Any] = [" ".join(c.split()) or None for c in completions]
    if acc_name is not None:
        for i, score in enumerate(result.scores(acc_name)):
            extracted = (score.details or {}).get("extracted")
            if extracted is not None:
                answers[i] = str(extracted).strip()
    table = {}
    for name in reward_set.names:
        correct = _paid_in_full(result.values(name), reward_set, name, step)
        groups = [(answers[i:i + samples], correct[i:i + samples])
                  for i in range(0, len(correct), samples)]
        table[name] = pass_and_maj(groups)
    return table


def _paid_in_full(values: list[float | None], reward_set: RewardSet, name: str,
                  step: int) -> list[bool]:
    """Per sample: whether component ``name`` reached its maximum (its ``score`` param,
    else 1.0, or the highest value seen when that is higher)."""
    top = max((v for v in values if v is not None), default=None)
    best = max(top or 0.0, _max_value(reward_set, name, step))
    return [v is not None and best > 0 and v >= best - 1e-9 for v in values]


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else math.nan


def max_total(reward_set: RewardSet, step: int) -> float | None:
    """The most a sample's total can be at ``step``: each positively weighted component at
    its maximum (its ``score`` param, else 1.0); None under ``normalize_then_sum``, whose
    totals are standardised. So a mean reward reads ``1.422 (of 2.0)``."""
    if reward_set.config.aggregate != "weighted_sum":
        return None
    return math.fsum(w * _max_value(reward_set, name, step)
                     for name, w in reward_set.weights(step).items() if w > 0)


def _max_value(reward_set: RewardSet, name: str, step: int) -> float:
    params = reward_set.params_at(name, step)
    for key in ("score", "value", "max_value"):
        if hasattr(params, key):
            return float(getattr(params, key))
    return 1.0


def generate(model_name: str, rows: list[dict[str, Any]], ev: EvalConfig) -> list[str]:
    """Completions of every row's prompt (vLLM when usable, else transformers). A model
    built here goes to transformers: vLLM loads tokenizers through ``AutoTokenizer``,
    which would swap the built word-level one for ``Qwen2Tokenizer``."""
    from rewardkit_trainers.quickstart import is_built

    if _use_vllm(ev) and not is_built(model_name):
        return _generate_vllm(model_name, rows, ev)
    return _generate_transformers(model_name, rows, ev)


def _use_vllm(ev: EvalConfig) -> bool:
    if ev.use_vllm is False:
        return False
    try:
        import torch
        import vllm  # noqa: F401
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _prompt_texts(tokenizer: Any, rows: list[dict[str, Any]]) -> list[str]:
    texts = []
    for row in rows:
        prompt = row.get("prompt", "")
        if isinstance(prompt, list):
            texts.append(tokenizer.apply_chat_template(prompt, tokenize=False,
                                                       add_generation_prompt=True))
        else:
            texts.append(str(prompt))
    return texts


def _generate_transformers(model_name: str, rows: list[dict[str, Any]],
                           ev: EvalConfig) -> list[str]:
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from rewardkit_trainers.quickstart import is_built, load_tokenizer

    # the table is the output: no "Loading weights ... 0%|" bars (raw lines in a log)
    hf_logging.disable_progress_bar()
    tokenizer = load_tokenizer(model_name)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model: Any = AutoModelForCausalLM.from_pretrained(model_name)
    torch.manual_seed(ev.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        apply_cpu_plan(cpu_plan(tiny=is_built(model_name)))
    model.to(device).eval()
    texts = _prompt_texts(tokenizer, rows)
    out: list[str] = []
    sampling: dict[str, Any] = {"do_sample": ev.temperature > 0}
    if ev.temperature > 0:
        sampling["temperature"] = ev.temperature
    for start in range(0, len(texts), ev.batch_size):
        chunk = texts[start:start + ev.batch_size]
        enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(device) for k, v in enc.items()}
        with torch.no_grad():
            gen = model.generate(**enc, max_new_tokens=ev.max_new_tokens,
                                 pad_token_id=tokenizer.pad_token_id, **sampling)
        new = gen[:, enc["input_ids"].shape[1]:]
        out.extend(tokenizer.batch_decode(new, skip_special_tokens=True))
    return out


def _generate_vllm(model_name: str, rows: list[dict[str, Any]], ev: EvalConfig) -> list[str]:
    from vllm import LLM, SamplingParams

    llm = LLM(model=model_name)
    tokenizer = llm.get_tokenizer()
    params = SamplingParams(temperature=ev.temperature, max_tokens=ev.max_new_tokens)
    outputs = llm.generate(_prompt_texts(tokenizer, rows), params)
    return [o.outputs[0].text for o in outputs]


def print_report(console: Any, report: dict[str, Any]) -> None:
    """A table: one column per model; rows: accuracy, the share each component paid in
    full, the mean reward and each component's mean."""
    from rich.table import Table

    models = report["models"]
    table = Table(title=f"rewardkit eval: {report['rows']} test prompts "
                        f"(accuracy = {report['accuracy_component'] or 'total > 0'})")
    table.add_column("")
    for label, info in models.items():
        table.add_column(f"{label}\n{Path(info['model']).name}", justify="right")
    table.add_row("accuracy", *[_pct(i.get("accuracy")) for i in models.values()])
    names: list[str] = []
    for info in models.values():
        names += [n for n in info.get("components", {}) if n not in names]
    for name in names:
        table.add_row(f"  {name} in full", *[_pct(i.get("full", {}).get(name))
                                             for i in models.values()])
    tops = {i.get("max_reward") for i in models.values() if "mean_reward" in i}
    top = tops.pop() if len(tops) == 1 else None
    table.add_row("mean reward" + (f" (of {top:g})" if top is not None else ""),
                  *[_num(i.get("mean_reward")) for i in models.values()])
    for name in names:
        table.add_row(f"  {name}", *[_num(i.get("components", {}).get(name))
                                     for i in models.values()])
    _pass_at_k_rows(table, models, names)
    console.print(table)
    if "seconds" in report:
        console.print(f"evaluated in {report['seconds']:.0f}s on {report['ran_on']}",
                      markup=False)
    for label, info in models.items():
        if "error" in info:
            console.print(f"[yellow]{label}: {info['model']}: {info['error']}[/]")
    if "expected" in report:
        console.print(expected_line(report["expected"]))


def expected_line(verdict: dict[str, Any]) -> str:
    """One line: the expected accuracy range of the config (``eval.expected``) and
    whether the trained model is in it; outside it, in yellow, what that means."""
    from rich.markup import escape

    low, high = verdict["accuracy"]
    span = f"{_pct(low)}-{_pct(high)}" if low < high else _pct(low)
    where = f" ({escape(verdict['measured'])})" if verdict.get("measured") else ""
    got = verdict.get("trained_accuracy")
    if got is None:
        return f"expected accuracy of a trained model: {span}{where}"
    if verdict["in_range"]:
        return f"trained accuracy {_pct(got)}: in the expected range {span}{where}"
    side = "below" if got < low else "above"
    return (f"[yellow]trained accuracy {_pct(got)}: {side} the expected range {span}"
            f"{where}" + (": this run did not learn what measured runs of this config "
                          "learn" if side == "below" else "") + "[/]")


def _pass_at_k_rows(table: Any, models: dict[str, Any], names: list[str]) -> None:
    """``eval.samples`` > 1: a pass@k and a maj@k row per component and k (95% interval)."""
    def cell(m: dict[str, Any] | None) -> str:
        if m is None:
            return "-"
        ci = m["ci95"]
        return _pct(m["value"]) + (f" [{100 * ci[0]:.0f}-{100 * ci[1]:.0f}]" if ci else "")

    ks: list[str] = []
    for info in models.values():
        for per_k in info.get("pass_at_k", {}).values():
            ks += [k for k in per_k if k not in ks]
    for metric in ("pass@k", "maj@k"):
        for name in names:
            for k in ks:
                table.add_row(f"{metric.replace('k', k)} {name}", *[
                    cell(i.get("pass_at_k", {}).get(name, {}).get(k, {}).get(metric))
                    for i in models.values()])


def _pct(v: float | None) -> str:
    return "-" if v is None or math.isnan(v) else f"{100 * v:.1f}%"


def _num(v: float | None) -> str:
    return "-" if v is None or math.isnan(v) else f"{v:.3f}"
