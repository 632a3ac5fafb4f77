"""``python -m rewardkit.cli``: the ``rewardkit`` command (run from the package, so that
plugins importing :mod:`rewardkit.cli` share its state)."""

import sys

from rewardkit.cli import main

sys.exit(main())
