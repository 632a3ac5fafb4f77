"""How rewards are written: a decorator for plain functions, a base class for stateful ones.

A reward is a *class* (a ``Reward`` subclass) registered under a name; the config
instantiates it once per set of parameters. The decorator builds that class around a
function, so both styles reach the engine the same way.

>>> from rewardkit import reward, Params, Sample
>>> class LengthParams(Params):
...     limit: int = 100
>>> @reward(params=LengthParams)
... def short_answer(sample: Sample, params: LengthParams) -> float:
...     '''1.0 when the completion fits in ``limit`` characters.'''
...     return float(len(sample.text) <= params.limit)
>>> short_answer(LengthParams(limit=3)).score(Sample(completion="abc"))
1.0

The decorated name can be tried as written: called on a text or a :class:`Sample` (with
parameters as keywords), it scores it and returns a :class:`Score`, whatever the reward
returns (a float, a bool, a Score, None), as the engine would record it; the reward
still pickles by reference.

>>> short_answer("abc", limit=2).value
0.0
>>> short_answer(Sample(prompt="q", completion="abc"))
Score(value=1.0, status=<Status.OK: 'ok'>, reason='', details=None)
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar, overload

from pydantic import BaseModel, ConfigDict

from rewardkit.types import ExecutionMode, Sample, Score, coerce_value

RewardValue = float | bool | int | Score | None


def _snake_case(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _first_line(doc: str | None) -> str:
    if not doc:
        return ""
    return inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ").strip()


class Params(BaseModel):
    """Base class of reward parameters. Unknown keys are an error, so typos in a config
    fail when it loads, not at step 1; so are NaN and infinite numbers."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class NoParams(Params):
    """Parameters of a reward that takes none."""


ParamsModel = Params  # the base class, under a name the Reward.Params attribute can't shadow


#: the keywords of a reward tried on a text that go into its :class:`Sample` (unless the
#: reward has a parameter of that name): ``math_answer("<answer>5</answer>", reference="5")``
SAMPLE_KEYWORDS = ("prompt", "reference", "metadata")


