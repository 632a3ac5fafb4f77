"""What a trainer imports: the reward functions each backend calls.

* :mod:`.trl` -- one reward callable per component for ``trl.GRPOTrainer``;
* :mod:`.swift` -- ms-swift ORMs (``--external_plugins``) and their metrics callback;
* :mod:`.easyr1` -- EasyR1's batch ``compute_score`` and the packed ``answer`` column;
* :mod:`.verl` -- verl's ``compute_score``; :mod:`.verl_manager` its reward manager;
* :mod:`.scoring` -- :class:`~.scoring.SharedScorer`, one scoring pass per batch shared
  by a backend's per-component callables.

Nothing here plans or launches a run (:mod:`rewardkit_trainers.launch` does), and no
trainer library is imported at module import time (except by :mod:`.verl_manager`,
which only verl loads).
"""
