"""Trainer adapters for rewardkit.

One package, several backends, each imported lazily so that installing
``rewardkit-trainers`` never pulls a trainer library in:

* :mod:`rewardkit_trainers.trl` -- reward callables for TRL's ``GRPOTrainer`` and the
  in-process ``rewardkit train`` runner.
* :mod:`rewardkit_trainers.swift` -- ``rewardkit export swift``: an ms-swift
  ``--external_plugins`` file registering one ORM per component.
* :mod:`rewardkit_trainers.easyr1` -- ``rewardkit export easyr1``: an EasyR1 batch reward file.
* :mod:`rewardkit_trainers.verl` -- ``pkg://rewardkit_trainers.verl:compute_score``.
* :mod:`rewardkit_trainers.runner` -- ``rewardkit train``: in-process TRL
  (:mod:`~rewardkit_trainers.trl_train`), ``swift rlhf`` and staged EasyR1 commands.
* :mod:`rewardkit_trainers.evaluate` -- ``rewardkit eval``: base vs trained, per component.
* :mod:`rewardkit_trainers.config` -- the ``train:`` / ``eval:`` sections (pydantic).
* :mod:`rewardkit_trainers.quickstart` -- generated data and a tiny model for the demo.
* :mod:`rewardkit_trainers.cli` -- ``rewardkit train|export|eval|launch|jobs``.
* ``rewardkit_trainers.sagemaker`` -- SageMaker launch (separate owner).
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
