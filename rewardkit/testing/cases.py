"""Golden cases: ``*.cases.yaml`` files of completions and the verdicts they must get.

One file tests one reward (``reward:`` + ``params:``) or one config (``config:``, a path
relative to the file). The pytest plugin collects each case as a test item and
``rewardkit test`` runs the same files. See docs/testing.md for the format.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rewardkit.config import ConfigError, load_config
from rewardkit.reward_set import RewardSet
from rewardkit.testing.hacks import EXPLOIT_NAMES, Check
from rewardkit.text.lengths import COMPLETION_IDS, COMPLETION_LENGTH
from rewardkit.types import Sample, Score, Status

CASES_SUFFIX = ".cases.yaml"


class Expect(BaseModel):
    """What a case must score. A bare number in the file means ``{value: N}``."""

    model_config = ConfigDict(extra="forbid")

    value: float | None = None
    approx: float | None = None
    tol: float = 1e-6
    range: tuple[float, float] | None = None
    status: Status | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_number(cls, data: Any) -> Any:
        if isinstance(data, int | float) and not isinstance(data, bool):
            return {"value": data}
        return data

    @model_validator(mode="after")
    def _something(self) -> Expect:
        if self.value is None and self.approx is None and self.range is None \
                and self.status is None:
            raise ValueError("expect needs one of value, approx, range, status")
        return self

    def check(self, score: Score) -> str:
        """An empty string when ``score`` meets the expectation, else what is wrong."""
        wanted_status = self.status or (Status.OK if self.status is None and (
            self.value is not None or self.approx is not None or self.range is not None)
            else None)
        if wanted_status is not None and score.status != wanted_status:
            return f"expected status {wanted_status}, got {score.status}" + (
                f" ({score.reason})" if score.reason else "")
        v = score.value
        if self.value is not None and (v is None or not math.isclose(v, self.value,
                                                                     abs_tol=1e-9)):
            return f"expected value {self.value}, got {v}"
        if self.approx is not None and (v is None or abs(v - self.approx) > self.tol):
            return f"expected {self.approx} ± {self.tol}, got {v}"
        if self.range is not None:
            lo, hi = self.range
            if v is None or not lo <= v <= hi:
                return f"expected a value in [{lo}, {hi}], got {v}"
        return ""


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    completion: Any
    prompt: Any = ""
    reference: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    step: int = 0
    component: str | None = None
    group: list[Any] = Field(
        default_factory=list,
        description="other completions of the same prompt, scored in one group with this "
        "one (for group rewards); the expectation is about this case's completion",
    )
    expect: Expect


class ExploitSettings(BaseModel):
    """The ``exploits:`` key of a cases file in its mapping form."""

    model_config = ConfigDict(extra="forbid")

    allow: dict[str, str] = Field(
        default_factory=dict,
        description="exploit name -> why this reward is right to pay it (shown in the table)")

    @model_validator(mode="after")
    def _known_and_reasoned(self) -> ExploitSettings:
        for name, why in self.allow.items():
            if name not in EXPLOIT_NAMES:
                close = difflib.get_close_matches(name, EXPLOIT_NAMES, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ValueError(f"no exploit {name!r}; {hint}(known: "
                                 f"{', '.join(EXPLOIT_NAMES)})")
            if not why.strip():
                raise ValueError(f"allowing {name!r} needs a reason")
        return self


class CaseFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reward: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    config: str | None = None
    probes: bool = False
    checks: list[Check] = Field(
        default_factory=list,
        description="what the reward verifies (answer, format, code, length, content): "
        "decides which "
        "exploits it must refuse; default answer")
    exploits: bool | ExploitSettings | None = Field(
        None, description="run the exploit probes (true, or a mapping with allow:); false "
        "keeps them off even under `rewardkit test --exploits`")
    probe_prompt: Any = None
    probe_reference: Any = None
    probe_metadata: dict[str, Any] = Field(default_factory=dict)
    probe_timeout: float = Field(10.0, gt=0, description="seconds each probe may take")
    cases: list[Case] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_target(self) -> CaseFile:
        if (self.reward is None) == (self.config is None):
            raise ValueError("a cases file names exactly one of `reward` or `config`")
        if self.config is not None and self.probes:
            raise ValueError("`probes` applies to a `reward`, not a `config`")
        return self

    def exploit_settings(self) -> ExploitSettings:
        return self.exploits if isinstance(self.exploits, ExploitSettings) \
            else ExploitSettings()

    @property
    def runs_exploits(self) -> bool:
        """The file asks for the exploit probes."""
        return self.exploits is not None and self.exploits is not False


class CaseFileError(Exception):
    pass


@dataclass
class LoadedCases:
    """A parsed cases file and the RewardSet its cases run against (built lazily)."""

    path: Path
    spec: CaseFile
    _reward_set: RewardSet | None = field(default=None, repr=False)

    @property
    def target(self) -> str:
        return self.spec.reward or f"config {self.spec.config}"

    def checked(self, i: int) -> str:
        """What case ``i`` checks: the file's reward, or a config's component (with its
        reward) or its total, e.g. ``config rewards.yaml, component accuracy
        (exact_answer)``."""
        component = self.spec.cases[i].component
        if self.spec.config is None:
            return self.target
        if component is None:
            return f"{self.target}, the total"
        try:
            got = self.reward_set().components.get(component)
        except CaseFileError:
            got = None
        reward = f" ({got.config.reward})" if got is not None else ""
        return f"{self.target}, component {component}{reward}"

    def reward_set(self) -> RewardSet:
        if self._reward_set is None:
            try:
                if self.spec.config is not None:
                    cfg_path = (self.path.parent / self.spec.config).resolve()
                    self._reward_set = RewardSet(load_config(cfg_path))
                else:
                    assert self.spec.reward is not None
                    self._reward_set = RewardSet.from_dict(
                        {"rewards": {self.spec.reward: {"reward": self.spec.reward,
                                                        "params": self.spec.params}},
                         "limits": {"max_completion_chars": 10_000_000}},
                        source=str(self.path),
                    )
            except ConfigError as exc:
                raise CaseFileError(exc.render()) from None
        return self._reward_set

    def case_name(self, i: int) -> str:
        case = self.spec.cases[i]
        return case.name or f"case {i}"

    def case_id(self, i: int) -> str:
        """The case's test id: its name with runs of other characters than letters,
        digits, ``-`` and ``:`` made ``_`` (so ``pytest FILE::ID`` pasted from a shell
        works unquoted); made unique within the file by its index."""
        ids = self._ids()
        return ids[i]

    def _ids(self) -> list[str]:
        seen: dict[str, int] = {}
        ids = []
        for i in range(len(self.spec.cases)):
            base = re.sub(r"[^\w:-]+", "_", self.case_name(i)).strip("_") or f"case_{i}"
            ids.append(base if base not in seen else f"{base}_{i}")
            seen[base] = i
        return ids

    def probe_inputs(self) -> tuple[Any, Any, dict[str, Any]]:
        """The prompt, reference and metadata given to every probe: the file's
        ``probe_*`` keys, else those of its first case."""
        spec = self.spec
        first = spec.cases[0] if spec.cases else None
        prompt = spec.probe_prompt
        if prompt is None and first is not None and first.prompt != "":
            prompt = first.prompt
        reference = spec.probe_reference
        if reference is None and first is not None:
            reference = first.reference
        metadata = spec.probe_metadata or (dict(first.metadata) if first is not None else {})
        return prompt, reference, metadata

    def failure_text(self, i: int, problem: str, score: Score) -> str:
        """What a failed case prints: the problem, then the case's inputs, what was
        expected and what the reward gave (value, status, reason)."""
        case = self.spec.cases[i]
        expected = case.expect.model_dump(mode="json", exclude_none=True,
                                          exclude_defaults=True)
        lines = [f"{self.checked(i)}: {problem}"]
        if case.prompt not in ("", None):
            lines.append(f"  prompt:     {_shown(case.prompt)}")
        lines += [f"  completion: {_shown(case.completion)}",
                  f"  reference:  {case.reference!r}"]
        if case.metadata:
            lines.append(f"  metadata:   {case.metadata!r}")
        if case.step:
            lines.append(f"  step:       {case.step}")
        lines += [f"  expected:   {expected}",
                  f"  got:        value {score.value!r}, status {score.status}",
                  f"  reason:     {score.reason or '(none given)'}"]
        return "\n".join(lines)

    def run_case(self, i: int) -> tuple[str, Score]:
        """Score case ``i``; returns (problem or "", the score checked)."""
        case = self.spec.cases[i]
        if self.spec.config is not None and case.component is not None:
            components = list(self.reward_set().components)
            if case.component not in components:
                return (f"no component {case.component!r} in the config "
                        f"(has {', '.join(components)})", Score.error("no such component"))
        [score] = self.score_completions(i, [case.completion])
        return case.expect.check(score), score

    def score_completions(self, i: int, completions: list[Any],
                          own_lengths: bool = True) -> list[Score]:
        """Score each of ``completions`` in the place of case ``i``'s completion (same
        prompt, reference, metadata, step and group siblings, each in a group of its own);
        the score is the one the case checks (the reward, the component or the total).
        ``own_lengths=False`` drops the metadata that describes the case's completion
        (its token ids and length): another completion does not have them."""
        case = self.spec.cases[i]
        rs = self.reward_set()
        metadata = dict(case.metadata)
        if not own_lengths:
            metadata.pop(COMPLETION_IDS, None)
            metadata.pop(COMPLETION_LENGTH, None)
        samples: list[Sample] = []
        firsts: list[int] = []
        for k, completion in enumerate(completions):
            firsts.append(len(samples))
            for j, member in enumerate([completion, *case.group]):
                sample = Sample(prompt=case.prompt, completion=member,
                                reference=case.reference,
                                metadata=dict(metadata if j == 0 else case.metadata))
                sample.group = k
                samples.append(sample)
        result = rs.score(samples, step=case.step)
        scores = []
        for row in firsts:
            if self.spec.reward is not None:
                scores.append(result[row].scores[self.spec.reward])
            elif case.component is not None:
                scores.append(result[row].scores[case.component])
            else:
                total = result.totals[row]
                scores.append(Score(total) if total is not None
                              else Score.error("total is null"))
        return scores


def _shown(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_cases(path: str | Path) -> LoadedCases:
    """Parse a cases file; a CaseFileError names the file and what is wrong."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFileError(f"{path}: cannot read: {exc}") from None
    try:
        # libyaml's parser where PyYAML has it (the same documents, ~9x faster on the
        # repo's case files); a broken file is parsed again by the Python parser, whose
        # message shows the offending line
        data = yaml.load(text, Loader=_FAST_LOADER)
    except yaml.YAMLError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CaseFileError(f"{path}: YAML error: {exc}") from None
    try:
        spec = CaseFile.model_validate(data)
    except ValidationError as exc:
        lines = [f"{path}: invalid cases file"]
        for err in exc.errors(include_url=False):
            loc = ".".join(str(p) for p in err["loc"])
            lines.append(f"  {loc or '(top level)'}: {err['msg']}")
        raise CaseFileError("\n".join(lines)) from None
    return LoadedCases(path, spec)


def find_case_files(paths: list[str | Path]) -> list[Path]:
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(q for q in p.rglob(f"*{CASES_SUFFIX}")
                            if not any(part.startswith(".") for part in q.parts))
        elif p.name.endswith(CASES_SUFFIX):
            found.append(p)
    return found
