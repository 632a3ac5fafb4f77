"""The report page in a real browser: Debian's Chromium, headless, driven by Playwright.

The page must load without console errors and without asking the network for anything,
and its sample browser must filter and sort. Screenshots land in the test's folder; with
REWARDKIT_DOCS_SCREENSHOTS=1 they are written to docs/images/ (as committed there).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scored_run import write_scored_run

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"

sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
if not Path(CHROMIUM).exists():  # `make setup` installs it (apt-get install chromium)
    pytest.skip("no Chromium at /usr/bin/chromium", allow_module_level=True)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    config, scored = write_scored_run(folder)
    out = folder / "report.html"
    # run in the folder, with the names a user types (the page shows the input's path)
    subprocess.run([sys.executable, "-m", "rewardkit.cli", "report", scored.name, "-o",
                    out.name, "--config", config.name, "--steps", "100"], check=True,
                   capture_output=True, timeout=120, cwd=folder)
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as pw:
        launched = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--no-first-run"])
        yield launched
        launched.close()


class Loaded:
    """A page with the console errors and the requests it made."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error"
                     else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("#sample-table tbody tr")

    def rows(self) -> list[list[str]]:
        return self.page.eval_on_selector_all(
            "#sample-table tbody tr",
            "trs => trs.map(tr => Array.from(tr.cells).map(td => td.textContent))")

    def count_text(self) -> str:
        return str(self.page.text_content("#match-count"))


@pytest.fixture
def loaded(browser: Any, page_file: Path) -> Iterator[Loaded]:
    got = Loaded(browser, page_file)
    yield got
    got.page.close()


def _shot(loaded: Loaded, name: str, tmp_path: Path, selector: str | None = None) -> None:
    path = tmp_path / f"{name}.png"
    if selector:
        loaded.page.add_style_tag(content="nav { position: static; }")  # not over the shot
        loaded.page.locator(selector).screenshot(path=str(path))
    else:
        loaded.page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    if os.environ.get("REWARDKIT_DOCS_SCREENSHOTS") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS_IMAGES / f"{name}.png")


def test_page_loads_without_console_errors_or_network(loaded: Loaded, page_file: Path,
                                                      tmp_path: Path):
    assert loaded.errors == []
    assert loaded.requests == [page_file.as_uri()]
    assert loaded.count_text() == "38 of 38 samples match"
    assert loaded.page.locator("svg.chart").count() >= 8
    _shot(loaded, "report-overview", tmp_path)


def test_status_filter_shows_only_that_status(loaded: Loaded, tmp_path: Path):
    loaded.page.select_option("#f-component", "accuracy")
    loaded.page.select_option("#f-status", "error")
    rows = loaded.rows()
    assert loaded.count_text() == "2 of 38 samples match"
    accuracy_column = 3  # index, total, format, accuracy
    assert [r[accuracy_column] for r in rows] == ["error", "error"]
    assert loaded.errors == []


def test_value_filter_and_sort(loaded: Loaded):
    loaded.page.select_option("#f-component", "format")
    loaded.page.fill("#f-max", "0")
    rows = loaded.rows()
    assert rows and all(float(r[2]) <= 0 for r in rows)
    loaded.page.fill("#f-max", "")
    loaded.page.select_option("#f-component", "")
    loaded.page.select_option("#f-sort", "total-desc")
    totals = [float(r[1]) for r in loaded.rows() if r[1] != "-"]
    assert totals == sorted(totals, reverse=True) and len(totals) == 36


