"""The synthetic TV-menu dataset: tasks, screenshots, parquet/JSONL files, determinism."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rewardkit_gui.actions import parse_actions, replay
from rewardkit_gui.menu import make_tasks, moves_between
from rewardkit_gui.rewards import gui_navigation

from rewardkit import Sample

Image = pytest.importorskip("PIL.Image", reason="the generator needs Pillow")
pq = pytest.importorskip("pyarrow.parquet", reason="the generator needs pyarrow")

from rewardkit_gui.generate import GeneratedDataset, generate_dataset, main  # noqa: E402


# -- tasks ----------------------------------------------------------------------------
def test_moves_go_rows_first_then_columns() -> None:
    assert moves_between((0, 3), (2, 1)) == ("DOWN", "DOWN", "LEFT", "LEFT")


def test_gold_actions_lead_from_focus_to_target() -> None:
    for task in make_tasks(200, seed=7):
        dx, dy = replay(task.actions)
        assert (task.focus[0] + dy, task.focus[1] + dx) == task.target


def test_every_task_needs_at_least_one_move() -> None:
    assert all(task.actions for task in make_tasks(200, seed=1))


def test_grid_labels_are_unique_and_the_instruction_names_the_target() -> None:
    for task in make_tasks(100, seed=3):
        labels = [label for row in task.grid for label in row]
        assert len(labels) == len(set(labels))
        assert f"'{task.target_label}'" in task.instruction


def test_grid_sizes_stay_within_the_requested_ranges() -> None:
    sizes = {(len(t.grid), len(t.grid[0])) for t in make_tasks(200, 0, rows=(2, 3), cols=(4, 4))}
    assert sizes == {(2, 4), (3, 4)}


def test_labels_are_replaced_only_when_asked() -> None:
    from rewardkit_gui.menu import LABELS

    def replaced(prob: float) -> int:
        tasks = make_tasks(50, seed=5, replace_prob=prob)
        return sum(label not in LABELS for t in tasks for row in t.grid for label in row)

    assert replaced(0.0) == 0
    assert replaced(0.5) > 0


def test_same_seed_same_tasks_other_seed_other_tasks() -> None:
    assert make_tasks(20, seed=11) == make_tasks(20, seed=11)
    assert make_tasks(20, seed=11) != make_tasks(20, seed=12)


def test_impossible_grid_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="at most"):
        make_tasks(1, 0, rows=(10, 10), cols=(10, 10))


# -- files ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> GeneratedDataset:
    return generate_dataset(tmp_path_factory.mktemp("gui") / "out", 6, seed=42)


def test_parquet_has_easyr1_columns_with_embedded_png_images(dataset: GeneratedDataset) -> None:
    table = pq.read_table(dataset.parquet)
    assert table.column_names == ["images", "problem", "answer"]
    row = table.slice(0, 1).to_pylist()[0]
    assert len(row["images"]) == 1
    image = Image.open(io.BytesIO(row["images"][0]["bytes"]))
    assert (image.format, image.size) == ("PNG", (640, 360))
    assert row["problem"].startswith("<image>")
    assert row["problem"].count("<image>") == len(row["images"])


def test_jsonl_image_paths_are_relative_to_the_output_folder(dataset: GeneratedDataset) -> None:
    out = dataset.jsonl.parent
    rows = [json.loads(line) for line in dataset.jsonl.read_text().splitlines()]
    assert len(rows) == 6
    for row in rows:
        assert set(row) == {"images", "problem", "answer"}
        assert (out / row["images"][0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_parquet_and_jsonl_hold_the_same_rows(dataset: GeneratedDataset) -> None:
    table = pq.read_table(dataset.parquet).to_pylist()
    rows = [json.loads(line) for line in dataset.jsonl.read_text().splitlines()]
    out = dataset.jsonl.parent
    for from_parquet, from_jsonl in zip(table, rows, strict=True):
        assert from_parquet["problem"] == from_jsonl["problem"]
        assert from_parquet["answer"] == from_jsonl["answer"]
        assert from_parquet["images"][0]["bytes"] == (out / from_jsonl["images"][0]).read_bytes()


def test_answers_are_references_gui_navigation_accepts(dataset: GeneratedDataset) -> None:
    strict = gui_navigation({"mode": "strict"})
    for row in pq.read_table(dataset.parquet).to_pylist():
        actions = parse_actions(row["answer"])
        assert actions
        completion = f"<think>go</think><answer>{list(actions)}</answer>"
        assert strict.score(Sample(completion=completion, reference=row["answer"])).value == 1.0


def test_the_focused_button_is_highlighted(dataset: GeneratedDataset) -> None:
    from rewardkit_gui.render import FOCUS_BORDER

    image = Image.open(dataset.images[0]).convert("RGB")
    assert FOCUS_BORDER in {colour for _, colour in image.getcolors(maxcolors=1 << 20)}


def test_same_seed_gives_byte_identical_files(tmp_path: Path) -> None:
    first = generate_dataset(tmp_path / "a", 3, seed=9)
    second = generate_dataset(tmp_path / "b", 3, seed=9)
    for a, b in [(first.parquet, second.parquet), (first.jsonl, second.jsonl),
                 *zip(first.images, second.images, strict=True)]:
        assert a.read_bytes() == b.read_bytes(), a.name


def test_another_seed_gives_other_data(tmp_path: Path) -> None:
    first = generate_dataset(tmp_path / "a", 3, seed=1)
    second = generate_dataset(tmp_path / "b", 3, seed=2)
    assert first.jsonl.read_bytes() != second.jsonl.read_bytes()


def test_split_names_the_files(tmp_path: Path) -> None:
    result = generate_dataset(tmp_path, 1, seed=0, split="val")
    assert (result.parquet.name, result.jsonl.name) == ("val.parquet", "val.jsonl")
    assert result.images[0].name == "val-00000.png"


def test_command_line_writes_the_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--out", str(tmp_path), "--samples", "2", "--seed", "3"]) == 0
    assert pq.read_table(tmp_path / "train.parquet").num_rows == 2
    assert "wrote 2 rows" in capsys.readouterr().out


def test_command_line_rejects_noise_out_of_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--out", str(tmp_path), "--samples", "1", "--noise", "2"]) == 1
    assert "noise must be within [0, 1]" in capsys.readouterr().err
