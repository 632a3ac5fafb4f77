import sys

from rewardkit_sandbox.doctor import main

sys.exit(main())
