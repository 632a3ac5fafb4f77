"""Trainer adapters for rewardkit.

One package, several backends, each imported lazily so that installing
``rewardkit-trainers`` never pulls a trainer library in. Split by role:

* :mod:`rewardkit_trainers.rewards` -- what a trainer imports: TRL reward callables
  (:mod:`~rewardkit_trainers.rewards.trl`), ms-swift ORMs
  (:mod:`~rewardkit_trainers.rewards.swift`), EasyR1's batch ``compute_score``
  (:mod:`~rewardkit_trainers.rewards.easyr1`), verl's ``compute_score`` and reward
  manager (:mod:`~rewardkit_trainers.rewards.verl`,
  :mod:`~rewardkit_trainers.rewards.verl_manager`), and the scorer they share
  (:mod:`~rewardkit_trainers.rewards.scoring`).
* :mod:`rewardkit_trainers.launch` -- what plans and launches runs (``rewardkit train``):
  the plan (:mod:`~rewardkit_trainers.launch.plan`), the backend table
  (:mod:`~rewardkit_trainers.launch.backends`), each backend's planner, the runner.
* :mod:`rewardkit_trainers.fidelity` -- what each backend can train as a config says.
* :mod:`rewardkit_trainers.evaluate` -- ``rewardkit eval``: base vs trained, per component.
* :mod:`rewardkit_trainers.config` -- the ``train:`` / ``eval:`` sections (pydantic).
* :mod:`rewardkit_trainers.quickstart` -- generated data and a tiny model for the demo.
* :mod:`rewardkit_trainers.cli` -- ``rewardkit train|export|eval|launch|jobs``.
* :mod:`rewardkit_trainers.sagemaker` -- SageMaker launch.

The paths users type stay valid: ``rewardkit_trainers.trl``, ``rewardkit_trainers.swift``,
``rewardkit_trainers.easyr1``, ``pkg://rewardkit_trainers.verl`` (and ``.verl_manager``)
and ``-m rewardkit_trainers.trl_train`` re-export the modules above.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
