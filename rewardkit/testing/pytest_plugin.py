"""pytest plugin (entry point ``pytest11``): golden cases and scoring fixtures.

* every ``*.cases.yaml`` file is collected; each case is a test item, with
  ``probes: true`` each adversarial probe is one too, and with ``exploits:`` each exploit
  probe (its table is printed in the terminal summary);
* fixture ``rewardkit_score(config, samples, step=0)`` scores samples in a test;
* fixture ``rewardkit_probes(reward, params=None, reference=None)`` runs the probes and
  fails the test on any that crashes or hangs.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from rich.console import Console

from rewardkit.config import ConfigError, load_config
from rewardkit.registry import RegistryError, registry
from rewardkit.reward_set import RewardSet, ScoreResult
from rewardkit.testing.cases import CASES_SUFFIX, CaseFileError, LoadedCases, load_cases
from rewardkit.testing.exploits import ExploitReport, Outcome, run_exploits
from rewardkit.testing.hacks import EXPLOIT_NAMES
from rewardkit.testing.probes import PROBES, TOGETHER, ProbeResult, run_probes
from rewardkit.types import Sample


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if file_path.name.endswith(CASES_SUFFIX):
        return CasesFile.from_parent(parent, path=file_path)
    return None


class CaseFailure(Exception):
    pass


class CasesFile(pytest.File):
    loaded: LoadedCases

    def collect(self) -> Iterator[pytest.Item]:
        try:
            loaded = load_cases(self.path)
        except CaseFileError as exc:
            raise self.CollectError(str(exc)) from None
        self.loaded = loaded
        for i in range(len(loaded.spec.cases)):
            yield CaseItem.from_parent(self, name=loaded.case_id(i), index=i)
        if loaded.spec.probes:
            for name in [*PROBES, *([TOGETHER] if _is_group(loaded.spec.reward) else [])]:
                yield ProbeItem.from_parent(self, name=f"probe:{name}", probe=name)
        if loaded.spec.runs_exploits:
            for name in EXPLOIT_NAMES:
                yield ExploitItem.from_parent(self, name=f"exploit:{name}", exploit=name)

    def exploit_report(self) -> ExploitReport:
        """The file's exploit probes, run once for all its exploit items."""
        report: ExploitReport | None = getattr(self, "_exploit_report", None)
        if report is None:
            report = run_exploits(self.loaded)
            self._exploit_report = report
            self.config.stash.setdefault(_REPORTS, []).append((self.path, report))
        return report


def _is_group(reward: str | None) -> bool:
    try:
        return reward is not None and registry.get(reward).group
    except RegistryError:  # an unknown reward fails its items, with the config's message
        return False


class _CasesItem(pytest.Item):
    """An item of a cases file: failures print as the case's message, not a traceback."""

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        # the domain is the item name: pytest -v then prints the node id as it is
        return self.path, 0, self.name


class CaseItem(_CasesItem):
    def __init__(self, *, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index = index

    def runtest(self) -> None:
        loaded: LoadedCases = cast(CasesFile, self.parent).loaded
        try:
            problem, score = loaded.run_case(self.index)
        except CaseFileError as exc:
            raise CaseFailure(str(exc)) from None
        if problem:
            raise CaseFailure(loaded.failure_text(self.index, problem, score))


class ProbeItem(_CasesItem):
    def __init__(self, *, probe: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.probe = probe

    def runtest(self) -> None:
        loaded: LoadedCases = cast(CasesFile, self.parent).loaded
        spec = loaded.spec
        assert spec.reward is not None
        prompt, reference, metadata = loaded.probe_inputs()
        try:
            [result] = run_probes(spec.reward, spec.params, reference, metadata,
                                  names=[self.probe], prompt=prompt,
                                  timeout=spec.probe_timeout)
        except ConfigError as exc:
            raise CaseFailure(exc.render()) from None
        if not result.passed:
            raise CaseFailure(f"{spec.reward} failed probe {self.probe!r}: {result.problem}")


class ExploitItem(_CasesItem):
    def __init__(self, *, exploit: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.exploit = exploit

    def runtest(self) -> None:
        parent = cast(CasesFile, self.parent)
        try:
            report = parent.exploit_report()
        except (CaseFileError, ConfigError) as exc:
            raise CaseFailure(exc.render() if isinstance(exc, ConfigError)
                              else str(exc)) from None
        result = report.result(self.exploit)
        if result.outcome is Outcome.SKIPPED:
            pytest.skip(result.reason)
        if not result.passed:
            raise CaseFailure(report.failure_text(result))


_REPORTS = pytest.StashKey[list[tuple[Path, ExploitReport]]]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The exploit table of every cases file whose exploit probes ran."""
    reports = config.stash.get(_REPORTS, [])
    if not reports:
        return
    terminalreporter.section("rewardkit exploit probes")
    console = Console(file=io.StringIO(), width=160, highlight=False, color_system=None)
    for path, report in reports:
        console.print(report.table(str(path)))
    terminalreporter.write(cast(io.StringIO, console.file).getvalue())


ScoreFn = Callable[..., ScoreResult]


@pytest.fixture
def rewardkit_score() -> ScoreFn:
    """Score samples with a config (path, dict or RewardSet): ``rewardkit_score(cfg,
    [{"completion": ...}], step=0)``."""

    def score(config: str | Path | Mapping[str, Any] | RewardSet,
              samples: Sequence[Sample | Mapping[str, Any]], step: int = 0) -> ScoreResult:
        if isinstance(config, RewardSet):
            rs = config
        elif isinstance(config, str | Path):
            rs = RewardSet(load_config(config))
        else:
            rs = RewardSet.from_dict(config)
        return rs.score(samples, step=step)

    return score


@pytest.fixture
def rewardkit_probes() -> Callable[..., list[ProbeResult]]:
    """Run the adversarial probes against a registered reward; fails on any problem."""

    def probe(reward: str, params: Mapping[str, Any] | None = None, reference: Any = None,
              **kwargs: Any) -> list[ProbeResult]:
        results = run_probes(reward, params, reference, **kwargs)
        bad = [f"{r.name}: {r.problem}" for r in results if not r.passed]
        if bad:
            pytest.fail(f"{reward} failed probes:\n  " + "\n  ".join(bad), pytrace=False)
        return results

    return probe
