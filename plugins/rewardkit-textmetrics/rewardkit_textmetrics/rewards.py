"""Reference-based text rewards: each metric computed by the library its numbers are
reported with, scaled to [0, 1].

``bleu``, ``chrf`` (chrF++ with ``word_order: 2``) and ``ter`` are sacrebleu's sentence
scores (divided by 100; TER as ``1 - TER/100``, floored at 0), the metric's signature in
the score's details; ``rouge`` is rouge-score's; ``fuzzy_match`` is rapidfuzz's normalised
Indel ratio; ``string_match`` an exact or regex check; ``corpus_bleu`` sacrebleu's corpus
BLEU of a group. A row's ``reference`` is one text or a list of them (several references).

What the metrics cannot see, the guards refuse first (docs/plugins/textmetrics.md): an
answer with no visible text, an answer that copies the source or echoes the prompt more
than it resembles any reference, and an answer far longer than the longest reference (the
padding that buys BLEU's brevity penalty back).

>>> Bleu("Die Katze sitzt auf der Matte.", reference="Die Katze sitzt auf der Matte.").value
1.0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import regex
from pydantic import Field, model_validator

from rewardkit import ExecutionMode, Params, Reward, Sample, Score, graded_text
from rewardkit_textmetrics.guards import GuardParams, refused

#: sacrebleu's tokenisers by the names its CLI takes (``-tok``)
Tokenizer = Literal["13a", "intl", "zh", "char", "none", "ja-mecab", "ko-mecab",
                    "flores101", "flores200"]


def column_value(sample: Sample, column: str) -> tuple[bool, Any]:
    """(found, value) of the metadata ``column``, a dotted path into nested mappings."""
    value: Any = sample.metadata
    for key in column.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return False, None
        value = value[key]
    return True, value


def references(sample: Sample, column: str | None = None) -> list[str] | Score:
    """The row's references (or those of the metadata ``column``): a text, or a non-empty
    list of texts; else an error Score."""
    ref = sample.reference
    if column is not None:
        found, ref = column_value(sample, column)
        if not found:
            return Score.error(f"the row has no {column!r} column (reference_column)")
    if isinstance(ref, str):
        return [ref]
    if isinstance(ref, Sequence) and ref and all(isinstance(r, str) for r in ref):
        return list(ref)
    return Score.error("the reference must be a text or a non-empty list of texts "
                       f"(several references); got {type(ref).__name__}")


class _Metric(Reward):
    """A guarded, reference-based sentence metric: subclasses implement :meth:`measure`."""

    mode: ClassVar[ExecutionMode] = ExecutionMode.INLINE

    def score(self, sample: Sample) -> Score:
        params: GuardParams = self.params  # type: ignore[assignment]
        refs = references(sample, params.reference_column)
        if isinstance(refs, Score):
            return refs
        text = graded_text(sample.text)
        if text is None:
            return Score.ok(0.0, "the reasoning never closes")
        if len(text) > params.max_chars or any(len(r) > params.max_chars for r in refs):
            return Score.error(f"a text over max_chars ({params.max_chars}) is not scored")
        why = refused(text, refs, sample, params)
        if why:
            return Score.ok(0.0, why)
        got = self.measure(text, refs)
        if got.value is not None:  # sacrebleu's 100 can come back as 100.00000000000004
            got = dataclasses.replace(got, value=min(1.0, max(0.0, got.value)))
        return got

    def measure(self, text: str, refs: list[str]) -> Score:
        raise NotImplementedError


def _sacrebleu_metric(build: Any) -> Any:
    try:
        return build()
    except RuntimeError as exc:  # a MeCab tokeniser without sacrebleu's [ja]/[ko] extra
        return " ".join(str(exc).split())


class BleuParams(GuardParams):
    """Parameters of bleu and corpus_bleu (sacrebleu's BLEU)."""

    tokenize: Tokenizer = Field("13a", description="sacrebleu tokeniser: 13a (default, "
                                "Western languages), intl, zh (Chinese), char, none, ja-mecab "
                                "(installed with the plugin), ko-mecab (install sacrebleu[ko]), "
                                "flores101, flores200")
    lowercase: bool = Field(False, description="case-insensitive BLEU (sacrebleu -lc)")
    smooth_method: Literal["exp", "floor", "add-k", "none"] = Field(
        "exp", description="sacrebleu's smoothing (its sentence-level default: exp)")


class Bleu(_Metric):
    """Sentence BLEU (sacrebleu, effective order, as ``sacrebleu --sentence-level``) / 100.

    Details: ``bleu`` (sacrebleu's 0-100 score), ``signature``. Several references: a list.
    """

    name: ClassVar[str] = "bleu"
    Params: ClassVar[type[Params]] = BleuParams

    def setup(self) -> None:
        from sacrebleu.metrics import BLEU

        p: BleuParams = self.params  # type: ignore[assignment]
        self.metric = _sacrebleu_metric(lambda: BLEU(
            tokenize=p.tokenize, lowercase=p.lowercase, smooth_method=p.smooth_method,
            effective_order=True))

    def measure(self, text: str, refs: list[str]) -> Score:
        if isinstance(self.metric, str):
            return Score.error(self.metric)
        result = self.metric.sentence_score(text, refs)
        return Score.ok(result.score / 100, bleu=result.score,
                        signature=self.metric.get_signature().format())


class ChrfParams(GuardParams):
    """Parameters of chrf (sacrebleu's chrF / chrF++)."""

    word_order: int = Field(0, ge=0, le=2, description="0: chrF; 2: chrF++ (word bigrams too)")
    char_order: int = Field(6, ge=1, le=10, description="character n-gram order")
    beta: int = Field(2, ge=1, description="recall weighted beta times precision")
    lowercase: bool = Field(False, description="case-insensitive")
    whitespace: bool = Field(False, description="count whitespace in character n-grams")


class Chrf(_Metric):
    """Sentence chrF, or chrF++ with ``word_order: 2`` (sacrebleu) / 100.

    Details: ``chrf`` (0-100), ``signature``."""

    name: ClassVar[str] = "chrf"
    Params: ClassVar[type[Params]] = ChrfParams

    def setup(self) -> None:
        from sacrebleu.metrics import CHRF

        p: ChrfParams = self.params  # type: ignore[assignment]
        self.metric = CHRF(char_order=p.char_order, word_order=p.word_order, beta=p.beta,
                           lowercase=p.lowercase, whitespace=p.whitespace)

    def measure(self, text: str, refs: list[str]) -> Score:
        result = self.metric.sentence_score(text, refs)
        return Score.ok(result.score / 100, chrf=result.score,
                        signature=self.metric.get_signature().format())


class TerParams(GuardParams):
    """Parameters of ter (sacrebleu's TER)."""

    normalized: bool = Field(False, description="tercom's normalisation")
    case_sensitive: bool = Field(False, description="case-sensitive edits")
    asian_support: bool = Field(False, description="split Asian characters (zh/ja/ko)")
    no_punct: bool = Field(False, description="drop punctuation first")


class Ter(_Metric):
    """``max(0, 1 - TER/100)`` of sacrebleu's sentence TER (fewer edits: higher).

    Details: ``ter`` (sacrebleu's edit rate, 0-100+), ``signature``."""

    name: ClassVar[str] = "ter"
    Params: ClassVar[type[Params]] = TerParams

    def setup(self) -> None:
        from sacrebleu.metrics import TER

        p: TerParams = self.params  # type: ignore[assignment]
        self.metric = TER(normalized=p.normalized, case_sensitive=p.case_sensitive,
                          asian_support=p.asian_support, no_punct=p.no_punct)

    def measure(self, text: str, refs: list[str]) -> Score:
        result = self.metric.sentence_score(text, refs)
        return Score.ok(max(0.0, 1 - result.score / 100), ter=result.score,
                        signature=self.metric.get_signature().format())


class RougeParams(GuardParams):
    """Parameters of rouge (rouge-score)."""

    variant: Literal["rouge1", "rouge2", "rouge3", "rouge4", "rouge5", "rougeL",
                     "rougeLsum"] = Field(
        "rougeL", description="ROUGE-1 .. ROUGE-5 (n-grams), ROUGE-L (sentence LCS) or "
        "ROUGE-Lsum")
    measure: Literal["fmeasure", "precision", "recall"] = Field(
        "fmeasure", description="which of rouge-score's three numbers is the value")
    use_stemmer: bool = Field(False, description="Porter stemming (English)")


class Rouge(_Metric):
    """rouge-score's ROUGE-1..5/L(sum) of the best reference. Its tokeniser keeps a-z and 0-9
    only: for English; other scripts score 0.

    Details: ``precision``, ``recall``, ``fmeasure``."""

    name: ClassVar[str] = "rouge"
    Params: ClassVar[type[Params]] = RougeParams

    def setup(self) -> None:
        from rouge_score.rouge_scorer import RougeScorer

        p: RougeParams = self.params  # type: ignore[assignment]
        self.scorer = RougeScorer([p.variant], use_stemmer=p.use_stemmer)

    def measure(self, text: str, refs: list[str]) -> Score:
        p: RougeParams = self.params  # type: ignore[assignment]
        got = self.scorer.score_multi(refs, text)[p.variant]
        return Score.ok(float(getattr(got, p.measure)), precision=got.precision,
                        recall=got.recall, fmeasure=got.fmeasure)


class FuzzyParams(GuardParams):
    """Parameters of fuzzy_match (rapidfuzz)."""

    scorer: Literal["ratio", "token_sort_ratio", "token_set_ratio"] = Field(
        "ratio", description="rapidfuzz scorer: ratio (normalised Indel distance), or the "
        "word-order-insensitive token_sort_ratio / token_set_ratio")
    case_sensitive: bool = Field(True, description="false: compare case-folded texts")


class FuzzyMatch(_Metric):
    """rapidfuzz's similarity ratio to the closest reference / 100 (1 - normalised edit
    distance). Details: ``ratio`` (0-100), ``closest`` (index of that reference)."""

    name: ClassVar[str] = "fuzzy_match"
    Params: ClassVar[type[Params]] = FuzzyParams

    def measure(self, text: str, refs: list[str]) -> Score:
        from rapidfuzz import fuzz

        p: FuzzyParams = self.params  # type: ignore[assignment]
        how = getattr(fuzz, p.scorer)
        fold = (lambda s: s) if p.case_sensitive else str.casefold
        ratios = [how(fold(text), fold(r)) for r in refs]
        best = max(range(len(ratios)), key=ratios.__getitem__)
        return Score.ok(ratios[best] / 100, ratio=ratios[best], closest=best)


class GleuParams(GuardParams):
    """Parameters of gleu (nltk's sentence GLEU)."""

    min_len: int = Field(1, ge=1, le=9, description="shortest n-gram counted")
    max_len: int = Field(4, ge=1, le=9, description="longest n-gram counted")
    lowercase: bool = Field(False, description="case-insensitive")

    @model_validator(mode="after")
    def _orders(self) -> GleuParams:
        if self.max_len < self.min_len:
            raise ValueError(f"max_len ({self.max_len}) is below min_len ({self.min_len})")
        return self


class Gleu(_Metric):
    """nltk's sentence GLEU (Google BLEU, Wu et al. 2016): the smaller of n-gram precision
    and recall (n from min_len to max_len), on sacrebleu's 13a tokens; several references
    as nltk's sentence_gleu combines them. Already in [0, 1]. Details: ``tokens``."""

    name: ClassVar[str] = "gleu"
    Params: ClassVar[type[Params]] = GleuParams

    def setup(self) -> None:
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

        self.tokenizer = Tokenizer13a()

    def tokens(self, text: str) -> list[str]:
        p: GleuParams = self.params  # type: ignore[assignment]
        return self.tokenizer(text.lower() if p.lowercase else text).split()

    def measure(self, text: str, refs: list[str]) -> Score:
        from nltk.translate.gleu_score import sentence_gleu

        p: GleuParams = self.params  # type: ignore[assignment]
        value = sentence_gleu([self.tokens(r) for r in refs], self.tokens(text),
                              min_len=p.min_len, max_len=p.max_len)
        return Score.ok(float(value), tokens="13a")


class StringParams(Params):
    """Parameters of string_match."""

    mode: Literal["exact", "regex", "contains"] = Field(
        "exact", description="exact: the answer equals a reference; regex: a reference is a "
        "pattern (Python `regex` syntax) the whole answer must match; contains: a reference "
        "occurs in the answer (pays any answer that lists it among others)")
    negate: bool = Field(False, description="pay 1 when no reference matches, 0 when one "
                         "does (an OpenAI string_check's ne); pays every other answer")
    reference_column: str | None = Field(
        None, description="read the reference(s) from this metadata column (a dotted path) "
        "instead of the row's reference")
    case_sensitive: bool = Field(True, description="false: compare case-folded")
    strip: bool = Field(True, description="ignore leading and trailing whitespace")
    timeout: float = Field(1.0, gt=0, le=30, description="seconds a pattern may run; over "
                           "it the score is an error (a catastrophic pattern never hangs)")


class StringMatch(Reward):
    """1 when the answer equals a reference (``exact``), fully matches a reference
    pattern (``regex``) or contains a reference (``contains``), else 0; ``negate`` swaps
    the two. Details: ``matched`` (index of the reference)."""

    name: ClassVar[str] = "string_match"
    Params: ClassVar[type[Params]] = StringParams

    def score(self, sample: Sample) -> Score:
        p: StringParams = self.params  # type: ignore[assignment]
        refs = references(sample, p.reference_column)
        if isinstance(refs, Score):
            return refs
        hit, miss = (0.0, 1.0) if p.negate else (1.0, 0.0)
        answer = graded_text(sample.text)
        if answer is None:  # no answer given: negated or not, nothing to pay
            return Score.ok(0.0, "the reasoning never closes")
        text = answer.strip() if p.strip else answer
        for i, ref in enumerate(refs):
            if p.mode in ("exact", "contains"):
                want = ref.strip() if p.strip else ref
                got = text
                if not p.case_sensitive:
                    got, want = got.casefold(), want.casefold()
                if got == want or (p.mode == "contains" and want in got):
                    return Score.ok(hit, matched=i)
                continue
            try:
                flags = 0 if p.case_sensitive else regex.IGNORECASE
                if regex.fullmatch(ref, text, flags=flags, timeout=p.timeout):
                    return Score.ok(hit, matched=i)
            except regex.error as exc:
                return Score.error(f"reference {i} is not a valid pattern: {exc}")
            except TimeoutError:
                return Score.error(f"pattern {i} ran over {p.timeout} s")
        return Score.ok(miss)


class CorpusBleu(Reward):
    """sacrebleu's corpus BLEU of a group's completions against their references / 100,
    the same value for every completion of the group (what ``sacrebleu`` prints for the
    group as a test set). A logged metric (weight 0) or an eval score: within one GRPO
    group it is constant, so it moves no advantage. Details: ``bleu``, ``signature``."""

    name: ClassVar[str] = "corpus_bleu"
    Params: ClassVar[type[Params]] = BleuParams
    group: ClassVar[bool] = True

    def setup(self) -> None:
        from sacrebleu.metrics import BLEU

        p: BleuParams = self.params  # type: ignore[assignment]
        self.metric = _sacrebleu_metric(lambda: BLEU(
            tokenize=p.tokenize, lowercase=p.lowercase, smooth_method=p.smooth_method))

    def score_group(self, samples: Sequence[Sample]) -> list[Score]:
        if isinstance(self.metric, str):
            return [Score.error(self.metric) for _ in samples]
        rows = [references(s) for s in samples]
        bad = next((r for r in rows if isinstance(r, Score)), None)
        if bad is not None:
            return [bad for _ in samples]
        refs: list[list[str]] = [r for r in rows if not isinstance(r, Score)]
        width = max(len(r) for r in refs)
        # sacrebleu takes one stream per reference; a row with fewer pads with None
        streams = [[r[k] if k < len(r) else None for r in refs] for k in range(width)]
        result = self.metric.corpus_score([graded_text(s.text) or "" for s in samples],
                                          streams)
        signature = self.metric.get_signature().format()
        return [Score.ok(min(1.0, result.score / 100), bleu=result.score, signature=signature)
                for _ in samples]
