"""rewardkit-translation: rewards for a translation-quality judge, and a converter of its
SFT chat data into GRPO rows.

Reward (registered through the ``rewardkit`` entry point): ``translation_verdict``.
Data: ``python -m rewardkit_translation.convert SFT.jsonl GRPO.jsonl``.
"""

from rewardkit_translation.convert import convert_file, convert_record
from rewardkit_translation.ratings import (
    RatingsResult,
    RatingsStatus,
    extract_ratings,
    needs_review,
    parse_rating_list,
)
from rewardkit_translation.rewards import translation_verdict

__all__ = [
    "RatingsResult",
    "RatingsStatus",
    "convert_file",
    "convert_record",
    "extract_ratings",
    "needs_review",
    "parse_rating_list",
    "translation_verdict",
]