class _RewardClass(type):
    """The type of reward classes: calling one on a text, a :class:`Sample` (or, for a
    group reward, a list of them) scores it instead of building an instance, so a reward
    can be tried in a REPL as written. ``prompt=``, ``reference=`` and ``metadata=`` go into
    the sample of a text; the other keywords are parameters. Any other call builds an
    instance as usual."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and _is_input(args[0]):
            params_model: type[BaseModel] = getattr(cls, "Params", NoParams)
            fields = set(params_model.model_fields) | {
                f.alias for f in params_model.model_fields.values() if f.alias}
            given = {k: kwargs.pop(k) for k in SAMPLE_KEYWORDS if k in kwargs and k not in fields}
            data = args[0]
            if given:
                if not isinstance(data, str):
                    raise TypeError(
                        f"{', '.join(given)}= go with a text; a Sample (or a list) carries "
                        "its own: Sample(prompt=..., completion=..., reference=...)")
                data = Sample(prompt=given.get("prompt", ""), completion=data,
                              reference=given.get("reference"),
                              metadata=dict(given.get("metadata") or {}))
            instance = super().__call__(kwargs or None)
            return instance.try_on(data)
        return super().__call__(*args, **kwargs)


def _is_input(value: Any) -> bool:
    if isinstance(value, Sample | str):
        return True
    return isinstance(value, list) and bool(value) and all(
        isinstance(item, Sample | str) for item in value)


def _as_sample(value: Sample | str) -> Sample:
    return value if isinstance(value, Sample) else Sample(prompt="", completion=value)


class Reward(metaclass=_RewardClass):
    """Base class of every reward.

    Subclass it for a reward that keeps state (a loaded model, a compiled pattern, a
    client): set ``name`` and ``Params``, do expensive set-up in :meth:`setup`, and
    implement :meth:`score` (one sample) or, with ``group = True``, :meth:`score_group`
    (all completions of one prompt). ``async def`` versions run on an event loop.

    Attributes set on the class:
        name: registry name; defaults to the class name in snake case.
        Params: the pydantic model of the parameters.
        mode: ``inline`` (cheap and pure), ``process`` (CPU-heavy or may hang; runs in
            a worker process with a hard timeout) or ``async`` (I/O).
        group: True when the reward scores a whole group at once.
        timeout: default hard timeout in seconds (process and async modes).
        sandboxed: True when the reward runs untrusted code in the sandbox.
    """

    name: ClassVar[str] = ""
    Params: ClassVar[type[Params]] = NoParams
    mode: ClassVar[ExecutionMode] = ExecutionMode.INLINE
    group: ClassVar[bool] = False
    timeout: ClassVar[float | None] = None
    #: runs untrusted code in the sandbox: scored on Ray actors when ``executor`` is ray
    sandboxed: ClassVar[bool] = False
    description: ClassVar[str] = ""
    #: set by the registry: the distribution that registered the reward
    plugin: ClassVar[str] = ""

    def __init__(self, params: ParamsModel | dict[str, Any] | None = None) -> None:
        if params is None:
            params = {}
        if isinstance(params, dict):
            params = self.Params.model_validate(params)
        self.params = params
        self.setup()

    def setup(self) -> None:
        """Called once per instance, in the process that scores (also in workers)."""

    def warm(self) -> None:
        """Called once in a process-mode worker right after it loads this reward, before
        its first item's clock starts (under the load allowance, not an item's timeout):
        import and prepare what scoring needs (modules, compiled patterns, tables) so
        that a fresh worker's first batch does not pay for it. Not called inline (the
        trainer's process pays on first use, as it would anyway). Nothing by default."""

    def score(self, sample: Sample) -> RewardValue | Awaitable[RewardValue]:
        raise NotImplementedError(f"{type(self).__name__} implements neither score nor score_group")

    def score_group(
        self, samples: Sequence[Sample]
    ) -> Sequence[RewardValue] | Awaitable[Sequence[RewardValue]]:
        raise NotImplementedError(f"{type(self).__name__} is not a group reward")

    def default_mode(self) -> ExecutionMode:
        """The mode this instance runs in when the config sets no ``mode``: the declared
        ``mode``. A reward whose cost depends on its parameters overrides it (a length
        reward graded by a cheap inline checker is cheap too, by a sympy checker not):
        process-mode workers cost inter-process traffic that a cheap reward never earns
        back (docs/performance.md, process_mode)."""
        return type(self).mode

    def quick_score(self, sample: Sample) -> Score | None:
        """A verdict reached in the trainer's process, before a ``process``-mode reward
        sends ``sample`` to a worker; None sends it on. For rewards whose common case is
        cheap and safe (a plain number) and whose rare case may hang (sympy): the cheap
        case then costs no inter-process round trip. It must do bounded work on any
        input and must not raise; ``score`` must give the same verdict."""
        return None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("name"):
            cls.name = _snake_case(cls.__name__)
        if not cls.__dict__.get("description"):
            cls.description = _first_line(cls.__doc__)
        cls.mode = ExecutionMode(cls.mode)
        is_async = inspect.iscoroutinefunction(cls.score) or inspect.iscoroutinefunction(
            cls.score_group
        )
        if is_async and "mode" not in cls.__dict__:
            cls.mode = ExecutionMode.ASYNC

    def __call__(self, sample: Sample) -> Any:
        return self.score(sample)

    def try_on(self, data: Sample | str | list[Sample | str]) -> Score | list[Score]:
        """Score a text or a :class:`Sample` (a group reward: a list of them) the way the
        engine would call :meth:`score` (:meth:`score_group`), async rewards run to
        completion. For trying a reward by hand.

        Returns a :class:`Score` (a group reward: one per sample) whatever the reward
        returns: ``1.0`` becomes ``Score(1.0)``, ``None`` a skipped Score, a NaN or a
        string an error Score, as the engine would record them. One return type for
        every reward, so ``get_reward(name)(text).value`` always works."""
        if self.group:
            items = data if isinstance(data, list) else [data]
            got: Any = self.score_group([_as_sample(item) for item in items])
        elif isinstance(data, list):
            raise TypeError(f"{self.name} scores one sample at a time; got a list")
        else:
            got = self.score(_as_sample(data))
        if inspect.isawaitable(got):
            got = asyncio.run(_awaited(got))
        if self.group:
            return [coerce_value(value) for value in got]
        return coerce_value(got)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled by reference to the class plus the parameters, so process workers can
        # rebuild it (and run ``setup`` there) without pickling live state.
        return (_rebuild_reward, (reward_class_ref(type(self)), self.params.model_dump()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.params!r})"


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _rebuild_reward(ref: tuple[str, str], params: dict[str, Any]) -> Reward:
    cls = resolve_reward_class(ref)
    return cls(params)


def reward_class_ref(cls: type[Reward]) -> tuple[str, str]:
    """Where a reward class can be found again: (module, attribute path)."""
    return (cls.__module__, getattr(cls, "_rk_attr", cls.__qualname__))


def resolve_reward_class(ref: tuple[str, str]) -> type[Reward]:
    module, attr = ref
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if isinstance(obj, type) and issubclass(obj, Reward):
        return obj
    raise TypeError(f"{module}.{attr} is not a reward")


class FunctionReward(Reward):
    """A reward built by :func:`reward` around a plain function."""

    fn: ClassVar[Callable[..., Any]]
    takes_params: ClassVar[bool] = True

    def score(self, sample: Sample) -> Any:
        if self.takes_params:
            return type(self).fn(sample, self.params)
        return type(self).fn(sample)

    def score_group(self, samples: Sequence[Sample]) -> Any:
        if self.takes_params:
            return type(self).fn(samples, self.params)
        return type(self).fn(samples)

    def bound(self) -> Callable[[Sample], Any]:
        """The per-sample callable with parameters bound, for the engine's fast loop."""
        fn = type(self).fn
        if self.takes_params:
            params = self.params
            return lambda sample: fn(sample, params)
        return fn


