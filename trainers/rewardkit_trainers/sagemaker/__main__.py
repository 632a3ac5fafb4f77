"""``python -m rewardkit_trainers.sagemaker``: the container entrypoint."""

import sys

from rewardkit_trainers.sagemaker.entrypoint import main

sys.exit(main())
