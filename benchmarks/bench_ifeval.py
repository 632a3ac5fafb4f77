"""instruction_following against Google's reference IFEval evaluation, pair by pair.

    python benchmarks/bench_ifeval.py --google DIR [--json]

DIR is a local copy of google-research's ``instruction_following_eval/`` (see
``ifeval_sources.toml``: the files and their checksums; nothing of it is committed here).
For every (response, instruction) pair of Google's shipped GPT-4 responses the benchmark
asks Google's checkers (imported from DIR, built and run as its evaluation_lib does) and
``instruction_following`` (through rewardkit, ``min_words: 0``, the rules of the reference)
whether the instruction is followed, in strict and in loose mode, and reports the
agreement per instruction type, the prompt- and instruction-level accuracies of both,
the speed, and what the default ``min_words`` costs these honest responses.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import logging
import sys
import time
import tomllib
import types
from collections import Counter
from pathlib import Path
from typing import Any

from rewardkit import Sample, get_reward

MANIFEST = Path(__file__).resolve().parent / "ifeval_sources.toml"
RESPONSES = "data/input_response_data_gpt4_20231107_145030.jsonl"
INPUTS = "data/input_data.jsonl"


def check_sources(folder: Path) -> None:
    """Exit with a message unless every manifest file is in ``folder`` with its checksum."""
    source = tomllib.loads(MANIFEST.read_text(encoding="utf-8"))["source"]
    for name, digest in source["files"].items():
        path = folder / name
        if not path.is_file():
            sys.exit(f"{path}: missing; {MANIFEST.name} names the files of "
                     f"{source['repo']}/{source['folder']} at {source['commit'][:12]}")
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != digest:
            sys.exit(f"{path}: sha256 {got[:16]}..., the manifest names {digest[:16]}...: "
                     "another version")


def google_registry(folder: Path) -> dict[str, Any]:
    """Google's instruction registry, imported from the copy, its Punkt model given."""
    from rewardkit_ifeval.checkers import punkt_tokenizer

    try:
        import absl.logging
    except ImportError:  # the reference uses absl for logging only
        absl = types.ModuleType("absl")
        absl.logging = logging  # type: ignore[attr-defined]
        sys.modules["absl"] = absl
        sys.modules["absl.logging"] = logging
    import langdetect

    langdetect.DetectorFactory.seed = 0
    sys.path.insert(0, str(folder.parent))
    package = folder.name
    util = importlib.import_module(f"{package}.instructions_util")
    util._get_sentence_tokenizer = punkt_tokenizer
    return importlib.import_module(f"{package}.instructions_registry").INSTRUCTION_DICT


def google_verdicts(registry: dict[str, Any], row: dict[str, Any], response: str,
                    loose: bool) -> list[bool]:
    """What Google's evaluation_lib decides for each instruction of ``row``."""
    from rewardkit_ifeval.checkers import loose_variants, seeded

    responses = loose_variants(response) if loose else [response]
    out = []
    for iid, kwargs in zip(row["instruction_id_list"], row["kwargs"], strict=True):
        check = registry[iid](iid)
        with seeded(iid, kwargs):  # the same draw where the kwargs leave one to chance
            check.build_description(**kwargs)
            args = check.get_instruction_args()
            if args and "prompt" in args:
                check.build_description(prompt=row["prompt"])
        out.append(any(r.strip() and check.check_following(r) for r in responses))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--google", type=Path, required=True,
                        help="local copy of instruction_following_eval/")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args()
    folder = args.google.resolve()
    check_sources(folder)
    rows = [json.loads(line) for line in (folder / INPUTS).read_text().splitlines()]
    answers = {}
    for line in (folder / RESPONSES).read_text().splitlines():
        item = json.loads(line)
        answers[item["prompt"]] = item["response"]
    rows = [r for r in rows if r["prompt"] in answers]
    registry = google_registry(folder)
    samples = [Sample.from_dict({"prompt": r["prompt"], "completion": answers[r["prompt"]],
                                 "instruction_id_list": r["instruction_id_list"],
                                 "kwargs": r["kwargs"]}) for r in rows]
    report: dict[str, Any] = {"rows": len(rows),
                              "pairs": sum(len(r["instruction_id_list"]) for r in rows)}
    reward_cls = get_reward("instruction_following")
    for mode in ("strict", "loose"):
        ours = reward_cls({"mode": mode, "min_words": 0})
        ours.score(samples[0])  # loads the checkers: not part of the speed
        start = time.perf_counter()
        scores = [ours.score(s) for s in samples]
        elapsed = time.perf_counter() - start
        agree: Counter[str] = Counter()
        total: Counter[str] = Counter()
        differ = []
        ref_prompt = our_prompt = ref_inst = our_inst = 0
        for row, sample, score in zip(rows, samples, scores, strict=True):
            ref = google_verdicts(registry, row, sample.text, mode == "loose")
            mine = [f for _, f in (score.details or {}).get("followed", [])]
            ref_prompt += all(ref)
            our_prompt += score.value == 1.0
            ref_inst += sum(ref)
            our_inst += sum(mine)
            for iid, a, b in zip(row["instruction_id_list"], ref, mine, strict=True):
                total[iid] += 1
                agree[iid] += a == b
                if a != b:
                    differ.append({"key": row["key"], "instruction": iid, "google": a})
        report[mode] = {
            "agreement": sum(agree.values()) / sum(total.values()),
            "agreeing_pairs": sum(agree.values()),
            "not_full": {i: f"{agree[i]}/{total[i]}" for i in sorted(total)
                         if agree[i] != total[i]},
            "differences": differ,
            "prompt_level": {"google": ref_prompt / len(rows), "ours": our_prompt / len(rows)},
            "instruction_level": {"google": ref_inst / report["pairs"],
                                  "ours": our_inst / report["pairs"]},
            "responses_per_s": len(samples) / elapsed,
        }
    default = reward_cls({})
    refused = [(r["key"], s.reason) for r, s in zip(rows, map(default.score, samples),
                                                     strict=True) if s.reason]
    report["default_refuses"] = refused
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{report['rows']} GPT-4 responses, {report['pairs']} (response, instruction) "
          "pairs, Google's checkers vs instruction_following (min_words 0)")
    for mode in ("strict", "loose"):
        m = report[mode]
        print(f"{mode:6}: {m['agreeing_pairs']}/{report['pairs']} pairs agree "
              f"({m['agreement']:.2%}); prompt-level google {m['prompt_level']['google']:.4f}"
              f" ours {m['prompt_level']['ours']:.4f}; instruction-level google "
              f"{m['instruction_level']['google']:.4f} ours "
              f"{m['instruction_level']['ours']:.4f}; {m['responses_per_s']:.0f} responses/s")
        for iid, frac in m["not_full"].items():
            print(f"        {iid}: {frac}")
    print(f"default min_words refuses {len(refused)} of these honest responses: {refused}")


if __name__ == "__main__":
    main()
