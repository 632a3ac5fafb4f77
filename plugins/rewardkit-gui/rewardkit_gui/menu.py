"""Synthetic TV-menu navigation tasks: a grid of labelled buttons, a focused one, a target.

The way the real data was made (buttons cut from one screenshot, shuffled into new
grids) gives every button a known (row, column), so the gold answer from the focused
button to the target is pure arithmetic: the row moves (UP/DOWN) first, then the
column moves (LEFT/RIGHT). Replaced labels add variety to what the model reads.

>>> task = make_tasks(1, seed=0)[0]
>>> task.actions == moves_between(task.focus, task.target)
True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

#: labels of a TV settings / home menu
LABELS: tuple[str, ...] = (
    "Sync Source", "Picture Mode", "Sound Output", "Network Settings", "Input Source",
    "Sleep Timer", "Parental Lock", "Channel List", "Screen Ratio", "Brightness",
    "Contrast", "Eco Mode", "Subtitles", "Audio Language", "Bluetooth", "Software Update",
    "Factory Reset", "HDMI-CEC", "Game Mode", "Motion Smoothing", "Color Temperature",
    "Backlight", "Auto Power Off", "Time Zone", "Voice Assistant", "Screen Mirroring",
    "Apps", "Accessibility", "Closed Captions", "Storage", "Wi-Fi", "Home Screen",
    "Energy Saving", "Device Info", "Remote Pairing", "Equalizer", "Dolby Audio",
    "HDR Mode", "Noise Reduction", "Sharpness", "Tint", "Aspect Ratio", "Recordings",
    "TV Guide", "Favourites", "Media Player", "USB Devices", "Language", "Date & Time",
    "Privacy", "Account", "Sound Mode", "Speaker Setup", "Power On Behaviour",
)

#: labels that replace a button's usual one, as when a menu is localised or updated
REPLACEMENT_LABELS: tuple[str, ...] = (
    "Source Sync", "Image Settings", "Audio Out", "Internet", "External Inputs",
    "Off Timer", "Child Lock", "Channels", "Zoom", "Luminance", "Energy Mode",
    "CC", "Update Now", "Reset All", "Low Latency", "Smoothing", "White Balance",
    "Auto Off", "Clock", "Mirror Screen", "My Apps", "Help", "Network Status",
    "Sound Presets", "Display", "System", "Support", "Store", "Live TV", "Photos",
)

INSTRUCTIONS: tuple[str, ...] = (
    "How to move to '{target}'?",
    "How to move to '{target}'",
    "How do I get to '{target}' from the highlighted button?",
    "Navigate to '{target}'.",
    "Which remote-control presses move the focus to '{target}'?",
)


@dataclass(frozen=True)
class MenuTask:
    """One navigation task: the grid (row-major labels), the focused and target cells
    as (row, column), the instruction and the gold action list."""

    grid: tuple[tuple[str, ...], ...]
    focus: tuple[int, int]
    target: tuple[int, int]
    instruction: str
    actions: tuple[str, ...]

    @property
    def target_label(self) -> str:
        row, col = self.target
        return self.grid[row][col]


def moves_between(start: tuple[int, int], end: tuple[int, int]) -> tuple[str, ...]:
    """Remote presses from cell ``start`` to cell ``end`` (row, column): rows first.

    >>> moves_between((2, 0), (0, 1))
    ('UP', 'UP', 'RIGHT')
    """
    drow, dcol = end[0] - start[0], end[1] - start[1]
    vertical = ("DOWN" if drow > 0 else "UP",) * abs(drow)
    horizontal = ("RIGHT" if dcol > 0 else "LEFT",) * abs(dcol)
    return vertical + horizontal


def make_tasks(
    count: int,
    seed: int,
    *,
    rows: tuple[int, int] = (2, 5),
    cols: tuple[int, int] = (2, 6),
    replace_prob: float = 0.15,
) -> list[MenuTask]:
    """``count`` tasks, the same for the same arguments.

    Each grid has a random size within ``rows`` x ``cols`` (inclusive ranges), labels
    drawn without repetition from :data:`LABELS`; each label is swapped for an unused
    one of :data:`REPLACEMENT_LABELS` with probability ``replace_prob``. Focus and
    target are two different cells, so every gold answer has at least one action.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if not (1 <= rows[0] <= rows[1] and 1 <= cols[0] <= cols[1]):
        raise ValueError(f"invalid grid size ranges rows={rows} cols={cols}")
    if rows[1] * cols[1] > len(LABELS):
        raise ValueError(f"at most {len(LABELS)} buttons per grid, got {rows[1]}x{cols[1]}")
    if rows[0] * cols[0] < 2:
        raise ValueError("a grid needs at least two buttons")
    rng = random.Random(seed)
    return [_make_task(rng, rows, cols, replace_prob) for _ in range(count)]


def _make_task(
    rng: random.Random, rows: tuple[int, int], cols: tuple[int, int], replace_prob: float
) -> MenuTask:
    n_rows = rng.randint(*rows)
    n_cols = rng.randint(*cols)
    while n_rows * n_cols < 2:
        n_rows, n_cols = rng.randint(*rows), rng.randint(*cols)
    labels = rng.sample(LABELS, n_rows * n_cols)
    spare = list(REPLACEMENT_LABELS)
    rng.shuffle(spare)
    for i in range(len(labels)):
        if spare and rng.random() < replace_prob:
            labels[i] = spare.pop()
    grid = tuple(tuple(labels[r * n_cols : (r + 1) * n_cols]) for r in range(n_rows))
    cells = [(r, c) for r in range(n_rows) for c in range(n_cols)]
    focus, target = rng.sample(cells, 2)
    instruction = rng.choice(INSTRUCTIONS).format(target=grid[target[0]][target[1]])
    return MenuTask(grid, focus, target, instruction, moves_between(focus, target))
