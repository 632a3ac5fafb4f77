"""``langdetect.detect``'s answer, computed in a fraction of its time.

IFEval's language checks (``language:response_language``, ``change_case:english_capital``
and ``change_case:english_lowercase``) ask ``langdetect.detect`` for a response's
language; it is most of the IFEval checkers' time (its per-n-gram update walks the 55
language probabilities in a Python loop). :func:`detect` runs langdetect's own detector
(its profiles, its text cleaning, its seeded random draws, in the same order) and does
the same floating-point operations in the same order, on numpy arrays where langdetect
loops over a list: every multiplication, addition and division is the one langdetect
does, so every probability is bit for bit the same and so is the answer. The n-grams
are langdetect's, in its order, read off the normalised text in one pass (each
character's normalisation remembered) instead of through its per-character buffer.
With the detector seeded (:func:`rewardkit_ifeval.checkers.registry` seeds it, 0), the
answer is a function of the text: a text asked twice (two language instructions on one
response, one response twice in a group) is detected once.

``tests/plugins/ifeval/test_language.py`` holds the answers and the probabilities equal
to langdetect's on texts of many scripts; ``benchmarks/bench_ifeval.py`` compares the
verdicts with Google's checkers, which call langdetect itself.
"""

from __future__ import annotations

import functools
import re
import types
from typing import Any

import numpy as np
from langdetect import detector_factory
from langdetect.detector import Detector
from langdetect.lang_detect_exception import ErrorCode, LangDetectException
from langdetect.utils.ngram import NGram

#: what the checker modules read of ``langdetect`` (``detect`` and its exception)
LANGDETECT = types.SimpleNamespace(detect=None, LangDetectException=LangDetectException)

_SPACES = re.compile(" {2,}")
_LATIN = re.compile("[A-z]")
_FROM_0300 = re.compile("[\u0300-\U0010ffff]")
_rows: dict[str, np.ndarray] = {}


class _Normalized(dict[int, str]):
    """``NGram.normalize`` of each character, for ``str.translate``, filled as met."""

    def __missing__(self, code: int) -> str:
        got = NGram.normalize(chr(code))
        if len(got) != 1:  # langdetect maps every character to one character
            raise ValueError(f"NGram.normalize({chr(code)!r}) is {got!r}")
        self[code] = got
        return got


_NORMALIZED = _Normalized()


def _row(table: dict[str, list[float]], word: str) -> np.ndarray:
    got = _rows.get(word)
    if got is None:
        got = _rows[word] = np.array(table[word], dtype=np.float64)
    return got


def _normalized_max(prob: np.ndarray) -> float:
    """langdetect's ``_normalize_prob``: divide by the sum (summed left to right, as its
    ``sum`` of a list does) and return the largest quotient (the largest value divided:
    a rounded division by a positive number keeps the order)."""
    values = prob.tolist()
    total = sum(values)
    largest = max(values) / total  # ZeroDivisionError where langdetect's is
    prob /= total
    return largest


class _Detector(Detector):
    """langdetect's Detector with its two hot loops done faster, the same numbers out."""

    def append(self, text: str) -> None:
        """langdetect's ``append``: URLs and e-mail addresses blanked, Vietnamese
        normalised, the first ``max_text_length`` characters kept with each run of
        spaces read as one."""
        text = self.URL_RE.sub(" ", text)
        text = self.MAIL_RE.sub(" ", text)
        text = NGram.normalize_vi(text)
        self.text += _SPACES.sub(" ", text[:self.max_text_length])

    def cleaning_text(self) -> None:
        """langdetect's ``cleaning_text``: the Latin letters (``A`` to ``z``) dropped
        when the characters from U+0300 up outnumber them twice over. (langdetect
        compares ``unicode_block(ch)``, a number, with the name 'Latin Extended
        Additional': never equal, so every character from U+0300 counts.)"""
        text: str = self.text  # type: ignore[has-type]
        if len(_LATIN.findall(text)) * 2 < len(_FROM_0300.findall(text)):
            self.text = _LATIN.sub("", text)

    def _extract_ngrams(self) -> list[str]:
        """langdetect's n-grams, in its order. Its ``NGram`` buffer, read as a whole:
        the text normalised character by character (``NGram.normalize``), runs of spaces
        read as one and a space before the first character; at each character ``c``
        after ``b`` (``b`` a space at a word's start) the 1-gram ``c`` (not a space), the
        2-gram ``bc`` and the 3-gram ending at ``c`` (unless ``b`` is a space), each
        where the profiles know it, none where ``b`` and ``c`` are both upper case."""
        table = self.word_lang_prob_map
        text = _SPACES.sub(" ", " " + self.text.translate(_NORMALIZED))
        result: list[str] = []
        add = result.append
        b = " "
        for j in range(1, len(text)):
            c = text[j]
            if c.isupper() and b.isupper():
                b = c
                continue
            if c != " " and c in table:
                add(c)
            gram = b + c
            if gram in table:
                add(gram)
            if b != " " and j >= 2:
                gram = text[j - 2] + gram
                if gram in table:
                    add(gram)
            b = c
        return result

    def _detect_block(self) -> None:
        self.cleaning_text()
        ngrams = self._extract_ngrams()
        if not ngrams:
            raise LangDetectException(ErrorCode.CantDetectError, "No features in text.")
        table = self.word_lang_prob_map
        self.langprob = [0.0] * len(self.langlist)
        rnd = self.random
        rnd.seed(self.seed)
        below, count = rnd._randbelow, len(ngrams)  # rnd.choice(ngrams), as it draws
        for _ in range(self.n_trial):
            prob = np.array(self._init_probability(), dtype=np.float64)
            alpha = self.alpha + rnd.gauss(0.0, 1.0) * self.ALPHA_WIDTH
            weight = alpha / self.BASE_FREQ
            factors: dict[str, np.ndarray] = {}  # weight + the word's row, as langdetect adds
            i = 0
            while True:
                word = ngrams[below(count)]
                factor = factors.get(word)
                if factor is None:
                    factor = factors[word] = weight + _row(table, word)
                prob *= factor
                if i % 5 == 0 and (_normalized_max(prob) > self.CONV_THRESHOLD
                                   or i >= self.ITERATION_LIMIT):
                    break
                i += 1
            for j, p in enumerate(prob.tolist()):
                self.langprob[j] += p / self.n_trial


def _factory() -> Any:
    detector_factory.init_factory()
    return detector_factory._factory


def probabilities(text: str) -> list[Any]:
    """``langdetect.detect_langs(text)``, by :class:`_Detector`."""
    detector = _Detector(_factory())
    detector.append(text)
    return detector.get_probabilities()


@functools.lru_cache(maxsize=256)
def _seeded_detect(text: str, seed: int) -> str:
    detector = _Detector(_factory())
    detector.append(text)
    return detector.detect()


def detect(text: str) -> str:
    """``langdetect.detect(text)``: the same answer (and the same
    ``LangDetectException`` for a text without features); remembered per text while the
    detector is seeded."""
    seed = _factory().seed
    if seed is None:  # unseeded, each call draws afresh, as langdetect's does
        detector = _Detector(_factory())
        detector.append(text)
        return detector.detect()
    return _seeded_detect(text, seed)


LANGDETECT.detect = detect


def forget() -> None:
    """Empty the answers remembered per text (a benchmark's cold start)."""
    _seeded_detect.cache_clear()
