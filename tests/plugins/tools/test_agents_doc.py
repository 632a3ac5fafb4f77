"""docs/agents.md: its Python examples run as written, in page order, and its tables
state what the golden cases and the recorded benchmark hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

pytest.importorskip("rewardkit_tools")

from rewardkit import registry

ROOT = Path(__file__).resolve().parents[3]
PAGE = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")


def test_the_python_examples_run_in_page_order() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE, re.DOTALL)
    assert len(blocks) >= 2
    namespace: dict = {"__name__": "agents_doc"}
    try:
        for i, block in enumerate(blocks):
            exec(compile(block, f"docs/agents.md python block {i}", "exec"), namespace)
    finally:
        registry.unregister("used_a_tool")


def test_the_example_table_is_what_the_golden_cases_expect() -> None:
    cases = yaml.safe_load((ROOT / "tests/cases/tools/example_tool_use.cases.yaml")
                           .read_text(encoding="utf-8"))["cases"]
    for case in [c for c in cases if "component" not in c]:  # the totals
        label = case["name"].split(": ")[0] + ": " + case["name"].split(": ")[1]
        expect = case["expect"]
        value = expect["approx"] if isinstance(expect, dict) else expect
        assert f"| {label} | {value:.2f} |" in PAGE, label


def test_the_bfcl_table_is_the_recorded_run() -> None:
    record = (ROOT / "benchmarks/results/bench_bfcl.txt").read_text(encoding="utf-8")
    rows = {}
    for line in record.splitlines():
        parts = line.split()
        if len(parts) == 7 and parts[1] in ("correct", "broken"):
            rows[(parts[0], parts[1])] = parts[2:5] + parts[6:]  # the errors column: 0
            assert parts[5] == "0", line
    assert len(rows) == 12
    for category in ("simple", "multiple", "parallel", "parallel_multiple", "simple_java",
                     "simple_javascript"):
        cells = [f"{int(n):,}" if i < 3 else n
                 for kind in ("correct", "broken")
                 for i, n in enumerate(rows[(category, kind)])]
        assert f"| {category} | " + " | ".join(cells) + " |" in PAGE, category
