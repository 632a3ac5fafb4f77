"""The IFBench checks that stop at a response's first tokens (rewardkit_ifeval.checkers:
``words:start_verb``, ``format:title_case``, ``words:words_position``) give the checkers'
own verdicts, errors included, and tokenize no further than they need."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("rewardkit_ifeval")

from rewardkit_ifeval import checkers

BASE = [
    "",
    " ",
    "a",
    "Go home.",
    "Dr. Smith went to Washington. He said \"hi.\" Then he left! Did he? Yes -- at 5 p.m.",
    "The U.S.A. is large. Mr. Jones, Inc. agrees (mostly); see www.example.com... Fine.",
    "\u00c9t\u00e9 \u00e0 Paris. \u00ab Bonjour \u00bb, dit-il. Ca va?",
    "First line\nsecond line without a stop\n\n* a bullet\n* another one.",
    "Can't won't shouldn't. 'Quoted' words, \u201ccurly\u201d ones, and $12.50 or 3.5%.",
    "x y. A b C d. e F.",
]
#: each text as written, in title case, upper case and lower case
TEXTS = [v for t in BASE for v in dict.fromkeys([t, t.title(), t.upper(), t.lower()])]


def _outcome(check: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", check(*args)
    except Exception as exc:  # the tagger's data missing: NLTK's LookupError
        return type(exc).__name__, str(exc)


def _checker(iid: str, **kwargs: Any) -> Any:
    check = checkers.registry()[iid](iid)
    check.build_description(**kwargs)
    return check


def _nltk() -> Any:
    return checkers._checker_nltk(_checker("format:title_case"))


@pytest.mark.parametrize("text", TEXTS)
def test_word_tokens_are_nltks_word_tokenize(text):
    word_tokenize = _nltk().word_tokenize
    assert list(checkers.word_tokens(text, word_tokenize)) == word_tokenize(text)


@pytest.mark.parametrize("iid", ["words:start_verb", "format:title_case"])
def test_a_shortcut_gives_the_checkers_verdict_or_its_error(iid):
    check = _checker(iid)
    shortcut = checkers._SHORTCUTS[type(check)]
    for text in TEXTS:
        assert _outcome(shortcut, check, text) == _outcome(check.check_following, text), text


def test_words_position_gives_the_checkers_verdict_with_the_keyword_anywhere():
    word_tokenize = _nltk().word_tokenize
    seen = set()
    for text in [*TEXTS, "I love it, and I say love ."]:
        words = word_tokenize(text)
        for keyword in {"love", *words[1:2], *words[-2:-1]}:
            check = _checker("words:words_position", keyword=keyword)
            shortcut = checkers._SHORTCUTS[type(check)]
            got = _outcome(shortcut, check, text)
            assert got == _outcome(check.check_following, text), (text, keyword)
            seen.add(got)
    assert seen == {("ok", True), ("ok", False)}


def test_title_case_stops_at_the_first_sentence_that_breaks_it(monkeypatch):
    import nltk.tokenize

    treebank = nltk.tokenize._treebank_word_tokenizer
    split = treebank.tokenize
    calls = []

    def counted(text: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(text)
        return split(text, *args, **kwargs)

    monkeypatch.setattr(treebank, "tokenize", counted)
    check = _checker("format:title_case")
    text = "this one is not in title case. " + "Nor Is This Long Tail. " * 200
    assert checkers.follows(check, [text]) is False
    assert calls == ["this one is not in title case."]
    calls.clear()
    assert check.check_following(text) is False  # the checker's own: every sentence
    assert len(calls) == 201
