"""rewardkit-ifeval: the ``instruction_following`` reward (IFEval and IFBench checks)."""
