"""rewardkit_ifeval.language: langdetect's answers, bit for bit, from the faster detector.

IFEval's language checks call it in place of ``langdetect.detect``; a verdict may only
change if an answer does, so these tests hold the n-grams, every probability and the
answer equal to langdetect's own on texts of many scripts and on random character soup
(capitals, runs of spaces, punctuation, marks, CJK, URLs)."""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("rewardkit_ifeval")

import langdetect
from langdetect import detector_factory
from langdetect.lang_detect_exception import LangDetectException
from rewardkit_ifeval import language
from rewardkit_ifeval.checkers import registry

TEXTS = [
    "The quick brown fox jumps over the lazy dog. It was not amused, and said so.",
    "THIS IS WRITTEN IN CAPITAL LETTERS FROM THE FIRST WORD TO THE LAST.",
    "Le renard brun rapide saute par-dessus le chien paresseux; il n'était pas content.",
    "Der schnelle braune Fuchs springt über den faulen Hund. Ärger, Öl und Übermut.",
    "El veloz zorro marrón salta sobre el perro perezoso, ¿no es así? ¡Claro que sí!",
    "Быстрая коричневая лиса прыгает через ленивую собаку.",
    "敏捷的棕色狐狸跳过了懒狗。我们今天学习中文。",
    "素早い茶色の狐はのろまな犬を飛び越えた。カタカナもひらがなも。",
    "빠른 갈색 여우가 게으른 개를 뛰어넘었다.",
    "الثعلب البني السريع يقفز فوق الكلب الكسول، ی فارسی",
    "तेज़ भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है।",
    "Con cáo nâu nhanh nhẹn nhảy qua con chó lười. Tiếng Việt có dấu a\u0301 e\u0300 o\u0303.",
    "Mixed: hello мир 世界 and ȘȚ șț in Română, see https://example.com/a?b=c or a@b.org",
    "word  with   runs    of spaces\tand\nnew lines, and ALL CAPS words IN between",
    "Ceci est une phrase. " * 700,  # past langdetect's 10,000 characters
]


def _reference(text: str) -> tuple[list[str], list[float]] | str:
    return _detected(detector_factory._factory.create(), text)


def _ours(text: str) -> tuple[list[str], list[float]] | str:
    return _detected(language._Detector(detector_factory._factory), text)


def _detected(detector: Any, text: str) -> tuple[list[str], list[float]] | str:
    """The detector's n-grams and probabilities for ``text``, or its exception's name."""
    detector.append(text)
    try:
        detector.get_probabilities()
    except LangDetectException as exc:
        return type(exc).__name__
    detector.cleaning_text()
    return detector._extract_ngrams(), detector.langprob


@pytest.fixture(autouse=True)
def _seeded_factory():
    registry()  # seeds langdetect (0), as the reward does
    detector_factory.init_factory()


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_every_probability_and_the_answer_are_langdetects(text):
    assert _ours(text) == _reference(text)
    language.forget()
    assert language.detect(text) == langdetect.detect(text)
    assert language.detect(text) == langdetect.detect(text)  # remembered: the same


def test_random_character_soup_gives_langdetects_ngrams_and_probabilities():
    rng = random.Random(7)
    alphabet = ("aB  CDe,.!éÉșțŞ中文あアЖжبی\u1ea1\u0300\u0301\u0303’“\n\t1 XYZ xyz가अก"
                "\u00a0\u2028")
    for _ in range(400):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        assert _ours(text) == _reference(text), repr(text)


def test_a_text_without_features_raises_langdetects_exception():
    for text in ("", "   ", "12345 !!! ???", "https://example.com/x"):
        with pytest.raises(LangDetectException):
            langdetect.detect(text)
        with pytest.raises(LangDetectException):
            language.detect(text)


def test_ifevals_language_checks_ask_it_and_keep_their_verdicts():
    from if_verifiable.ifeval import instructions

    assert instructions.langdetect is language.LANGDETECT
    check = registry()["language:response_language"]("language:response_language")
    check.build_description(language="fr")
    assert check.check_following(TEXTS[2]) is True
    assert check.check_following(TEXTS[0]) is False
    assert check.check_following("12345") is True  # no features: followed, as Google's
