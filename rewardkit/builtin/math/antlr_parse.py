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

**Unclosed brackets turned away.** For each pair of bracket tokens (``{`` ``}``, ``\\{``
``\\}``, ``\\lfloor`` ``\\rfloor``, ...) the grammar's ATN is checked, rule by rule, to read
them nested: along every path from a rule's start to its end each state is at one depth
of open brackets, never below zero, and back at zero at the end (a rule called is taken
to nest them, which the same check shows for it: an induction over the parse). For each
pair proved so, a text whose tokens close one that is not open, or leave one open (the
``{2\\sqrt{7}`` that math-verify cuts from a longer box), is not a sentence and is turned
away too. On the issue-42 batch of ``bench_math_symbolic.py`` (seed 21), 10 more of the
231 texts that reach the parser are turned away (97 in all), and the parser's CPU on
them went from 3.20 to 3.01 s (medians of 5 fresh processes, taken in turn); on the
other golds' batch (seed 22), 12 more of 276, with no change beyond the noise (6.02 and
6.19 s). The outcomes are the same text by text on both.

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
from typing import Any, NamedTuple

#: the parser rule latex2sympy2_extended starts at (``parser.math()``)
START_RULE = "math"


class NotInGrammar(Exception):
    """A text whose tokens no sentence of the LaTeX grammar holds in this order."""


class Tables(NamedTuple):
    """What :func:`check` looks up for a grammar."""

    #: the tokens a sentence may start with, as a bit set (bit ``t + 1`` for token type
    #: ``t``, bit 0 for the end of input)
    start: int
    #: for each token (at ``t + 1``), the tokens that may follow it, as bit sets
    follow: list[int]
    #: the (opening, closing) token types every sentence holds nested
    nested: list[tuple[int, int]]


_TABLES: dict[type, Tables | None] = {}


def token_tables(parser_class: type) -> Tables | None:
    """For ``parser_class``'s grammar, the :class:`Tables`. None when the ATN is not the
    shape read here (another ANTLR runtime): then no text is turned away."""
    if parser_class not in _TABLES:
        try:
            _TABLES[parser_class] = _tables(parser_class)
        except (AttributeError, TypeError, ValueError, IndexError):
            _TABLES[parser_class] = None
    return _TABLES[parser_class]


def _tables(parser_class: Any) -> Tables:
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
    names = list(parser_class.symbolicNames)
    pairs = [(names.index(name), names.index("R_" + name[2:])) for name in names
             if name.startswith("L_") and "R_" + name[2:] in names]
    return Tables(first[atn.ruleToStartState[start].stateNumber], follow,
                  [pair for pair in pairs if _nests(atn, *pair)])


def _nests(atn: Any, opening: int, closing: int) -> bool:
    """Whether every rule of ``atn`` reads ``opening`` and ``closing`` nested: each state
    of the rule is at one depth (openings less closings read from the rule's start), never
    below zero, and the rule's end at zero, a rule called counting zero (the same check
    shows that rule nests them). Then so does every sentence. False where this cannot be
    shown (a transition that may read either, or a depth that differs by path)."""
    from antlr4.atn.ATNState import ATNState
    from antlr4.atn.Transition import RuleTransition, Transition

    for start, stop in zip(atn.ruleToStartState, atn.ruleToStopState, strict=True):
        depth = {start.stateNumber: 0}
        todo = [start]
        while todo:
            state = todo.pop()
            if state.stateType == ATNState.RULE_STOP:
                continue  # (its moves lead out of the rule, to where it was called)
            for transition in state.transitions:
                if isinstance(transition, RuleTransition):
                    target, change = transition.followState, 0
                elif transition.isEpsilon:
                    target, change = transition.target, 0
                elif transition.serializationType in (Transition.NOT_SET, Transition.WILDCARD):
                    return False
                else:
                    changes = {(token == opening) - (token == closing)
                               for interval in transition.label.intervals for token in interval}
                    if len(changes) != 1:
                        return False
                    target, change = transition.target, changes.pop()
                level = depth[state.stateNumber] + change
                if level < 0:
                    return False
                if target.stateNumber not in depth:
                    depth[target.stateNumber] = level
                    todo.append(target)
                elif depth[target.stateNumber] != level:
                    return False
        if depth.get(stop.stateNumber) != 0:
            return False
    return True


def check(parser: Any) -> None:
    """Lex all of ``parser``'s input now and raise :class:`NotInGrammar` when two of its
    tokens (or its first or last) cannot stand so in any sentence of the grammar. The
    parser then starts from the first token, as it would have."""
    tables = token_tables(type(parser))
    if tables is None:
        return
    start, follow, nested = tables
    stream = parser.getTokenStream()
    stream.fill()  # (a lexer error raises here)
    allowed = start
    brackets = {}  # token type: (its pair, +1 opening / -1 closing)
    for pair, (opening, closing) in enumerate(nested):
        brackets[opening], brackets[closing] = (pair, 1), (pair, -1)
    depths = [0] * len(nested)
    for token in stream.tokens:
        if token.channel:
            continue
        if not allowed >> (token.type + 1) & 1:
            raise NotInGrammar(f"no sentence of the grammar has {token.text!r} here")
        allowed = follow[token.type + 1]
        bracket = brackets.get(token.type)
        if bracket is not None:
            depths[bracket[0]] += bracket[1]
            if depths[bracket[0]] < 0:
                raise NotInGrammar(f"{token.text!r} closes nothing here")
    if any(depths):
        raise NotInGrammar("a bracket is left open")


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
