"""``instruction_following``: the IFEval / IFBench instructions of each row, checked.

A row names its instructions as the public datasets ship them: ``instruction_id_list``
(``["punctuation:no_comma", "length_constraints:number_words"]``) and ``kwargs``, one
mapping per instruction (``[{}, {"relation": "at least", "num_words": 300}]``; keys
whose value is null are ignored, as the datasets fill every key of every instruction).
Each instruction is checked as Google's reference evaluation checks it, in strict mode
(the response as written) or loose mode (also without ``*`` and without its first or
last line); the value is 1 when every instruction is followed (``credit: all``, the
benchmark's prompt-level accuracy) or the fraction followed (``credit: fraction``).

What the checks cannot see, the reward refuses before them (docs/plugins/ifeval.md):
an answer with no visible text (zero-width characters only pass Google's blank test), an
answer that copies the whole prompt when no instruction asks to repeat it (the copy
carries the keywords the prompt asks for), and one shorter than ``min_words`` words once
any copy is taken out (a bare ``ok`` follows "no commas" and "all lowercase" alike).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
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
from rewardkit.text.visible import folded
from rewardkit_ifeval.checkers import MissingData, UnknownInstruction, evaluate, warm

#: instruction types whose honest answer may be a word or two (one option, a copied span,
#: a reversal): the word floor yields to them
SHORT_ANSWER_TYPES = frozenset({
    "detectable_format:constrained_response",
    "custom:character_reverse",
    "custom:word_reverse",
    "format:options",
    "repeat:repeat_simple",
    "repeat:repeat_span",
})
#: instruction types that ask for the prompt, or part of it, to be repeated
REPEAT_TYPES = frozenset({
    "combination:repeat_prompt",
    "repeat:repeat_change",
    "repeat:repeat_simple",
    "repeat:repeat_span",
})
#: a prompt this long found whole in an answer is a copy, not a coincidence
ECHO_MIN_WORDS = 8
_WORD = re.compile(r"\w+")
#: a printable ASCII character, visible in any text: no need to scan it whole
_ASCII_VISIBLE = re.compile("[!-~]")


class InstructionParams(Params):
    """Parameters of instruction_following."""

    mode: Literal["strict", "loose"] = Field(
        "strict", description="strict: the response as written; loose: an instruction is "
        "also followed by the response without '*' or without its first/last line "
        "(Google's loose accuracy)")
    credit: Literal["all", "fraction"] = Field(
        "all", description="all: 1 when every instruction is followed, else 0 (prompt-level "
        "accuracy); fraction: the share of the row's instructions followed")
    instructions_column: str = Field(
        "instruction_id_list", description="metadata column holding the instruction ids")
    kwargs_column: str = Field(
        "kwargs", description="metadata column holding one kwargs mapping per instruction "
        "(a list, or its JSON text)")
    reasoning_tag: str | None = Field(
        None, description="name of the reasoning tag of a reasoning model (e.g. 'think'): "
        "check only what follows the last closing </tag>, and pay 0 when it never closes; "
        "None checks the whole output, less a <think> block (rewardkit.graded_text)")
    min_words: int = Field(
        5, ge=0, description="fewest visible words an answer needs once any copy of the "
        "prompt is taken out; an instruction that allows a shorter answer lowers it (a "
        "constrained response, given options, a reversal or a copied span: 1; 'less than "
        "N words': N-1; a word range: its lower end). 0 checks the instructions alone, as "
        "the reference evaluation does")
    refuse_echo: bool = Field(
        True, description="pay 0 for an answer that contains the whole prompt (8 words or "
        "more) when no instruction of the row asks to repeat it: the copy carries the "
        "prompt's keywords; false checks the instructions alone, as the reference does")


class InstructionFollowing(Reward):
    """The response follows the row's IFEval / IFBench instructions.

    Details: ``followed`` ([id, bool] per instruction, in the row's order) and
    ``followed_count``. Status
    error for a row without instruction ids, an unknown id, kwargs an instruction does not
    take, or an IFBench type whose NLTK data is not installed (never downloaded).
    Example: ``instruction_id_list: ["punctuation:no_comma"]`` and a reply without a comma
    -> 1.0; with one -> 0.0.
    """

    name: ClassVar[str] = "instruction_following"
    Params: ClassVar[type[Params]] = InstructionParams
    mode: ClassVar[ExecutionMode] = ExecutionMode.PROCESS
    #: the first score in a process imports the checkers (about 0.5 s quiet: NLTK's and
    #: if-verifiable's package imports are left out, rewardkit_ifeval.checkers; seconds
    #: on a loaded machine); in a worker that is done at load (``warm``)
    timeout: ClassVar[float | None] = 60.0

    def warm(self) -> None:
        """In a process-mode worker, at load: import the checkers and run each
        instruction type once (:func:`rewardkit_ifeval.checkers.warm`), so the first
        batch does not compile their regular expressions or load langdetect's profiles
        and the Punkt model."""
        warm()

    def score(self, sample: Sample) -> Score:
        params: InstructionParams = self.params  # type: ignore[assignment]
        row = _row_instructions(sample, params)
        if isinstance(row, Score):
            return row
        ids, kwargs = row
        text = graded_text(sample.text, params.reasoning_tag)
        if text is None:
            return Score.ok(0.0, "the reasoning never closes")
        prompt = prompt_text(sample.prompt, turns="last_user")
        refused = _off_task(text, prompt, ids, kwargs, params.min_words, params.refuse_echo)
        if refused:
            return Score.ok(0.0, refused)
        try:
            verdicts = evaluate(text, ids, kwargs, prompt, loose=params.mode == "loose")
        except UnknownInstruction as exc:
            return Score.error(f"unknown instruction id {exc.args[0]!r} (neither IFEval's "
                               "nor IFBench's registry has it)")
        except MissingData as exc:
            return Score.error(f"an instruction needs NLTK data that is not installed "
                               f"(rewardkit never downloads it): {exc}")
        except (TypeError, ValueError) as exc:
            return Score.error(f"the row's kwargs do not fit its instructions: {exc}")
        done = sum(v.followed for v in verdicts)
        value = done / len(verdicts) if params.credit == "fraction" else float(
            done == len(verdicts))
        return Score.ok(value, followed=[[v.instruction_id, v.followed] for v in verdicts],
                        followed_count=done)


def _row_instructions(sample: Sample, params: InstructionParams
                      ) -> tuple[list[str], list[Mapping[str, Any] | None]] | Score:
    ids = _as_list(sample.metadata.get(params.instructions_column))
    if not ids or not all(isinstance(i, str) for i in ids):
        return Score.error(f"the sample has no instruction ids (a list of strings in the "
                           f"{params.instructions_column!r} column)")
    raw = sample.metadata.get(params.kwargs_column)
    kwargs = _as_list(raw) if raw is not None else [{} for _ in ids]
    if kwargs is None or len(kwargs) != len(ids) or not all(
            k is None or isinstance(k, Mapping) for k in kwargs):
        return Score.error(f"the {params.kwargs_column!r} column must be one mapping per "
                           f"instruction ({len(ids)} of them)")
    return ids, kwargs


def _as_list(value: Any) -> list[Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return None


def _off_task(text: str, prompt: str, ids: Sequence[str],
              kwargs: Sequence[Mapping[str, Any] | None], min_words: int,
              refuse_echo: bool) -> str:
    """Why the answer is refused before any check ('' when it is not). Words are compared
    as word sequences of the folded texts (:func:`rewardkit.text.visible.folded`: case
    folded, format characters and combining marks dropped, Cyrillic and Greek
    lookalikes read as the Latin letters they look like), so an echo with its spacing,
    case or markup changed, invisible characters put between or inside its words, or
    one letter swapped for its lookalike, is still an echo."""
    if not (_ASCII_VISIBLE.search(text) or visible_length(text)):
        return "no visible text"
    if not refuse_echo and min_words == 0:
        return ""
    words = " ".join(_WORD.findall(folded(text)))
    echo = " ".join(_WORD.findall(folded(prompt)))
    rest = words.replace(echo, " ") if echo else words
    if (refuse_echo and rest != words and len(echo.split()) >= ECHO_MIN_WORDS
            and not any(i in REPEAT_TYPES for i in ids)):
        return "the prompt copied into the answer, and no instruction asks to repeat it"
    if min_words == 0:
        return ""
    count = len(rest.split())
    needed = min(min_words, _shortest_allowed(ids, kwargs))
    if count < needed:
        if rest != words:
            return "the prompt echoed, with too little besides"
        return f"{count} words: fewer than {needed}"
    return ""


def _shortest_allowed(ids: Sequence[str], kwargs: Sequence[Mapping[str, Any] | None]) -> int:
    """The fewest words an honest answer to these instructions may have, as far as the
    instructions say: 1 for a short-answer type, under a word cap ("less than 8 words")
    one fewer than the cap, within a word range its lower end; else unbounded."""
    shortest = 10**9
    for iid, kw in zip(ids, kwargs, strict=True):
        kw = kw or {}
        if iid in SHORT_ANSWER_TYPES:
            shortest = 1
        elif iid == "length_constraints:number_words" and kw.get("relation") == "less than":
            shortest = min(shortest, max(1, _number(kw.get("num_words")) - 1))
        elif iid == "count:word_count_range":
            shortest = min(shortest, max(1, _number(kw.get("min_words"))))
    return shortest


def _number(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 1
