"""Built-in length and content rewards (registered as a default plugin).

``overlong_penalty``
    DAPO's soft overlong punishment: 0 up to ``max_length - buffer``, then linear down
    to ``-penalty`` at ``max_length`` (and beyond).
``repetition_penalty``
    minus the share of repeated n-grams (of words, characters, Chinese words or tokens):
    loops and copy-paste padding cost, in any script.
``keyword_coverage``
    groups of required terms (domain text: a symptom *and* a diagnosis *and* a
    therapy): partial credit for some groups, full credit for all (optionally in order).

All are inline and linear in the length of the output. Lengths in real tokens come
from the trainer's ``completion_ids`` or a named local tokenizer (see
:mod:`rewardkit.text.lengths`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from itertools import pairwise
from typing import Literal

from pydantic import Field, field_validator, model_validator

from rewardkit.authoring import Params, Reward, reward
from rewardkit.builtin._segmentation import SegmenterMissing, chinese_words
from rewardkit.builtin._tag_blocks import tag_block
from rewardkit.hookspecs import hookimpl
from rewardkit.text.lengths import (
    LengthError,
    LengthParams,
    completion_length,
    completion_token_ids,
)
from rewardkit.text.visible import visible_text
from rewardkit.types import Sample, Score


class OverlongParams(LengthParams):
    """Parameters of overlong_penalty."""

    max_length: int = Field(gt=0, description="length at which the full penalty applies")
    buffer: int = Field(gt=0, description="width of the linear ramp before max_length")
    penalty: float = Field(1.0, ge=0, description="value is -penalty at and past max_length")

    @model_validator(mode="after")
    def _buffer_fits(self) -> OverlongParams:
        if self.buffer > self.max_length:
            raise ValueError(f"buffer ({self.buffer}) exceeds max_length ({self.max_length})")
        return self


@reward(params=OverlongParams)
def overlong_penalty(sample: Sample, params: OverlongParams) -> Score:
    """Soft overlong penalty (DAPO): 0, then a linear ramp down to ``-penalty``.

    0 while ``length <= max_length - buffer``, then
    ``-penalty * (length - (max_length - buffer)) / buffer``, at most ``-penalty``.

    Why soft: a hard cut-off punishes a sound answer one token over the limit as hard as
    rambling; the ramp tells the policy which way to go. Example (max_length 100,
    buffer 20): 80 chars -> 0.0, 90 -> -0.5, 150 -> -1.0. With ``unit: tokens`` the
    length is the trainer's ``completion_ids`` count, else the named tokenizer's
    (``details.length_source`` says which); with neither, status error.
    """
    try:
        length, source = completion_length(sample, params.unit, params.tokenizer)
    except LengthError as exc:
        return Score.error(str(exc))
    start = params.max_length - params.buffer
    over = min(max(0, length - start), params.buffer)
    value = -params.penalty * over / params.buffer if over else 0.0
    return Score.ok(value, length=length, length_source=source)


NgramUnit = Literal["words", "chars", "zh_words", "tokens"]


class RepetitionParams(Params):
    """Parameters of repetition_penalty."""

    n: int = Field(3, ge=1, description="n-gram size, in units")
    unit: NgramUnit = Field(
        "words",
        description="what an n-gram is made of: words (whitespace-separated), chars "
        "(characters, whitespace left out: Chinese, Japanese, any script), zh_words "
        "(Chinese words segmented by jieba, as open-r1's language zh) or tokens (the "
        "trainer's completion_ids, else the tokenizer below)",
    )
    tokenizer: str | None = Field(
        None, description="local tokenizer path for unit tokens without completion_ids"
    )
    penalty: float = Field(1.0, ge=0, description="value of an output that is all repeats")
    min_ngrams: int = Field(
        1, ge=1, description="outputs with fewer n-grams than this are not penalised"
    )
    tag: str | None = Field(
        None, description="only look inside the last block of this tag, e.g. think "
        "(null: the whole output; not with unit tokens)"
    )

    @model_validator(mode="after")
    def _tag_needs_text(self) -> RepetitionParams:
        if self.tag is not None and self.unit == "tokens":
            raise ValueError("tag selects text; token ids cover the whole output")
        return self


#: a word longer than this many visible characters is read in pieces of ``_PIECE_CHARS``
_LONG_WORD_CHARS = 24
_PIECE_CHARS = 8


def _words(text: str) -> list[str]:
    """The visible words of ``text``: whitespace-separated, invisible characters left out
    (:func:`rewardkit.text.visible.visible_text`), so ``the\u200banswer`` is one word and a
    word of nothing visible is none. A word longer than ``_LONG_WORD_CHARS`` is read as
    consecutive pieces of ``_PIECE_CHARS`` characters: a loop written without spaces
    (``hahaha...``, ``the\u200banswer\u200bis...``, an unspaced Chinese loop) repeats
    its pieces, while a long word that does not loop (a URL, a hash) has distinct ones."""
    words: list[str] = []
    for word in text.casefold().split():
        seen = visible_text(word)
        if len(seen) <= _LONG_WORD_CHARS:
            words.extend([seen] if seen else [])
        else:
            words.extend(seen[i : i + _PIECE_CHARS] for i in range(0, len(seen), _PIECE_CHARS))
    return words


def _units(sample: Sample, params: RepetitionParams) -> Sequence[Hashable]:
    text = sample.text
    if params.tag is not None:
        text = tag_block(text, params.tag) or ""
    if params.unit == "words":
        return _words(text)
    if params.unit == "chars":
        return [ch for ch in text.casefold() if not ch.isspace()]
    if params.unit == "zh_words":
        return chinese_words(text.casefold())
    ids, _ = completion_token_ids(sample, params.tokenizer)
    return ids


@reward(params=RepetitionParams)
def repetition_penalty(sample: Sample, params: RepetitionParams) -> Score:
    """Minus the share of n-grams that repeat an earlier one.

    ``-penalty * repeated / total`` over the n-grams of the output, where ``repeated``
    counts n-grams already seen earlier in it (case-insensitive). The n-grams are made of
    ``unit``: words for spaced scripts; characters, jieba-segmented words or tokens for
    text without spaces (``这个这个这个这个这个``, n=2: zh_words -> -0.75 as open-r1,
    chars -> -7/9, words -> 0.0 since it is one "word").

    0 for text without repeats; near ``-penalty`` for a loop (``"the answer is 4. "``
    a hundred times). Example (n=1): ``"a b a b"`` -> -0.5. Words are visible words:
    invisible characters do not separate or make one, and a word over 24 characters is
    read in pieces of 8, so a loop glued by zero-width spaces or written without spaces
    (``ha`` 2,000 times) costs in the words unit too.
    """
    try:
        units = _units(sample, params)
    except LengthError as exc:
        return Score.error(str(exc))
    except SegmenterMissing as exc:
        return Score.error(str(exc))
    n = params.n
    total = len(units) - n + 1
    if total < params.min_ngrams or total <= 0:
        return Score.ok(0.0, ngrams=max(total, 0))
    distinct = len(set(zip(*(units[i:] for i in range(n)), strict=False)))
    repeated = total - distinct
    return Score.ok(-params.penalty * repeated / total, ngrams=total, repeated=repeated)


class KeywordGroup(Params):
    """One required concept: satisfied when any of its terms occurs."""

    name: str = Field("", description="label shown in the score details")
    any_of: list[str] = Field(min_length=1, description="terms, any one of which satisfies it")
    regex: bool = Field(False, description="terms are regular expressions, not plain words")

    @field_validator("any_of")
    @classmethod
    def _non_empty_terms(cls, terms: list[str]) -> list[str]:
        if any(not t.strip() for t in terms):
            raise ValueError("terms must not be empty")
        return terms


class KeywordParams(Params):
    """Parameters of keyword_coverage."""

    groups: list[KeywordGroup] = Field(min_length=1, description="the required groups")
    score: float = Field(1.0, description="value when every group is found (in order)")
    partial: float = Field(
        0.5,
        ge=0,
        le=1,
        description="share of score paid pro rata for incomplete coverage: "
        "partial * score * found / groups (0: all or nothing)",
    )
    in_order: bool = Field(
        False, description="full credit needs the groups' first mentions in the listed order"
    )
    case_sensitive: bool = Field(False, description="match letter case")
    answer_tag: str | None = Field(
        None, description="only look inside the last block of this tag (null: whole output)"
    )
    negation: bool = Field(
        False,
        description="a mention in a negated phrase or a question does not count: a cue "
        "such as no, not, without, denies, lack of, zero, doubtful, improbable, pointless, "
        "instead of or ruled out up to 5 words before it in its sentence; absent, "
        "excluded, unlikely, doubtful, pointless, -free, not or ruled out up to 3 words "
        "after it; a bare cue after its comma, colon or dash ('fever, not', 'cough: "
        "none'); or a sentence ending in '?' (English)",
    )

    @model_validator(mode="after")
    def _regexes_compile(self) -> KeywordParams:
        for group in self.groups:
            for term in group.any_of if group.regex else ():
                try:
                    re.compile(term)
                except re.error as exc:
                    raise ValueError(f"group {group.name or group.any_of!r}: term {term!r} "
                                     f"is not a valid regular expression: {exc}") from None
        return self


_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
# a negation's scope ends at the end of its sentence or clause, or at a contrast word
_SCOPE_END = re.compile(r"[.;:!?\n]|\b(?:but|however|although|though|yet|except)\b",
                        re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?\n]")
_NEGATION_BEFORE = frozenset({
    "no", "not", "without", "never", "neither", "nor", "none", "deny", "denies", "denied",
    "denying", "cannot", "can't", "isn't", "aren't", "wasn't", "weren't", "don't", "doesn't",
    "didn't", "won't", "excluded", "absent",
    # negative polarity beyond "no" and "not": a lack, a doubt, a zero, a futility
    "lack", "lacks", "lacking", "lacked", "zero", "nothing", "nobody", "non", "doubtful",
    "improbable", "unlikely", "pointless", "useless", "unnecessary", "unable", "fails",
    "failed", "exclude", "excludes", "excluding", "hardly", "barely",
})
_NEGATION_BEFORE_PAIRS = frozenset({
    ("absence", "of"), ("free", "of"), ("negative", "for"), ("rule", "out"), ("ruled", "out"),
    ("rules", "out"), ("ruling", "out"), ("instead", "of"), ("rather", "than"),
    ("no", "longer"),
})
_NEGATION_AFTER = frozenset({
    "absent", "excluded", "unlikely", "negative", "not", "no", "denied", "isn't", "wasn't",
    "aren't", "weren't",
    # "influenza is doubtful", "oseltamivir would be pointless", "fever-free"
    "doubtful", "improbable", "pointless", "useless", "unnecessary", "unwarranted",
    "lacking", "free", "none", "never", "nil", "impossible", "refuted",
})
_NEGATION_AFTER_PAIRS = frozenset({("ruled", "out"), ("rules", "out")})
#: what may follow a negation cue in the clause right after a mention and its comma,
#: colon or dash ("fever, not present", "cough: none", "influenza - not confirmed"); a
#: clause with any other word ("fever, not cough") negates that word, not the mention
_NEGATED_STATES = frozenset({
    "confirmed", "present", "seen", "found", "indicated", "needed", "detected", "reported",
    "observed", "given", "required", "recommended", "suspected", "likely", "noted",
    "shown", "evident", "there", "applicable", "really", "at", "all",
})
#: the clause right after a mention and its comma, colon or dash, up to the next one
_AFTER_VERDICT = re.compile(r"\s*[,:\u2013\u2014-]+\s*([^,;:.!?\n\u2013\u2014-]{1,40})"
                            r"(?=$|[,;:.!?\n\u2013\u2014-])")
_WORDS_BEFORE, _WORDS_AFTER = 5, 3
# how far around a mention the cues are looked for (enough for the words above), so a
# spammed keyword costs a bounded amount per mention
_LOOK_BEFORE, _LOOK_AFTER = 80, 48
# how far after a mention the end of its sentence is looked for (a question mark there
# makes the mention a question, not a statement)
_LOOK_SENTENCE = 240
# with the negation check, how many mentions of one group are read before the group
# counts as missing (only keyword spam has more negated mentions than this)
_MAX_MENTIONS = 1_000


def _negated(text: str, start: int, end: int) -> bool:
    """Whether the mention ``text[start:end]`` sits in a negated phrase (NegEx-style
    cues before it within its clause, or right after it before a comma) or in a
    question (its sentence ends with ``?``)."""
    before = text[max(0, start - _LOOK_BEFORE) : start]
    ends = [cut.end() for cut in _SCOPE_END.finditer(before)]
    if ends:
        before = before[ends[-1] :]
    words = [w.lower() for w in _WORD.findall(before)][-_WORDS_BEFORE:]
    if any(w in _NEGATION_BEFORE for w in words) or any(
            pair in _NEGATION_BEFORE_PAIRS for pair in pairwise(words)):
        return True
    sentence_end = _SENTENCE_END.search(text, end, end + _LOOK_SENTENCE)
    if sentence_end is not None and sentence_end.group() == "?":
        return True
    after = text[end : end + _LOOK_AFTER]
    verdict = _AFTER_VERDICT.match(after)
    if verdict is not None:  # "fever, not", "cough: none", "influenza - not confirmed"
        words = [w.lower() for w in _WORD.findall(verdict.group(1))]
        if words and words[0] in _NEGATION_AFTER and all(
                w in _NEGATION_AFTER or w in _NEGATED_STATES for w in words):
            return True
    stop = _SCOPE_END.search(after)
    after = after[: stop.start()] if stop else after
    words = [w.lower() for w in _WORD.findall(after.split(",", 1)[0])][:_WORDS_AFTER]
    return any(w in _NEGATION_AFTER for w in words) or any(
        pair in _NEGATION_AFTER_PAIRS for pair in pairwise(words))


class KeywordCoverage(Reward):
    """Coverage of groups of required keywords: full for all, partial for some.

    ``score`` when every group is found (and, with ``in_order``, first mentioned in the
    listed order); otherwise ``partial * score * found / groups``.

    Example (SEEDS B domain text): groups ``symptom`` (fever|cough), ``diagnosis``
    (influenza|pneumonia), ``therapy`` (oseltamivir|antibiotic); "fever, likely
    influenza" -> 0.5 * 2/3 = 0.333; adding "start oseltamivir" -> 1.0.
    Plain terms match whole words; ``regex: true`` terms are searched as written.
    With ``negation``, a mention in a negated phrase or a question does not count, so
    ``No fever. Not influenza.`` and ``Fever? Influenza?`` cover nothing (English cues;
    off by default, as a cue list can misread a sentence such as "not only fever but
    also cough").
    """

    name = "keyword_coverage"
    Params = KeywordParams
    params: KeywordParams

    def setup(self) -> None:
        flags = 0 if self.params.case_sensitive else re.IGNORECASE
        self._patterns = [
            re.compile(
                "|".join(
                    f"(?:{t})" if g.regex else rf"(?<!\w){re.escape(t)}(?!\w)" for t in g.any_of
                ),
                flags,
            )
            for g in self.params.groups
        ]

    def score(self, sample: Sample) -> Score:
        text = sample.text
        if self.params.answer_tag is not None:
            text = tag_block(text, self.params.answer_tag) or ""
        positions = []
        missing = []
        for group, pattern in zip(self.params.groups, self._patterns, strict=True):
            found = self._mention(pattern, text)
            if found is None:
                missing.append(group.name or group.any_of[0])
            else:
                positions.append(found)
        total = len(self._patterns)
        complete = not missing and (not self.params.in_order or positions == sorted(positions))
        if complete:
            return Score.ok(self.params.score, found=total)
        value = self.params.partial * self.params.score * len(positions) / total
        return Score.ok(value, found=len(positions), missing=missing,
                        out_of_order=not missing)

    def _mention(self, pattern: re.Pattern[str], text: str) -> int | None:
        """Where the first mention that counts starts (with ``negation``: not negated and
        not questioned)."""
        for seen, found in enumerate(pattern.finditer(text)):
            if not self.params.negation:
                return found.start()
            if seen >= _MAX_MENTIONS:
                return None
            if not _negated(text, found.start(), found.end()):
                return found.start()
        return None


@hookimpl
def register_rewards(register: Callable[[type[Reward]], None]) -> None:
    register(overlong_penalty)
    register(repetition_penalty)
    register(KeywordCoverage)
