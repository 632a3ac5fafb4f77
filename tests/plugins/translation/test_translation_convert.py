"""Converting translation-judge SFT chat JSONL into GRPO problem/answer rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rewardkit_translation.convert import ConversionError, convert_file, convert_record, main

USER = "<src>Turn left after 200 m.</src><translation>200 米后左转。</translation>"
ASSISTANT = "<think>Units kept, no errors.</think>, my ratings is [5, 5, 5, 5, 5, 5, 5]"


def record(*messages: tuple[str, str]) -> dict[str, object]:
    return {"messages": [{"role": role, "content": content} for role, content in messages]}


GOOD = record(("system", "You judge translations."), ("user", USER), ("assistant", ASSISTANT))


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_record_becomes_problem_and_rating_list_answer() -> None:
    assert convert_record(GOOD) == {"problem": USER, "answer": "[5, 5, 5, 5, 5, 5, 5]"}


def test_keep_system_copies_the_system_prompt() -> None:
    assert convert_record(GOOD, keep_system=True)["system"] == "You judge translations."


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([1, 2], "expected a JSON object"),
        ({"conversations": []}, "no 'messages' list"),
        (record(("user", USER)), "no assistant message"),
        (record(("assistant", ASSISTANT)), "no user message"),
        (record(("user", "Translate this"), ("assistant", ASSISTANT)), "no <translation>"),
        (record(("user", USER), ("assistant", "<think>x</think> fine")), "ratings missing"),
        (record(("user", USER), ("assistant", "my ratings is [5, 7]")), "ratings malformed"),
        ({"messages": [{"role": "user", "content": None}]}, "message 0 is not"),
    ],
)
def test_bad_records_say_what_is_wrong(bad: object, message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        convert_record(bad)


def test_bad_lines_are_skipped_and_reported_with_their_line_number(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "sft.jsonl", [
        json.dumps(GOOD),
        "{not json",
        "",
        json.dumps(record(("user", USER))),
        json.dumps(GOOD, ensure_ascii=False),
    ])
    report = convert_file(src, tmp_path / "grpo.jsonl")
    assert report.rows == 2
    assert report.problems == [
        f"{src}:2: not valid JSON (Expecting property name enclosed in double quotes)",
        f"{src}:4: no assistant message",
    ]
    rows = [json.loads(line) for line in (tmp_path / "grpo.jsonl").read_text().splitlines()]
    assert rows == [{"problem": USER, "answer": "[5, 5, 5, 5, 5, 5, 5]"}] * 2


def test_strict_writes_nothing_when_a_line_is_bad(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "sft.jsonl", [json.dumps(GOOD), "[]"])
    report = convert_file(src, tmp_path / "grpo.jsonl", strict=True)
    assert not report.ok
    assert not (tmp_path / "grpo.jsonl").exists()


def test_command_line_reports_bad_lines_on_stderr_and_succeeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write_lines(tmp_path / "sft.jsonl", [json.dumps(GOOD), "oops"])
    assert main([str(src), str(tmp_path / "out.jsonl")]) == 0
    captured = capsys.readouterr()
    assert f"{src}:2: not valid JSON" in captured.err
    assert "wrote 1 rows" in captured.out and "skipped 1 bad line(s)" in captured.out


def test_command_line_strict_fails_on_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write_lines(tmp_path / "sft.jsonl", ["oops"])
    assert main([str(src), str(tmp_path / "out.jsonl"), "--strict"]) == 1
    assert "nothing written" in capsys.readouterr().err


def test_command_line_names_a_missing_input_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "absent.jsonl"), str(tmp_path / "out.jsonl")]) == 1
    assert "absent.jsonl" in capsys.readouterr().err
