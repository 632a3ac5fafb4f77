"""How math_answer's calls run latex2sympy2_extended's ANTLR parser: texts its grammar
cannot hold are turned away before the parser runs, and the rest are parsed with SLL
prediction first.

math-verify hands latex2sympy2_extended every piece of an answer it takes for LaTeX,
prose included (``The sum of the series is 2.``), and the ANTLR parser in pure Python
reads such a text to its end before it gives up: tens of milliseconds for a sentence, the
ambiguous letter runs predicted with the full context at every step. On the batch of
real competition answers of ``bench_math_symbolic.py``, graded in one fresh process, 210
of the 312 texts that reached the parser failed there, and took 1.8 of its 4.4 s of CPU.

**Turned away.** Before the parser runs, the text is lexed (the lexer is the parser's own
and does not depend on it) and each pair of neighbouring tokens looked up: the grammar's
ATN gives, for every token, the tokens that can follow it in some sentence, computed
without the calling context (a rule's end leads to every place that calls it) and
without the grammar's predicates, so the sets hold every pair a real sentence can hold,
and more. A text with a pair outside them (or a first token no sentence starts with, or a
last token no sentence ends with) is not a sentence of the grammar, so the parser would
have raised on it; it raises :class:`NotInGrammar` here instead. math-verify treats every
exception of the parser alike (its answer is then the next candidate, or none), so its
result is the same. A lexer error raises here too, where the parser would have met it
later. On that batch, 135 of the 210 failing texts are turned away (1.4 s of the 1.8).

**SLL first.** ANTLR's SLL prediction ignores the calling context and so is much cheaper
than the full LL prediction the parser runs by default; for a grammar whose start rule
ends at the end of input, as this one's does, ANTLR documents that an SLL parse either
returns the very parse tree LL would or reports a syntax error. The parser therefore
runs SLL first, stopping at its first error, and only a text SLL cannot parse is parsed
again from the start with LL and the parser's own error handling, exactly as before.

Only math_answer's own calls use this (inside :func:`latex_reader.reading_fast` blocks);
math-verify called by anyone else parses as it always does.
tests/builtin/test_math_antlr_parse.py checks on real answers, rewardkit's cases and
edited formulas that every text turned away is one the parser raises on, and that SLL
first gives the same object as the parser's own way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: the parser rule latex2sympy2_extended starts at (``parser.math()``)
START_RULE = "math"


class NotInGrammar(Exception):
    """A text whose tokens no sentence of the LaTeX grammar holds in this order."""


_TABLES: dict[type, tuple[int, list[int]] | None] = {}


def token_tables(parser_class: type) -> tuple[int, list[int]] | None:
    """For ``parser_class``'s grammar: the tokens a sentence may start with, and for each
    token the tokens that may follow it, as bit sets (bit ``t + 1`` for token type ``t``,
    bit 0 for the end of input). None when the ATN is not the shape read here (another
    ANTLR runtime): then no text is turned away."""
    if parser_class not in _TABLES:
        try:
            _TABLES[parser_class] = _tables(parser_class)
        except (AttributeError, TypeError, ValueError, IndexError):
            _TABLES[parser_class] = None
    return _TABLES[parser_class]


def _tables(parser_class: Any) -> tuple[int, list[int]]:
    from antlr4.atn.ATNState import ATNState
    from antlr4.atn.Transition import RuleTransition, Transition

    atn = parser_class.atn
    states = atn.states
    every = (1 << (atn.maxTokenType + 2)) - 1

    def label(transition: Any) -> int:
        if transition.serializationType in (Transition.NOT_SET, Transition.WILDCARD):
            return every
        bits = 0
        for interval in transition.label.intervals:
            for token in interval:
                bits |= 1 << (token + 1)
        return bits

    callers: dict[int, list[int]] = {}
    for state in states:
        for transition in state.transitions:
            if isinstance(transition, RuleTransition):
                callers.setdefault(transition.target.ruleIndex, []).append(
                    transition.followState.stateNumber)
    # the states reached without reading a token, and the tokens read from each state
    empty_moves: list[list[int]] = [[] for _ in states]
    reads = [0] * len(states)
    steps: list[tuple[int, int]] = []  # (the tokens read, the state after) of each reading move
    for state in states:
        moves = empty_moves[state.stateNumber]
        if state.stateType == ATNState.RULE_STOP:
            moves.extend(callers.get(state.ruleIndex, ()))
        for transition in state.transitions:
            if transition.isEpsilon:  # rule calls, predicates and actions included
                moves.append(transition.target.stateNumber)
            else:
                steps.append((label(transition), transition.target.stateNumber))
                reads[state.stateNumber] |= steps[-1][0]
    first = reads[:]
    changed = True
    while changed:
        changed = False
        for number, moves in enumerate(empty_moves):
            bits = first[number]
            for target in moves:
                bits |= first[target]
            if bits != first[number]:
                first[number] = bits
                changed = True
    follow = [0] * (atn.maxTokenType + 2)
    for tokens, target in steps:
        after = first[target]
        while tokens:
            lowest = tokens & -tokens
            follow[lowest.bit_length() - 1] |= after
            tokens ^= lowest
    start = parser_class.ruleNames.index(START_RULE)
    return first[atn.ruleToStartState[start].stateNumber], follow


def check(parser: Any) -> None:
    """Lex all of ``parser``'s input now and raise :class:`NotInGrammar` when two of its
    tokens (or its first or last) cannot stand so in any sentence of the grammar. The
    parser then starts from the first token, as it would have."""
    tables = token_tables(type(parser))
    if tables is None:
        return
    start, follow = tables
    stream = parser.getTokenStream()
    stream.fill()  # (a lexer error raises here)
    allowed = start
    for token in stream.tokens:
        if token.channel:
            continue
        if not allowed >> (token.type + 1) & 1:
            raise NotInGrammar(f"no sentence of the grammar has {token.text!r} here")
        allowed = follow[token.type + 1]


def sll_first(parser: Any) -> None:
    """Make ``parser.math()`` parse with SLL prediction first, stopping at the first error,
    and only after such an error again from the start with the parser's own prediction
    mode (LL) and error handling."""
    from antlr4.atn.PredictionMode import PredictionMode
    from antlr4.error.ErrorStrategy import BailErrorStrategy

    whole = getattr(parser, START_RULE)
    interpreter = parser._interp
    mode, handler = interpreter.predictionMode, parser._errHandler

    def start() -> Any:
        interpreter.predictionMode = PredictionMode.SLL
        parser._errHandler = BailErrorStrategy()
        try:
            return whole()
        except Exception:  # (any error: the parser's own way decides)
            pass
        finally:
            interpreter.predictionMode, parser._errHandler = mode, handler
        parser.reset()
        return whole()

    setattr(parser, START_RULE, start)


def install(latex2sympy: Any, active: Callable[[], bool]) -> None:
    """While ``active()``, check every text latex2sympy2_extended (the module
    ``latex2sympy``) is about to parse and parse it SLL first; as before everywhere
    else."""
    converter = latex2sympy._Latex2Sympy
    original = converter.create_parser
    if getattr(original, "_rewardkit_filter", False):
        return

    def create_parser(self: Any, latex_str: str) -> Any:
        parser = original(self, latex_str)
        if active():
            check(parser)
            sll_first(parser)
        return parser

    create_parser._rewardkit_filter = True  # type: ignore[attr-defined]
    create_parser.__wrapped__ = original  # type: ignore[attr-defined]
    converter.create_parser = create_parser
