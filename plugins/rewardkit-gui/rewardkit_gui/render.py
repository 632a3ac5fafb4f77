"""Screenshots of a :class:`~rewardkit_gui.menu.MenuTask`, drawn with Pillow.

A dark TV-style screen with the button grid; the focused button is highlighted (bright
fill and a thick border). Noise varies the background, grid placement, gaps and adds
speckles, all drawn from the given random generator, so the same seed gives the same
pixels.
"""

from __future__ import annotations

import io
import random
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from rewardkit_gui.menu import MenuTask

FOCUS_FILL = (235, 235, 240)
FOCUS_TEXT = (20, 20, 30)
FOCUS_BORDER = (255, 196, 0)


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: bitmap font, fixed size
        return ImageFont.load_default()


def render_task(
    task: MenuTask,
    rng: random.Random,
    *,
    size: tuple[int, int] = (640, 360),
    noise: float = 0.3,
) -> Image.Image:
    """The screenshot of ``task`` as an RGB image of ``size`` (width, height).

    ``noise`` in [0, 1] scales the random variation (0 = always the same layout style).
    """
    width, height = size
    n_rows, n_cols = len(task.grid), len(task.grid[0])
    shade = int(rng.uniform(0, 40) * noise)
    background = (18 + shade, 22 + shade, 38 + shade)
    image = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(image)

    margin_x = int(width * (0.05 + rng.uniform(0, 0.05) * noise))
    margin_y = int(height * (0.12 + rng.uniform(0, 0.06) * noise))
    gap = max(2, int(min(width, height) * (0.02 + rng.uniform(0, 0.02) * noise)))
    cell_w = (width - 2 * margin_x - (n_cols - 1) * gap) // n_cols
    cell_h = min((height - margin_y - height // 20 - (n_rows - 1) * gap) // n_rows, cell_w)
    font_size = max(9, min(18, cell_h // 3))
    draw.text((margin_x, height * 0.04), "Settings", fill=(200, 200, 210), font=_font(14))

    base = 60 + int(rng.uniform(-15, 15) * noise)
    for r, row in enumerate(task.grid):
        for c, label in enumerate(row):
            x0 = margin_x + c * (cell_w + gap)
            y0 = margin_y + r * (cell_h + gap)
            box = (x0, y0, x0 + cell_w, y0 + cell_h)
            if (r, c) == task.focus:
                draw.rectangle(box, fill=FOCUS_FILL, outline=FOCUS_BORDER, width=4)
                colour = FOCUS_TEXT
            else:
                fill = (base, base + 5, base + 20)
                draw.rectangle(box, fill=fill, outline=(base + 30,) * 3, width=1)
                colour = (225, 225, 230)
            _centred_text(draw, box, label, font_size, colour)

    for _ in range(int(400 * noise)):
        x, y = rng.randrange(width), rng.randrange(height)
        level = rng.randrange(256)
        draw.point((x, y), fill=(level, level, level))
    return image


def png_bytes(image: Image.Image) -> bytes:
    """PNG encoding of ``image``; no timestamps or other varying metadata."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def _centred_text(
    draw: ImageDraw.ImageDraw,
    box: tuple[int, int, int, int],
    label: str,
    size: int,
    colour: tuple[int, int, int],
) -> None:
    """Draw ``label`` centred in ``box``: on one line, else on two, shrinking the font
    until it fits, so every label stays readable in full."""
    x0, y0, x1, y1 = box
    room_w, room_h = x1 - x0 - 6, y1 - y0 - 4
    words = label.split()
    layouts = [label] + [
        " ".join(words[:i]) + "\n" + " ".join(words[i:]) for i in range(1, len(words))
    ]
    for font_size in range(size, 7, -1):
        font = _font(font_size)
        for text in layouts:
            left, top, right, bottom = draw.multiline_textbbox(
                (0, 0), text, font=font, align="center", spacing=2
            )
            if right - left <= room_w and bottom - top <= room_h:
                break
        else:
            continue
        break
    tx = x0 + (x1 - x0 - (right - left)) // 2 - left
    ty = y0 + (y1 - y0 - (bottom - top)) // 2 - top
    draw.multiline_text((tx, ty), text, fill=colour, font=font, align="center", spacing=2)
