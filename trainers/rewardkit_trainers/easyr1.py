"""``rewardkit_trainers.easyr1``, the path EasyR1 users type: the batch reward and the
packed ``answer`` column live in :mod:`rewardkit_trainers.rewards.easyr1`, re-exported
here unchanged; ``python -m rewardkit_trainers.easyr1 pack FILE.parquet ...`` runs its
``pack`` command.
"""

from rewardkit_trainers.rewards.easyr1 import (
    IMPUTED_SHARE,
    PACKED,
    GroupsUnknown,
    export_reward_file,
    main,
    pack_answer,
    pack_parquet,
    score_batch,
    unpack_answer,
)

__all__ = ["IMPUTED_SHARE", "PACKED", "GroupsUnknown", "export_reward_file", "main",
           "pack_answer", "pack_parquet", "score_batch", "unpack_answer"]

if __name__ == "__main__":
    raise SystemExit(main())