F = TypeVar("F", bound=Callable[..., Any])


@overload
def reward(fn: F, /) -> type[FunctionReward]: ...


@overload
def reward(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    params: type[Params] | None = None,
    mode: ExecutionMode | str | None = None,
    group: bool = False,
    timeout: float | None = None,
    description: str | None = None,
    setup: Callable[[Any], None] | None = None,
    quick: Callable[[Sample, Any], Score | None] | None = None,
) -> Callable[[F], type[FunctionReward]]: ...


def reward(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    params: type[Params] | None = None,
    mode: ExecutionMode | str | None = None,
    group: bool = False,
    timeout: float | None = None,
    description: str | None = None,
    setup: Callable[[Any], None] | None = None,
    quick: Callable[[Sample, Any], Score | None] | None = None,
) -> Any:
    """Turn a function into a registered-ready reward class.

    The function takes ``(sample, params)`` (or just ``sample`` when it has one
    parameter) and returns a float, a bool, a :class:`Score`, or ``None`` (does not
    apply). With ``group=True`` it takes the list of samples of one prompt and returns
    one value per sample. ``async def`` functions run in async mode.

    ``setup(params)``, when given, runs once per instance before scoring (in process mode:
    in the worker, before its clock starts), e.g. to import a heavy library.

    ``quick(sample, params)``, when given, is the reward's :meth:`Reward.quick_score`: a
    process-mode reward decides there, in the trainer's process, the samples it can
    decide cheaply (it returns a Score) and sends only the rest to a worker (None).

    The name under which the module exposes the function becomes the reward class, so it
    pickles by reference for process workers. Calling that name on a text or a
    :class:`Sample` (parameters as keywords) scores it, so the reward can be tried as
    written; calling it with parameters (or nothing) builds an instance, as the config does.
    """

    def wrap(func: Callable[..., Any]) -> type[FunctionReward]:
        n_args = len(
            [
                p
                for p in inspect.signature(func).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
        )
        chosen_mode = ExecutionMode(mode) if mode is not None else None
        if chosen_mode is None:
            is_async = inspect.iscoroutinefunction(func)
            chosen_mode = ExecutionMode.ASYNC if is_async else ExecutionMode.INLINE
        attrs: dict[str, Any] = {
            "name": name or func.__name__,
            "Params": params or NoParams,
            "mode": chosen_mode,
            "group": group,
            "timeout": timeout,
            "description": description or _first_line(func.__doc__),
            "fn": staticmethod(func),
            "takes_params": n_args >= 2,
            "__doc__": func.__doc__,
            "__module__": func.__module__,
            "__qualname__": func.__qualname__,
            "_rk_attr": func.__qualname__,
        }
        if setup is not None:
            attrs["setup"] = lambda self: setup(self.params)
        if quick is not None:
            attrs["quick_score"] = lambda self, sample: quick(sample, self.params)
        if chosen_mode is ExecutionMode.ASYNC:
            attrs["score"] = _async_score
            attrs["score_group"] = _async_score_group
        cls = type(func.__name__, (FunctionReward,), attrs)
        return cls

    if fn is not None:
        return wrap(fn)
    return wrap


async def _async_score(self: FunctionReward, sample: Sample) -> Any:
    fn = type(self).fn
    return await (fn(sample, self.params) if self.takes_params else fn(sample))


async def _async_score_group(self: FunctionReward, samples: Sequence[Sample]) -> Any:
    fn = type(self).fn
    return await (fn(samples, self.params) if self.takes_params else fn(samples))


def whole_group_needs(aggregate: str,
                      rewards: Mapping[str, type[Reward]]) -> list[tuple[str, str]]:
    """``(config key, why)`` for each setting under which a response cannot be scored
    without the other responses to its prompt (its group): ``aggregate:
    normalize_then_sum`` standardises each component within the group, and a group
    reward (``group = True``) scores the group at once. ``rewards`` maps component names
    to their reward classes. Empty: every response can be scored alone.

    The one definition: ``rewardkit score`` reads whole groups when it is not empty, and
    the trainer adapters refuse or gather by it.

    >>> @reward(group=True)
    ... def spread(samples):
    ...     return [0.0 for _ in samples]
    >>> whole_group_needs("weighted_sum", {"s": spread})
    [('rewards.s.reward', 'spread is a per-group reward')]
    >>> whole_group_needs("weighted_sum", {})
    []
    """
    needs = []
    if aggregate == "normalize_then_sum":
        needs.append(("aggregate", "normalize_then_sum standardises each component within "
                                   "a prompt's group"))
    needs += [(f"rewards.{name}.reward", f"{cls.name} is a per-group reward")
              for name, cls in rewards.items() if cls.group]
    return needs
