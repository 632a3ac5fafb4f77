"""rewardkit-textmetrics against the tools the field reports with, on a real WMT test set.

Data: newstest2016 English->Finnish from Helsinki-NLP/WMT16-test-enfi (CC-BY 4.0), read
from a fetched copy of the repository at a fixed commit (nothing is committed here): the
English source, two independent Finnish references (newstest2016 and newstestB2016) and
the Helsinki "constrained" phrase-based system output, 3000 segments.

Checks, each over every segment:
1. sentence BLEU (tok 13a and intl), chrF, chrF++ and TER of our rewards (guards off, the
   metric alone) equal ``sacrebleu --sentence-level -w 4`` (its CLI, in a subprocess) to
   the printed four decimals, two references;
2. corpus_bleu of the 3000 rows as one group equals ``sacrebleu -w 4``'s corpus BLEU;
3. rouge (rouge1, rouge2, rougeL F1) equals rouge-score's own CLI (``python -m
   rouge_score.rouge``) per row, to the six decimals it prints;
4. what the default guards cost honest translations: how many system outputs, and how
   many second-reference translations scored against the first, each guard pays 0.

    python benchmarks/bench_textmetrics.py --repo /work/.mirror/Helsinki-NLP+WMT16-test-enfi/repo
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from importlib.metadata import version
from pathlib import Path

from rewardkit import Sample, get_reward

REPO = "Helsinki-NLP/WMT16-test-enfi"
COMMIT = "dddba1837f2b7151052a935b2dd12caa3e194353"
SOURCE = "txt/newstest2016-enfi.en"
REFERENCES = ("txt/newstest2016-enfi.fi", "txt/newstestB2016-enfi.fi")
SYSTEM = "mt/helsinki/basic/constrained.newstest2016.en.fi.sgm"
GUARDS_OFF = {"refuse_copy": False, "max_length_ratio": None, "min_length_ratio": None,
              "min_distinct_words": None}
BIN = Path(sys.executable).parent
_SEG = re.compile(r"<seg[^>]*>(.*)</seg>")
_SCORE = re.compile(r" = (-?[0-9.]+)")


def _git_file(repo: Path, path: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), "show", f"{COMMIT}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def _lines(text: str) -> list[str]:
    return text.rstrip("\n").split("\n")


def _cli(args: list[str]) -> str:
    return subprocess.run([str(BIN / "sacrebleu"), *args], check=True, capture_output=True,
                          text=True).stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, required=True,
                        help=f"git directory of a fetched copy of {REPO}")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()
    source = _lines(_git_file(args.repo, SOURCE))
    refs = [_lines(_git_file(args.repo, path)) for path in REFERENCES]
    hyps = [m.group(1) for m in map(_SEG.search, _git_file(args.repo, SYSTEM).splitlines())
            if m]
    assert len(source) == len(hyps) == len(refs[0]) == len(refs[1]), "misaligned files"
    rows = [Sample(prompt=f"Translate into Finnish: {s}", completion=h, reference=[a, b],
                   metadata={"source": s}) for s, h, a, b in zip(source, hyps, *refs, strict=True)]
    import sacrebleu

    here = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True, cwd=Path(__file__).parent).stdout.strip()
    results: dict[str, object] = {"data": {"repo": REPO, "commit": COMMIT, "system": SYSTEM,
                                           "segments": len(rows)}, "rewardkit_commit": here,
                                  "sacrebleu": sacrebleu.__version__,
                                  "rouge_score": version("rouge-score")}
    print(f"data: {REPO} @ {COMMIT}, {SYSTEM}, {len(rows)} segments, 2 references; "
          f"rewardkit {here}, sacrebleu {sacrebleu.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        hyp_file, ref_files = Path(tmp, "hyp"), [Path(tmp, "refA"), Path(tmp, "refB")]
        hyp_file.write_text("\n".join(hyps) + "\n")
        for path, lines in zip(ref_files, refs, strict=True):
            path.write_text("\n".join(lines) + "\n")
        refs_args = [str(p) for p in ref_files]
        sentence: dict[str, object] = {}
        for label, metric, reward, params, detail in [
            ("BLEU 13a", ["-m", "bleu"], "bleu", {}, "bleu"),
            ("BLEU intl", ["-m", "bleu", "-tok", "intl"], "bleu", {"tokenize": "intl"}, "bleu"),
            ("chrF", ["-m", "chrf"], "chrf", {}, "chrf"),
            ("chrF++", ["-m", "chrf", "--chrf-word-order", "2"], "chrf", {"word_order": 2},
             "chrf"),
            ("TER", ["-m", "ter"], "ter", {}, "ter"),
        ]:
            printed = [m.group(1) for m in map(_SCORE.search, _lines(_cli(
                [*refs_args, "-i", str(hyp_file), *metric, "-sl", "-w", "4"]))) if m]
            scorer = get_reward(reward)({**params, **GUARDS_OFF})
            started = time.perf_counter()
            ours = [scorer.score(row) for row in rows]
            seconds = time.perf_counter() - started
            equal = sum(f"{s.details[detail]:.4f}" == p for s, p in zip(ours, printed,
                                                                         strict=True))
            sentence[label] = {"rows": len(printed), "equal_to_4_decimals": equal,
                               "signature": ours[0].details["signature"],
                               "ms_per_row": round(1000 * seconds / len(rows), 3)}
            print(f"sentence {label:10s} {equal}/{len(printed)} equal to sacrebleu's CLI "
                  f"(-w 4), {1000 * seconds / len(rows):.3f} ms/row  "
                  f"[{ours[0].details['signature']}]")
        results["sentence"] = sentence
        cli_corpus = _cli([*refs_args, "-i", str(hyp_file), "-m", "bleu", "-w", "4", "-b"]).strip()
        group = get_reward("corpus_bleu")().score_group(rows)
        ours_corpus = f"{group[0].details['bleu']:.4f}"
        results["corpus_bleu"] = {"cli": cli_corpus, "ours": ours_corpus,
                                  "equal": cli_corpus == ours_corpus}
        print(f"corpus BLEU: sacrebleu CLI {cli_corpus}, corpus_bleu {ours_corpus}")
        rouge_csv = Path(tmp, "rouge.csv")
        subprocess.run([str(BIN / "python"), "-m", "rouge_score.rouge",
                        "--rouge_types=rouge1,rouge2,rougeL",
                        f"--target_filepattern={ref_files[0]}",
                        f"--prediction_filepattern={hyp_file}", f"--output_filename={rouge_csv}",
                        "--noaggregate", "--delimiter=\n"], check=True, capture_output=True)
        with rouge_csv.open() as f:  # id, rouge1-P, rouge1-R, rouge1-F, ... (6 decimals)
            printed_rouge = list(csv.DictReader(f))
        rouge: dict[str, object] = {}
        for variant in ("rouge1", "rouge2", "rougeL"):
            scorer = get_reward("rouge")({"variant": variant, **GUARDS_OFF})
            ours_r = [scorer.score(Sample(prompt="", completion=h, reference=a)).details[
                "fmeasure"] for h, a in zip(hyps, refs[0], strict=True)]
            theirs = [line[f"{variant}-F"] for line in printed_rouge]
            equal = sum(f"{x:.6f}" == y for x, y in zip(ours_r, theirs, strict=True))
            rouge[variant] = {"rows": len(theirs), "equal_to_6_decimals": equal}
            print(f"{variant:7s} F1 {equal}/{len(theirs)} equal to rouge-score's CLI (6 decimals)")
        results["rouge"] = rouge
    guards: dict[str, object] = {}
    for name, honest in (("system output", rows), ("reference B vs reference A", [
            Sample(prompt=r.prompt, completion=b, reference=[a], metadata=r.metadata)
            for r, a, b in zip(rows, *refs, strict=True)])):
        reasons = Counter()
        for row in honest:
            got = get_reward("bleu")().score(row)
            if got.reason:
                reasons[re.sub(r"\d+", "N", got.reason)] += 1
        guards[name] = {"rows": len(honest), "refused": sum(reasons.values()),
                        "by_reason": dict(reasons)}
        print(f"guards on honest {name}: {sum(reasons.values())}/{len(honest)} paid 0 "
              f"{dict(reasons)}")
    results["guards"] = guards
    if args.out:
        args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
