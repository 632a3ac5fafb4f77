"""What a reference-based metric cannot see, refused before it is computed.

An n-gram metric pays any text that shares n-grams with the reference: the source copied
(names, numbers and cognates are shared between languages), the prompt echoed (it holds
the source), and padding that buys BLEU's brevity penalty back. A guard pays such an
answer 0 with a reason; each can be turned off, and docs/plugins/textmetrics.md measures
what each costs honest translations.
"""

from __future__ import annotations

from pydantic import Field
from rapidfuzz import fuzz

from rewardkit import Params, Sample, prompt_text, visible_length
from rewardkit.text.visible import folded

#: the repetition guard looks at answers of this many words or more
REPEAT_MIN_WORDS = 6


class GuardParams(Params):
    """The guards every reference-based text reward takes."""

    source_column: str = Field(
        "source", description="metadata column holding the source text (the text being "
        "translated or summarised); the copy guard compares the answer with it")
    refuse_copy: bool = Field(
        True, description="pay 0 for an answer that resembles the source or the prompt "
        "(rapidfuzz ratio at least copy_similarity) more than any reference, or that "
        "contains the source or the prompt whole when no reference does")
    copy_similarity: float = Field(
        0.8, ge=0, le=1, description="similarity to the source or prompt (0-1) from which "
        "an answer is a copy")
    max_length_ratio: float | None = Field(
        2.0, gt=0, description="pay 0 for an answer more than this many times as long (in "
        "visible characters) as the longest reference: padding that buys BLEU's brevity "
        "penalty back; null turns it off")
    min_length_ratio: float | None = Field(
        0.5, ge=0, description="pay 0 for an answer shorter (in visible characters) than "
        "this share of the shortest reference: a fragment TER and ROUGE precision pay for; "
        "null turns it off")
    min_distinct_words: float | None = Field(
        0.5, ge=0, le=1, description="pay 0 for an answer of 6 words or more whose distinct "
        "words are fewer than this share of its words (the target language's frequent words "
        "repeated); null turns it off. Texts without spaces (Chinese, Japanese) are one word")
    max_chars: int = Field(20_000, ge=1, description="longer answers or references are "
                           "refused with status error, not scored")
    reference_column: str | None = Field(
        None, description="read the reference(s) from this metadata column (a dotted path "
        "into nested values: answer.text) instead of the row's reference; e.g. an OpenAI "
        "grader's {{item.reference_answer}} (docs/migrate-from-openai-graders.md)")


def _copied(answer: str, original: str, refs: list[str], similarity: float) -> bool:
    """``answer`` is a copy of ``original`` (folded texts): close to it as a whole, and
    closer than to any reference; or containing it whole when no reference contains it."""
    if len(original.split()) < 2:  # a one-word source may well be its own translation
        return False
    close = fuzz.ratio(answer, original) / 100
    best_ref = max(fuzz.ratio(answer, r) for r in refs) / 100
    if close >= similarity and close > best_ref:
        return True
    return original in answer and not any(original in r for r in refs)


def refused(text: str, refs: list[str], sample: Sample, params: GuardParams) -> str:
    """Why ``text`` is paid 0 before any metric ('' when it is not)."""
    if not visible_length(text):
        return "no visible text"
    answer = " ".join(folded(text).split())
    folded_refs = [" ".join(folded(r).split()) for r in refs]
    if params.refuse_copy:
        source = sample.metadata.get(params.source_column)
        prompt = prompt_text(sample.prompt, turns="last_user")
        for what, original in (("the source", source), ("the prompt", prompt)):
            if isinstance(original, str) and _copied(
                    answer, " ".join(folded(original).split()), folded_refs,
                    params.copy_similarity):
                return f"{what} copied into the answer"
    words = answer.split()
    if (params.min_distinct_words is not None and len(words) >= REPEAT_MIN_WORDS
            and len(set(words)) < params.min_distinct_words * len(words)):
        return f"{len(set(words))} distinct words of {len(words)} (repetition)"
    if params.min_length_ratio is not None:
        shortest = min(visible_length(r) for r in refs)
        if visible_length(text) < params.min_length_ratio * shortest:
            return (f"under {params.min_length_ratio:g} of the shortest reference's length "
                    "(a fragment)")
    if params.max_length_ratio is not None:
        longest = max(visible_length(r) for r in refs)
        if longest and visible_length(text) > params.max_length_ratio * longest:
            return (f"over {params.max_length_ratio:g} times as long as the longest "
                    "reference (padding)")
    return ""
