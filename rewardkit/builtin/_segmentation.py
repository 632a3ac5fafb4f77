"""Word segmentation for Chinese text, which has no spaces between words.

jieba (``pip install 'rewardkit[cjk]'``) is imported on first use and keeps its
dictionary loaded for the life of the process; its start-up chatter is silenced. Only runs
of Han characters go through jieba (about 100k characters a second); other text is split
into words, single spaces and single symbols the way jieba splits it, in linear time.
Outputs with more than :data:`MAX_HAN_CHARS` Han characters are refused, not segmented.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

#: most Han characters one output may have for zh_words segmentation (about 2 s of jieba)
MAX_HAN_CHARS = 200_000

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_OTHER = re.compile(r"\w+|\s|[^\w\s]")


class SegmenterMissing(RuntimeError):
    """The word segmenter is not installed, or the text is too long to segment."""


_lock = threading.Lock()
_jieba: Any = None


def _segmenter() -> Any:
    global _jieba
    with _lock:
        if _jieba is None:
            try:
                import jieba
            except ImportError:
                raise SegmenterMissing("unit zh_words needs jieba: "
                                       "pip install 'rewardkit[cjk]'") from None
            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _jieba = jieba
        return _jieba


def chinese_words(text: str) -> list[str]:
    """The words of ``text`` as jieba segments them (punctuation and spaces included as
    their own segments, as open-r1 counts them).

    >>> chinese_words("这个这个")
    ['这个', '这个']
    """
    runs = list(_HAN.finditer(text))
    han = sum(m.end() - m.start() for m in runs)
    if han > MAX_HAN_CHARS:
        raise SegmenterMissing(f"{han} Han characters is more than zh_words segments "
                               f"({MAX_HAN_CHARS}); use unit chars or tokens for outputs "
                               "this long")
    jieba: Any = _segmenter() if runs else None
    words: list[str] = []
    pos = 0
    for run in runs:
        words += _OTHER.findall(text, pos, run.start())
        words += jieba.cut(run.group())
        pos = run.end()
    words += _OTHER.findall(text, pos)
    return words
