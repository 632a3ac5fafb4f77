"""Whether a backend trains exactly what a reward config says, checked before a run.

Some settings need more than one response at a time (per-group rewards,
``normalize_then_sum``, masking a failed grading with its group's mean), some need the
row's columns (``when:`` routing), and some need the training step (stages and weight
schedules). Each backend passes a different subset of these to a reward function:

================  =============  ===============  ===========  ========================
backend           whole groups   row columns      step         failed grading
================  =============  ===============  ===========  ========================
TRL >= 1.16       yes            yes              yes          None: row masked by TRL
ms-swift 4.x      yes (gathered  yes              yes          group mean: 0 advantage
                  across ranks)
EasyR1            yes (packed    yes (packed      no: one job  group mean: 0 advantage
                  prompt id)     in ``answer``)   per stage
verl 0.9          no: one        yes              no: one job  refused
                  response                        per stage
================  =============  ===============  ===========  ========================

:func:`check` raises :class:`rewardkit.ConfigError` for what a backend cannot train
faithfully, and returns warnings for what it approximates (a weight schedule evaluated
once per job where the backend pins the step).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewardkit import ConfigError, get_reward
from rewardkit.authoring import whole_group_needs
from rewardkit.config import Component, RewardConfig
from rewardkit.schedules import Weight, is_constant

from rewardkit_trainers.launch.segments import reward_boundaries

if TYPE_CHECKING:
    from rewardkit_trainers.launch.plan import RunPlan

#: the first TRL whose GRPOTrainer leaves a row whose rewards are all None out of the
#: group statistics (nanmean/nanstd), so that it gets no advantage
MASKING_TRL = (1, 16)

#: backends that pass no step to rewards (stages run as successive resumed jobs)
STEP_PINNED = frozenset({"easyr1", "verl"})


def group_needs(config: RewardConfig) -> list[tuple[str, str]]:
    """(config key, reason) for every setting that needs each response's whole group on a
    trainer: what scoring needs (:func:`rewardkit.authoring.whole_group_needs`), and
    ``on_error: null``, whose failed row the adapters give its group's mean."""
    needs = whole_group_needs(config.aggregate, {
        name: get_reward(comp.reward) for name, comp in config.rewards.items()})
    if config.on_error == "null":
        needs.insert(int(config.aggregate == "normalize_then_sum"), (
            "on_error", "null masks a failed grading, which needs the other responses of "
                        "its group"))
    return needs


def scheduled_components(config: RewardConfig) -> list[str]:
    """Components whose weight changes continuously with the step (a schedule that is not
    constant: :func:`rewardkit.schedules.is_constant`)."""
    def weights(comp: Component) -> list[Weight]:
        if not comp.stages:
            return [comp.weight]
        return [comp.weight if st.weight is None else st.weight for st in comp.stages]

    return [name for name, comp in config.rewards.items()
            if not all(is_constant(w) for w in weights(comp))]


def check(config: RewardConfig, backend: str, source: str = "<config>") -> list[str]:
    """Refuse (:class:`ConfigError`) what ``backend`` cannot train as the config says;
    return warnings for what it approximates."""
    backend = backend.lower()
    if backend == "verl":
        needs = group_needs(config)
        if needs:
            raise ConfigError(source, [
                (key, f"{why}; verl's reward function scores one response at a time, so "
                      "it cannot (use backend trl, swift or easyr1, or change the setting)")
                for key, why in needs])
    if backend == "trl" and config.on_error == "null":
        found = installed_version("trl")
        if found is not None and found < MASKING_TRL:
            raise ConfigError(source, [(
                "on_error",
                f"null needs TRL >= {'.'.join(map(str, MASKING_TRL))} (installed: "
                f"{'.'.join(map(str, found))}): older GRPOTrainers turn a missing reward "
                "into 0 and train on it with a real advantage")])
    warnings = []
    if backend in STEP_PINNED:
        for name in scheduled_components(config):
            warnings.append(
                f"rewards.{name}.weight follows a schedule, but {backend} passes no step: "
                "each job evaluates it at its first step, so it moves as a staircase ("
                + ("add boundaries with train.stages for a finer one)" if _trains(config)
                   else "export one file per step range with --step for a finer one)"))
    return warnings


