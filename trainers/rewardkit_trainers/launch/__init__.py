"""What plans and launches training runs (``rewardkit train``).

* :mod:`.plan` -- :class:`~.plan.RunPlan` (a validated run for a machine) and
  :class:`~.plan.Job` (one external command); imports no planner;
* :mod:`.backends` -- the backend table: name -> planner;
* planners: :mod:`.trl` (``accelerate launch``), :mod:`.swift` (``swift rlhf``; with
  :mod:`.swift_server`), :mod:`.easyr1`, :mod:`.verl`;
* :mod:`.runner` -- ``load_run``, ``dry_run``, ``execute``: makes the plan, asks the
  backend for its jobs and runs them; :mod:`.trl_train` trains TRL in this process;
* :mod:`.segments` -- a run cut into successive resumed jobs (segments) for backends that
  pass no step; :mod:`.data` -- datasets in each backend's format; :mod:`.hardware` --
  GPUs and vLLM of this machine.

The reward functions the trainers call are in :mod:`rewardkit_trainers.rewards`.
"""
