"""``python -m rewardkit_trainers.trl_train``, the entry point a launched TRL process ran
before the move: the in-process trainer lives in
:mod:`rewardkit_trainers.launch.trl_train` (``-m rewardkit_trainers.launch.trl_train``).
"""

from rewardkit_trainers.launch.trl_train import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
