"""``gym_answer``: a completion scored by its reasoning-gym dataset's own ``score_answer``.

A row carries what reasoning-gym generated for it (``rewardkit gym-data`` writes it so):
the dataset name in ``gym_dataset`` and the entry's ``metadata`` in ``gym_entry`` (a
mapping, or its JSON text, so that rows of different datasets share one Arrow schema);
the reference is the entry's ``answer``. The answer is the last ``<answer>`` block, or
the final non-empty line when there is none.

What the scorers pay cheaply, the reward refuses before them (docs/plugins/gym.md): an
empty answer, several answer blocks (the last one is read: a hedge), alternatives (``57 or
58``, and ``57 58`` where the scorer reads only the first of two candidates), and an
answer that copies the question (``game_of_life_halting`` pays the echoed question 1.0,
``rotate_matrix`` 0.22). Several scorers pay any well-formed wrong
answer 0.01 or 0.05 (``advanced_geometry``, ``countdown``, ``arc_agi``,
``sentence_reordering``): with ``credit: full`` (the default) only a full score pays, and
with ``credit: scorer`` what the scorer pays a decoy answer (:data:`DECOYS`) is taken out
(countdown's 0.05 for any well-formed expression: it pays the decoy ``0`` as much).
A scorer that pays a decoy full marks cannot tell answers apart
(``game_of_life_halting`` compares ``bool("False") == bool("True")``; ``coin_flip`` pays
``0`` for ``0.109375``): then only the reference itself (whitespace aside, or the same
number) is paid.

What a scorer does not check, the reward does where the row says it: ``puzzle24``'s
scorer pays any expression of four numbers that makes 24, so one expression was paid on
every row; the answer must use the row's own numbers (:data:`ROW_CHECKS`). The grids of
``arc_agi`` and ``rearc`` are tuples their scorers compare, which JSON turns into lists:
they are made tuples again (:data:`TUPLE_FIELDS`). Each dataset's scorer is built once
per worker process (:func:`scorer_for`: building arc_agi's dataset takes ~2 s).
"""

from __future__ import annotations

import functools
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from rewardkit import (
    ExecutionMode,
    Params,
    Reward,
    Sample,
    Score,
    graded_text,
    prompt_text,
    visible_length,
)

#: a question this long found whole in an answer is a copy, not a coincidence
ECHO_MIN_WORDS = 8
_WORD = re.compile(r"\w+")
#: alternatives offered instead of one answer: "57 or 58"
_OR = re.compile(r"(?<![A-Za-z])or(?![A-Za-z])", re.IGNORECASE)
#: answers to no task, and the shortest numbers: what a scorer pays one that is not the
#: reference, it pays without the task solved (coin_flip pays "0" full marks for any
#: probability below 1: its prefix credit divides by the shorter string)
DECOYS = ("no answer here", "0", "1")
#: entry metadata fields a dataset's scorer compares as (nested) tuples: JSON keeps lists
TUPLE_FIELDS: dict[str, tuple[str, ...]] = {"arc_agi": ("output",), "rearc": ("output",)}
Scorer = Callable[[str, dict[str, Any]], float]
_scorers: dict[str, Scorer] = {}


def scorer_for(name: str) -> Scorer:
    """The ``score_answer`` of reasoning-gym dataset ``name``, built once per process
    (reasoning-gym builds a whole dataset for it: 1.85 s for arc_agi, 0.65 s for
    group_anagrams, where one score takes milliseconds). ValueError for an unknown name."""
    if name not in _scorers:
        import reasoning_gym

        _scorers[name] = reasoning_gym.get_score_answer_fn(name)
    return _scorers[name]


def _puzzle24_numbers(answer: str, metadata: Mapping[str, Any]) -> str | None:
    numbers = metadata.get("numbers")
    if not isinstance(numbers, list) or not all(isinstance(n, int) for n in numbers):
        raise KeyError("the puzzle24 row has no 'numbers' in its entry metadata")
    used = [int(n) for n in re.findall(r"\b\d+\b", answer)]  # as its scorer reads them
    if sorted(used) != sorted(numbers):
        return f"the expression uses {sorted(used)}, the puzzle's numbers are {sorted(numbers)}"
    return None


#: what a dataset's scorer leaves unchecked that its row says: dataset -> a check of the
#: answer against the entry metadata (why it is wrong, or None; KeyError: the row lacks it)
ROW_CHECKS: dict[str, Callable[[str, Mapping[str, Any]], str | None]] = {
    "puzzle24": _puzzle24_numbers}