def test_sign_link_lists_the_suspected_samples_and_a_row_opens_in_full(loaded: Loaded,
                                                                      tmp_path: Path):
    loaded.page.click("a.flag-link[data-flag='format_paid_answer_wrong']")
    rows = loaded.rows()
    # 8 wrong numbers + 4 "x<a>" answers, all in well-formed blocks
    assert len(rows) == 12 and all("format paid, answer wrong" in r[-1] for r in rows)
    loaded.page.click("#sample-table tbody tr >> nth=0")
    detail = loaded.page.locator("#detail")
    assert detail.is_visible()
    assert "add 1 and 3" in detail.locator("pre.detail-prompt").text_content()
    assert "<answer>5</answer>" in detail.locator("pre.detail-completion").text_content()
    assert detail.locator("pre.detail-reference").text_content() == "4"
    assert "accuracy" in detail.text_content() and "ok" in detail.text_content()
    _shot(loaded, "report-samples", tmp_path, "#samples")
    assert loaded.errors == []


def test_text_search(loaded: Loaded):
    loaded.page.fill("#f-text", "add 9 and 3")
    assert loaded.count_text() == "2 of 38 samples match"


CLOSE_SWITCHES = """\
rewards:
  format: {reward: soft_format, weight: {schedule: linear, start: 0.2, end: 1.0, steps: 100}}
  accuracy:
    reward: exact_answer
    stages: [{until_step: 50, weight: 1.0}, {weight: 2.0}]
  number:
    reward: answer_is_number
    stages: [{until_step: 52, weight: 0.5}, {until_step: 97, weight: 0.2}, {weight: 0.0}]
"""


def _boxes(page: Any, selector: str) -> list[dict[str, float]]:
    return page.eval_on_selector_all(selector, "els => els.map(e => { const b = e.getBBox(); "
                                     "return {x: b.x, y: b.y, w: b.width, h: b.height, "
                                     "t: e.textContent}; })")


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
            and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])


def test_stage_switch_labels_overlap_neither_each_other_nor_the_legend(
        browser: Any, tmp_path: Path):
    """Switches at steps 50 and 52 (two components) and 97 (near the right edge, where a
    label starting at its line would run into the legend)."""
    from rewardkit import RewardSet
    from rewardkit.report import build_report

    config = tmp_path / "c.yaml"
    config.write_text(CLOSE_SWITCHES)
    rows = [{"prompt": "p", "completion": "c", "reward": 1.0, "step": s,
             "components": {"format": {"value": 1.0, "status": "ok"}}} for s in (0, 100)]
    path = tmp_path / "switches.html"
    path.write_text(build_report(rows, reward_set=RewardSet.from_file(config)))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(path.as_uri())
        chart = "svg.chart:has(title:text-is('weights over steps'))"
        labels = [b for b in _boxes(page, f"{chart} text") if "stage switch" in b["t"]]
        legend = _boxes(page, f"{chart} text.legend")
        assert len(labels) == 3 and len(legend) == 3
        for i, a in enumerate(labels):
            assert not any(_overlap(a, b) for b in labels[i + 1:]), labels
            assert not any(_overlap(a, b) for b in legend), (a, legend)
        width = page.eval_on_selector(chart, "e => e.viewBox.baseVal.width")
        assert all(b["x"] >= 0 and b["x"] + b["w"] <= width for b in labels)
    finally:
        page.close()


def test_hack_monitor_section_of_the_example_run(browser: Any, tmp_path: Path):
    """The report of examples/data/format-hack-run: one flag, its evidence and examples."""
    run = Path(__file__).resolve().parents[2] / "examples" / "data" / "format-hack-run"
    out = tmp_path / "format-hack.html"
    subprocess.run([sys.executable, "-m", "rewardkit.cli", "report", str(run), "-o", str(out)],
                   check=True, capture_output=True, timeout=120)
    got = Loaded(browser, out)
    try:
        assert got.errors == []
        flags = got.page.locator("#monitor-flags tr[data-kind]")
        assert flags.count() == 1
        row = flags.nth(0)
        assert "audit falls while a trained component rises" in row.text_content()
        # recent samples that show the split: format paid in full, the math audit at 0
        examples = row.locator("td.examples pre")
        assert examples.count() == 3
        assert all("I am not sure" in examples.nth(i).text_content() for i in range(3))
        _shot(got, "report-monitor", tmp_path, "#monitor")
    finally:
        got.page.close()