def _steps_named(spec: Any) -> list[int]:
    """Every integer in a weight spec (schedule steps, start steps, piecewise points,
    ``until_step``): past the largest of them, no weight changes any more."""
    if isinstance(spec, bool):
        return []
    if isinstance(spec, int):
        return [spec]
    if isinstance(spec, Mapping):
        return [n for v in spec.values() for n in _steps_named(v)]
    if isinstance(spec, list | tuple):
        return [n for v in spec for n in _steps_named(v)]
    return []


def switched_off(config: RewardConfig, start: int) -> list[tuple[str, int]]:
    """(component, first step its weight is not 0) for each component whose weight is 0
    at ``start`` but not at some later step: a job pinned to ``start`` trains without it."""
    from rewardkit import RewardSet

    off = []
    for name, comp in RewardSet(config).components.items():
        if comp.weight_at(start) != 0:
            continue
        horizon = max([start, *_steps_named(comp.weight_spec())]) + 1
        first = next((s for s in range(start + 1, horizon + 1) if comp.weight_at(s) != 0),
                     None)
        if first is not None:
            off.append((name, first))
    return off


def off_warnings(config: RewardConfig, backend: str, start: int, end: int | None,
                 where: str) -> list[str]:
    """Warnings naming the components a job pinned to ``start`` trains without, and for
    how many steps; ``where`` says which job or file."""
    if backend.lower() not in STEP_PINNED:
        return []
    span = f"steps {start}..{end - 1} ({end - start} steps)" if end is not None \
        else "every step of the job"
    return [f"{where} is pinned to step {start}, where rewards.{name}.weight is 0: "
            f"{name} is off for {span}, though its weight turns non-zero at step {first} "
            f"({backend} passes no step). " + (
                f"Run `rewardkit train` with train.stages (one job per stage, each pinned "
                f"to its first step), e.g. `train.stages: [{first}]`, so a job starts "
                "where it is on" if _trains(config) else
                f"Export one file per stage (--step {first} for the one where it is on) "
                "and run them in turn")
            for name, first in switched_off(config, start)]


def _trains(config: RewardConfig) -> bool:
    """The config has a ``train:`` section (``rewardkit train`` can run its stages)."""
    return config.section("train") is not None


def job_warnings(plan: RunPlan) -> list[str]:
    """:func:`off_warnings` for each job ``rewardkit train`` runs on a backend that pins
    the step (one job per stage); none where the ranges cannot be cut yet (that error
    comes when the jobs are built)."""
    backend = plan.train.backend
    if backend.lower() not in STEP_PINNED:
        return []
    try:
        ranges = plan.segment_ranges(backend)
    except ConfigError:
        return []
    return [w for k, (start, end) in enumerate(ranges)
            for w in off_warnings(plan.reward_config, backend, start, end, f"job {k}")]


def installed_version(dist: str) -> tuple[int, int] | None:
    """(major, minor) of an installed distribution; None when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        parts = version(dist).split(".")
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (PackageNotFoundError, ValueError, IndexError):
        return None


def pinned_file_warnings(config: RewardConfig, backend: str, step: int) -> list[str]:
    """Warnings for one reward file (or override set) pinned to ``step``: the components
    whose weight is 0 there (off for the whole job), and the stages it never reaches,
    where the backend passes no step."""
    if backend.lower() not in STEP_PINNED:
        return []
    off = off_warnings(config, backend, step, None, "this file")
    later = [b for b in reward_boundaries(config) if b > step]
    if not later:
        return off
    return [*off, f"pinned to step {step}: the stages that start at step(s) "
            f"{', '.join(map(str, later))} never apply in a job that uses it ({backend} "
            "passes no step). " + (
                "Run `rewardkit train` (one job per stage, each resuming the last), or "
                "export one file per stage with --step and run them in turn"
                if _trains(config) else
                f"Export one file per stage (--step {', --step '.join(map(str, later))}) and "
                "run them in turn, each job resuming the last")]


def launch_warnings(config_path: Path, backend: str) -> list[str]:
    """Warnings for a SageMaker launch: a weight schedule on a backend that pins the
    step (the entrypoint runs reward stages as successive resumed jobs, but a schedule
    moves only at their boundaries)."""
    if backend.lower() not in STEP_PINNED:
        return []
    from rewardkit.config import load_config

    config = load_config(config_path)
    return [w for w in check(config, backend, str(config_path)) if "schedule" in w]