def entry_metadata(name: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The entry metadata as the dataset's scorer expects it: the fields of
    :data:`TUPLE_FIELDS` made (nested) tuples again."""
    restored = dict(metadata)
    for field in TUPLE_FIELDS.get(name, ()):
        if isinstance(restored.get(field), list):
            restored[field] = _tuples(restored[field])
    return restored


def _tuples(value: Any) -> Any:
    if not isinstance(value, list | tuple):
        return value
    if not any(isinstance(v, list | tuple) for v in value):
        return tuple(value)
    return tuple(_tuples(v) for v in value)


class GymParams(Params):
    """Parameters of gym_answer."""

    answer_tag: str = Field(
        "answer", description="tag whose last block holds the answer; without one, the "
        "final non-empty line is the answer")
    reasoning_tag: str | None = Field(
        None, description="name of the reasoning tag (e.g. 'think'): read only what follows "
        "the last closing </tag>, and pay 0 when it never closes; None reads the whole "
        "output, less a <think> block (rewardkit.graded_text)")
    credit: Literal["full", "scorer"] = Field(
        "full", description="full: 1 when the dataset's scorer gives full marks, else 0; "
        "scorer: the scorer's own value (partial credit, including the 0.01-0.05 some "
        "scorers pay any well-formed answer)")
    dataset_column: str = Field("gym_dataset", description="metadata column: dataset name")
    entry_column: str = Field(
        "gym_entry", description="metadata column: the entry's metadata (mapping or JSON)")


class GymAnswer(Reward):
    """The answer is right by the row's reasoning-gym dataset's own scorer.

    Details: ``dataset``, ``scorer`` (the scorer's raw value), ``decoy`` (the most it
    pays a decoy) and ``answer`` (what was read). Status error for a row without a known
    dataset or its entry metadata. A scorer that raises on the answer pays 0 (the answer
    is malformed), with the error in details.
    Example: a ``gym-data spell_backward`` row, reference ``"tac"``, and
    ``<answer>tac</answer>`` -> 1.0; ``<answer></answer>`` -> 0.0.
    """

    name: ClassVar[str] = "gym_answer"
    Params: ClassVar[type[Params]] = GymParams
    mode: ClassVar[ExecutionMode] = ExecutionMode.PROCESS
    #: the first score in a worker imports reasoning-gym (1 s quiet, more when loaded)
    timeout: ClassVar[float | None] = 60.0

    def score(self, sample: Sample) -> Score:
        params: GymParams = self.params  # type: ignore[assignment]
        row = _entry(sample, params)
        if isinstance(row, Score):
            return row
        name, metadata = row
        try:
            scorer = scorer_for(name)
        except ValueError:
            return Score.error(f"unknown reasoning-gym dataset {name!r}")
        metadata = entry_metadata(name, metadata)
        text = graded_text(sample.text, params.reasoning_tag)
        if text is None:
            return Score.ok(0.0, "the reasoning never closes", dataset=name)
        if text.count(f"</{params.answer_tag}>") > 1:
            return Score.ok(0.0, "several answer blocks", dataset=name)
        answer = read_answer(text, params.answer_tag)
        if not _visible(answer):
            return Score.ok(0.0, "no answer", dataset=name)
        question = prompt_text(sample.prompt, turns="last_user")
        if _echoes(answer, question):
            return Score.ok(0.0, "the question copied into the answer", dataset=name)
        check = ROW_CHECKS.get(name)
        if check is not None:
            try:
                wrong = check(answer, metadata)
            except KeyError as exc:
                return Score.error(str(exc.args[0]) if exc.args else str(exc), dataset=name)
            if wrong:
                return Score.ok(0.0, wrong, dataset=name, answer=answer[:200])
        gold = sample.reference if isinstance(sample.reference, str) else None
        entry: dict[str, Any] = {"question": question, "answer": gold, "metadata": metadata}
        try:
            raw = float(scorer(answer, entry))
        except Exception as exc:  # the scorer chokes on a malformed answer: not paid
            return Score.ok(0.0, "the dataset's scorer refused the answer", dataset=name,
                            error=f"{type(exc).__name__}: {exc}"[:300], answer=answer[:200])
        if raw > 0 and gold is not None:
            hedge = _hedge(answer, gold, scorer, entry)
            if hedge:
                return Score.ok(0.0, hedge, dataset=name, scorer=raw, answer=answer[:200])
        floor = _decoy_floor(name, sample.metadata.get(params.entry_column), scorer, entry)
        if floor >= 1.0:  # the scorer pays any answer: only the reference is right
            right = gold is not None and _same(answer, gold)
            return Score.ok(float(right), dataset=name, scorer=raw, decoy=floor,
                            answer=answer[:200])
        if params.credit == "full":  # exactly 1: spell_backward's prefix credit sums to
            # 1.0000000000000002 for the answer with text appended ("olleh or 0"), past its
            # own -0.2 for an imperfect answer; every scorer pays a right answer 1.0 itself
            value = float(raw == 1.0)
        else:  # the credit any answer gets is taken out
            value = 1.0 if raw == 1.0 else min(1.0, max(0.0, (raw - floor) / (1.0 - floor)))
        return Score.ok(value, dataset=name, scorer=raw, decoy=floor, answer=answer[:200])


def read_answer(text: str, tag: str) -> str:
    """The last ``<tag>...</tag>`` block's content, else the final non-empty line."""
    opener, closer = f"<{tag}>", f"</{tag}>"
    end = text.rfind(closer)
    if end >= 0:
        start = text.rfind(opener, 0, end)
        if start >= 0:
            return text[start + len(opener):end].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _entry(sample: Sample, params: GymParams) -> tuple[str, dict[str, Any]] | Score:
    name = sample.metadata.get(params.dataset_column)
    if not isinstance(name, str) or not name:
        return Score.error(f"the sample has no reasoning-gym dataset name (the "
                           f"{params.dataset_column!r} column)")
    raw = sample.metadata.get(params.entry_column)
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    if not isinstance(raw, Mapping):
        return Score.error(f"the {params.entry_column!r} column must hold the entry's "
                           "metadata (a mapping or its JSON text)")
    return name, dict(raw)


#: the decoy floor of the last rows scored (a GRPO group scores one row's completions
#: together: its decoys are asked once, not once per completion)
_FLOORS_KEPT = 1024
_floors: OrderedDict[tuple[str, str, str, str], float] = OrderedDict()


def _decoy_floor(name: str, raw: Any, scorer: Any, entry: dict[str, Any]) -> float:
    """:func:`_paid_to_anything`, remembered for rows whose entry (``raw``) is JSON text."""
    if not isinstance(raw, str) or not isinstance(entry["answer"], str | None):
        return _paid_to_anything(scorer, entry)
    key = (name, raw, entry["question"], entry["answer"] or "")
    if key in _floors:
        _floors.move_to_end(key)
        return _floors[key]
    floor = _floors[key] = _paid_to_anything(scorer, entry)
    if len(_floors) > _FLOORS_KEPT:
        _floors.popitem(last=False)
    return floor


def _paid_to_anything(scorer: Any, entry: dict[str, Any]) -> float:
    """The most the scorer pays a decoy that is not the reference (:data:`DECOYS`); a
    scorer that raises on a decoy pays it nothing."""
    paid = 0.0
    for decoy in DECOYS:
        if entry["answer"] is not None and _same(decoy, entry["answer"]):
            continue
        try:
            paid = max(paid, float(scorer(decoy, entry)))
        except Exception:  # a scorer that refuses the decoy pays it nothing
            continue
    return paid


def _hedge(answer: str, gold: str, scorer: Any, entry: dict[str, Any]) -> str:
    """Why a paid answer is a hedge (empty when it is not): alternatives joined by ``or``,
    more of them than the reference has (``57 or 58``; gsm_symbolic reads the first number,
    sympy's parser evaluates ``a or b`` to ``a``), or the reference with another
    candidate beside it (``57 58``, ``57, 58``) that the scorer pays only in that order:
    with the candidate moved to the other side of the reference, it is not paid in full,
    so the scorer read one of two answers. What stands beside the reference is a
    candidate when it looks like one: digits where the reference has digits, else as
    many words as the reference has. ``57 euros``, ``x = 57`` or ``57 (final answer)``
    are not hedges."""
    if len(_OR.findall(answer)) > len(_OR.findall(gold)):
        return "alternatives offered instead of one answer"
    words = gold.split()
    if answer.split() == words:  # the reference alone (the common case: no pattern to build)
        return ""
    if not words:
        return ""
    found = re.search(r"(?<![\w.])" + r"\s+".join(map(re.escape, words)) + r"(?![\w.])", answer)
    if found is None:
        return ""
    before, after = answer[: found.start()].strip(), answer[found.end() :].strip()
    if bool(before) == bool(after):  # the reference alone, or text on both sides
        return ""
    rest = before or after
    if any(c.isdigit() for c in gold):
        candidate = any(c.isdigit() for c in rest)
    else:
        candidate = len(_WORD.findall(rest)) >= len(_WORD.findall(gold))
    if not candidate:
        return ""
    stated = found.group(0)
    swapped = f"{after} {stated}" if after else f"{stated} {before}"
    try:
        paid = float(scorer(swapped, entry))
    except Exception:  # a scorer that refuses the other order pays it nothing
        paid = 0.0
    if paid < 1.0:
        return "another candidate beside the reference: the scorer reads one of them"
    return ""


def _same(answer: str, reference: str) -> bool:
    """The answer is the reference, whitespace aside or as the same number."""
    if " ".join(answer.split()) == " ".join(reference.split()):
        return True
    try:
        return float(answer) == float(reference)
    except ValueError:
        return False


def _visible(answer: str) -> bool:
    """The answer has a visible character (an ASCII one is found without the scan of
    every invisible code point, which costs ~0.4 ms on a long answer)."""
    if answer.isascii():
        return any("!" <= c <= "~" for c in answer)
    return visible_length(answer) > 0


def _echoes(answer: str, question: str) -> bool:
    echo = _question_words(question)
    return (echo.count(" ") + 1 >= ECHO_MIN_WORDS
            and echo in " ".join(_WORD.findall(answer.lower())))


@functools.lru_cache(maxsize=1024)
def _question_words(question: str) -> str:
    """The words of a question, lower case, one space apart (read once for all the
    completions of a group)."""
    return " ".join(_WORD.findall(question.lower()))
