"""Turn SFT chat data of the translation judge into GRPO rows (``problem`` / ``answer``).

Each SFT line is ``{"messages": [system?, user, assistant]}``; the user turn holds
``<src>...</src><translation>...</translation>`` and the assistant turn ends with
``my ratings is [...]``. Each GRPO row keeps the user turn as ``problem`` and the
assistant's rating list as ``answer`` (JSON text, e.g. ``"[2, 5, 5, 5, 5, 5, 5]"``, the
reference ``translation_verdict`` reads).

Command line::

    python -m rewardkit_translation.convert sft.jsonl grpo.jsonl [--keep-system] [--strict]

Bad lines are reported as ``FILE:LINE: reason`` on stderr and skipped; ``--strict``
writes nothing and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardkit_translation.ratings import extract_ratings


class ConversionError(ValueError):
    """One SFT line that cannot become a GRPO row."""


@dataclass
class ConversionReport:
    """What :func:`convert_file` did: rows written, and each bad line with its reason."""

    rows: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def convert_record(record: Any, *, keep_system: bool = False) -> dict[str, Any]:
    """One GRPO row from one decoded SFT record, or :class:`ConversionError` saying why.

    >>> convert_record({"messages": [
    ...     {"role": "user", "content": "<src>Hi</src><translation>你好</translation>"},
    ...     {"role": "assistant", "content": "<think>fine</think>, my ratings is [5, 5]"}]})
    {'problem': '<src>Hi</src><translation>你好</translation>', 'answer': '[5, 5]'}
    """
    if not isinstance(record, dict):
        raise ConversionError(f"expected a JSON object, got {type(record).__name__}")
    messages = record.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ConversionError("no 'messages' list")
    by_role: dict[str, str] = {}
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise ConversionError(f"message {i} is not {{'role': ..., 'content': '<text>'}}")
        by_role[str(message.get("role"))] = message["content"]  # the last turn of a role wins
    if "user" not in by_role:
        raise ConversionError("no user message")
    if "assistant" not in by_role:
        raise ConversionError("no assistant message")
    problem = by_role["user"]
    if "<translation>" not in problem or "</translation>" not in problem:
        raise ConversionError("user message has no <translation>...</translation> block")
    ratings = extract_ratings(by_role["assistant"])
    if not ratings.ok or ratings.ratings is None:
        raise ConversionError(f"assistant ratings {ratings.status}: {ratings.detail}")
    row: dict[str, Any] = {"problem": problem, "answer": json.dumps(list(ratings.ratings))}
    if keep_system and "system" in by_role:
        row["system"] = by_role["system"]
    return row


def convert_lines(
    lines: Iterable[str], *, source: str = "<input>", keep_system: bool = False
) -> tuple[list[dict[str, Any]], ConversionReport]:
    """Convert JSONL text lines; blank lines are skipped, bad ones reported by number."""
    rows: list[dict[str, Any]] = []
    report = ConversionReport()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            report.problems.append(f"{source}:{number}: not valid JSON ({exc.msg})")
            continue
        try:
            rows.append(convert_record(record, keep_system=keep_system))
        except ConversionError as exc:
            report.problems.append(f"{source}:{number}: {exc}")
    report.rows = len(rows)
    return rows, report


def convert_file(
    src: str | Path, dst: str | Path, *, keep_system: bool = False, strict: bool = False
) -> ConversionReport:
    """Convert the SFT JSONL file ``src`` into the GRPO JSONL file ``dst``.

    Bad lines are skipped and listed in the report; with ``strict``, any bad line means
    ``dst`` is not written at all.
    """
    src = Path(src)
    with src.open(encoding="utf-8") as handle:
        rows, report = convert_lines(handle, source=str(src), keep_system=keep_system)
    if strict and not report.ok:
        report.rows = 0
        return report
    with Path(dst).open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: ``python -m rewardkit_translation.convert IN.jsonl OUT.jsonl``."""
    parser = argparse.ArgumentParser(
        prog="python -m rewardkit_translation.convert",
        description="Convert translation-judge SFT chat JSONL into GRPO problem/answer JSONL.",
    )
    parser.add_argument("input", help="SFT JSONL: one {'messages': [...]} per line")
    parser.add_argument("output", help="GRPO JSONL to write: {'problem', 'answer'} per line")
    parser.add_argument(
        "--keep-system", action="store_true", help="copy the system prompt to a 'system' column"
    )
    parser.add_argument(
        "--strict", action="store_true", help="write nothing and exit 1 if any line is bad"
    )
    args = parser.parse_args(argv)
    try:
        report = convert_file(
            args.input, args.output, keep_system=args.keep_system, strict=args.strict
        )
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for problem in report.problems:
        print(problem, file=sys.stderr)
    if args.strict and not report.ok:
        print(f"error: {len(report.problems)} bad line(s); nothing written", file=sys.stderr)
        return 1
    skipped = f", skipped {len(report.problems)} bad line(s)" if report.problems else ""
    print(f"wrote {report.rows} rows to {args.output}{skipped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
