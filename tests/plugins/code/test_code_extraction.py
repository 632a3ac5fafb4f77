"""Finding the program in an answer: fenced blocks by language, the last block, the whole."""

from __future__ import annotations

import time

from rewardkit_code import code_blocks, extract_code

ANSWER = """Let me think.
```text
not code
```
First try:
```python
x = 1
```
Final:
```python
def f():
    return 2
```
"""


def test_fenced_takes_the_last_block_of_the_language() -> None:
    assert extract_code(ANSWER, "fenced") == "def f():\n    return 2\n"


def test_fenced_accepts_language_aliases() -> None:
    assert extract_code("```py\na = 1\n```", "fenced") == "a = 1\n"
    assert extract_code("```Python3\na = 1\n```", "fenced") == "a = 1\n"


def test_fenced_falls_back_to_an_untagged_block_but_not_another_language() -> None:
    assert extract_code("```\na = 1\n```", "fenced") == "a = 1\n"
    assert extract_code("```bash\nrm -rf /\n```", "fenced") is None


def test_fenced_prefers_a_tagged_block_over_a_later_untagged_one() -> None:
    text = "```python\na = 1\n```\n```\noutput\n```"
    assert extract_code(text, "fenced") == "a = 1\n"


def test_last_block_ignores_the_tag() -> None:
    assert extract_code(ANSWER + "```text\nlast\n```", "last_block") == "last\n"


def test_whole_is_the_whole_text() -> None:
    assert extract_code("print(1)\n", "whole") == "print(1)\n"


def test_no_block_or_a_blank_one_is_no_code() -> None:
    assert extract_code("The answer is 42.", "fenced") is None
    assert extract_code("```python\n   \n```", "fenced") is None
    assert extract_code("   ", "whole") is None


def test_an_unclosed_block_runs_to_the_end() -> None:
    assert extract_code("```python\nprint(1)\nprint(2)", "fenced") == "print(1)\nprint(2)"


def test_a_longer_fence_can_hold_a_shorter_one() -> None:
    text = "````python\ns = '''\n```\n'''\n````"
    assert extract_code(text, "fenced") == "s = '''\n```\n'''\n"


def test_tilde_fences_and_crlf_lines() -> None:
    assert extract_code("~~~python\r\na = 1\r\n~~~\r\n", "fenced") == "a = 1\r\n"


def test_inline_backticks_are_not_a_block() -> None:
    assert code_blocks("use ```python print(1)``` inline") == []


def test_a_megabyte_of_fences_is_read_in_linear_time() -> None:
    text = "```python\n" * 200_000
    started = time.process_time()  # CPU: the cost, whatever the machine's load
    code_blocks(text)
    assert time.process_time() - started < 2.0
