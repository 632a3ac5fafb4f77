"""Testing rewards: golden cases, crash probes and exploit probes.

* :mod:`~rewardkit.testing.cases`: ``*.cases.yaml`` files of completions and the verdicts
  they must get (run by ``rewardkit test`` and the pytest plugin);
* :mod:`~rewardkit.testing.probes`: inputs any reward must survive without crashing or
  hanging;
* :mod:`~rewardkit.testing.exploits`: the generic reward hacks
  (:mod:`~rewardkit.testing.hacks`) tried against a reward's own golden cases;
* :mod:`~rewardkit.testing.pytest_plugin`: the pytest plugin (entry point ``pytest11``).
"""
