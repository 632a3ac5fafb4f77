"""Measuring a reward against what it should say: the engines of ``rewardkit calibrate``
(labels: :mod:`~rewardkit.measure.calibrate`), ``rewardkit diff`` (two configs or two
scored files: :mod:`~rewardkit.measure.diff`) and pass@k / maj@k
(:mod:`~rewardkit.measure.passk`); the statistics they share (Wilson intervals, confusion
counts, ROC AUC) are in :mod:`~rewardkit.measure.stats`.
"""
