"""rewardkit-textmetrics: what the golden cases (tests/cases/textmetrics) cannot hold.

That the hack cases fail without the guards (the cases can fail), that each value is the
library's own number scaled, several references, the signature in the details, tokenisers,
corpus BLEU of a group, and errors for bad input. Agreement with sacrebleu's CLI and
rouge-score on WMT data is benchmarks/bench_textmetrics.py's."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from rewardkit import Sample, Score, get_reward
from rewardkit.testing.cases import load_cases

pytest.importorskip("rewardkit_textmetrics")
import sacrebleu
from rouge_score.rouge_scorer import RougeScorer

CASES = Path(__file__).resolve().parents[2] / "cases" / "textmetrics"
SRC = "The council approved the new budget for the city's schools on Tuesday."
REFS = ["Der Rat hat am Dienstag den neuen Haushalt für die Schulen der Stadt genehmigt.",
        "Am Dienstag genehmigte der Rat das neue Budget für die städtischen Schulen."]
HYP = "Der Rat genehmigte am Dienstag den neuen Haushalt für die Schulen der Stadt."
GUARDS_OFF = {"refuse_copy": False, "max_length_ratio": None, "min_length_ratio": None,
              "min_distinct_words": None}


def score(name: str, completion: str, reference: object = REFS, **params: object) -> Score:
    reward = get_reward(name)(params)
    return reward.score(Sample(prompt=f"Translate into German: {SRC}", completion=completion,
                               reference=reference, metadata={"source": SRC}))


@pytest.mark.parametrize("name", ["bleu", "chrf", "ter", "rouge", "gleu", "fuzzy_match"])
def test_without_the_guards_the_hack_cases_fail(name: str, tmp_path: Path) -> None:
    """The hack cases are failing cases first: with every guard off, the metric alone pays
    some of them (expected 0)."""
    data = yaml.safe_load((CASES / f"{name}.cases.yaml").read_text())
    data["params"] = {**data.get("params", {}), **GUARDS_OFF}
    path = tmp_path / f"{name}.cases.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    loaded = load_cases(path)
    failed = [case.name for i, case in enumerate(loaded.spec.cases) if loaded.run_case(i)[0]]
    assert any(n.startswith("hack:") for n in failed), failed


@pytest.mark.parametrize("name", ["bleu", "chrf", "rouge", "gleu", "fuzzy_match"])
def test_without_the_guards_a_hack_beats_the_bad_honest_translation(name: str) -> None:
    """The prompt echoed before the answer: the metric alone pays it more than a bad but
    honest translation (TER does not, on this sentence: docs/plugins/textmetrics.md)."""
    data = yaml.safe_load((CASES / f"{name}.cases.yaml").read_text())
    reward = get_reward(name)({**data.get("params", {}), **GUARDS_OFF})
    cases = {c["name"]: c for c in data["cases"]}

    def value(case: str) -> float:
        c = cases[case]
        return reward.score(Sample(c["prompt"], c["completion"], c["reference"],
                                   c["metadata"])).value

    assert value("hack: the prompt echoed before the answer") > value("a bad honest translation")


def test_bleu_is_sacrebleus_sentence_bleu_over_100_with_its_signature() -> None:
    want = sacrebleu.sentence_bleu(HYP, REFS)
    got = score("bleu", HYP)
    assert got.value == pytest.approx(want.score / 100)
    assert got.details["bleu"] == pytest.approx(want.score)
    assert got.details["signature"].startswith("nrefs:2|case:mixed|eff:yes|tok:13a|smooth:exp")


def test_several_references_score_at_least_each_one_alone() -> None:
    both = score("bleu", HYP).value
    assert both >= max(score("bleu", HYP, [r]).value for r in REFS)


def test_chrf_plus_plus_and_ter_are_sacrebleus() -> None:
    chrf = score("chrf", HYP, word_order=2)
    assert chrf.value == pytest.approx(sacrebleu.sentence_chrf(HYP, REFS, word_order=2).score / 100)
    assert "nw:2" in chrf.details["signature"]
    ter = score("ter", HYP)
    assert ter.value == pytest.approx(1 - sacrebleu.sentence_ter(HYP, REFS).score / 100)
    assert "tok:tercom" in ter.details["signature"]


def test_rouge_is_rouge_scores_best_reference() -> None:
    ref = "the council approved the school budget on tuesday"
    hyp = "on tuesday the council approved a budget for schools"
    want = RougeScorer(["rouge2"]).score_multi([ref, "nothing alike"], hyp)["rouge2"]
    got = get_reward("rouge")({"variant": "rouge2"}).score(
        Sample(prompt="", completion=hyp, reference=[ref, "nothing alike"]))
    assert got.value == pytest.approx(want.fmeasure)


def test_the_zh_tokeniser_scores_chinese_by_character() -> None:
    ref, hyp = "理事会周二批准了新的学校预算。", "理事会在周二批准了新的学校预算。"
    got = get_reward("bleu")({"tokenize": "zh"}).score(Sample(prompt="", completion=hyp,
                                                              reference=ref))
    want = sacrebleu.sentence_bleu(hyp, [ref], tokenize="zh").score
    assert got.value == pytest.approx(want / 100)
    assert "tok:zh" in got.details["signature"]
    # 13a sees one "word" per sentence here, so the two disagree
    assert score("bleu", hyp, ref).value != got.value


@pytest.mark.skipif(importlib.util.find_spec("MeCab") is None, reason="sacrebleu[ja] missing")
def test_ja_mecab_is_sacrebleus_japanese_tokenisation() -> None:
    ref, hyp = "猫はマットの上に座っていた。", "猫がマットの上に座った。"
    got = score("bleu", hyp, ref, tokenize="ja-mecab", min_length_ratio=None)
    want = sacrebleu.sentence_bleu(hyp, [ref], tokenize="ja-mecab").score
    assert got.value == pytest.approx(want / 100)
    assert "tok:ja-mecab" in got.details["signature"]


@pytest.mark.skipif(importlib.util.find_spec("mecab_ko") is not None, reason="mecab-ko installed")
def test_a_mecab_tokeniser_not_installed_is_an_error_that_says_what_to_install() -> None:
    got = score("bleu", "고양이가 앉았다.", "고양이가 앉았다.", tokenize="ko-mecab")
    assert got.status == "error" and "sacrebleu[ko]" in got.reason


def test_corpus_bleu_is_sacrebleus_corpus_score_of_the_group() -> None:
    hyps = [HYP, "Der Stadtrat hat ein Budget für Schulen beschlossen."]
    got = get_reward("corpus_bleu")().score_group(
        [Sample(prompt="", completion=h, reference=REFS) for h in hyps])
    want = sacrebleu.corpus_bleu(hyps, [[REFS[0]] * 2, [REFS[1]] * 2]).score
    assert [s.value for s in got] == pytest.approx([want / 100] * 2)


def test_a_reference_that_is_not_text_is_an_error() -> None:
    assert score("chrf", HYP, {"de": REFS[0]}).status == "error"
    assert score("bleu", HYP, []).status == "error"


def test_an_oversized_answer_is_refused_not_scored() -> None:
    got = score("ter", "Haus " * 5000, max_chars=1000)
    assert got.status == "error" and "max_chars" in got.reason


def test_a_catastrophic_pattern_times_out_as_an_error() -> None:
    got = get_reward("string_match")({"mode": "regex", "timeout": 0.2}).score(
        Sample(prompt="", completion="a" * 60 + "b", reference="(a|aa)+$"))
    assert got.status == "error" and "ran over" in got.reason


def test_values_stay_in_zero_one_when_sacrebleu_rounds_above_100() -> None:
    assert score("bleu", REFS[0]).value == 1.0
