"""Per-sample rubric checklists for ``llm_judge`` (``checklist: COLUMN``).

Each row names its own criteria in a metadata column: a list whose items are a text
(weight 1) or ``{"criterion": TEXT, "weight": W}``; a negative weight is a pitfall
("states a wrong unit": weight -2) that costs when met. The judge answers one verdict
line per criterion, in order, at the end of its reply (``1: yes``, ``2: no``, ...), and
the value is the weight met over the positive weight there is::

    value = max(0, sum(weight of each criterion met)) / sum(positive weights)

so all positive criteria met and no pitfall is 1, and a pitfall takes away what its
weight says. An answer without a verdict line for every criterion, in order, at its end,
or that states two verdicts for one criterion, is no verdict (status error), never a
partial score.

>>> items = criteria_of({"checklist": ["names Paris", {"criterion": "hedges", "weight": -1}]},
...                     "checklist")
>>> read_verdicts("Paris is named.\\n1: yes\\n2: no", items)
[True, False]
>>> checklist_value(items, [True, True])
0.0
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


class ChecklistError(ValueError):
    """A row's criteria cannot be used, or the judge's answer holds no full verdict."""


@dataclass(frozen=True)
class Criterion:
    text: str
    weight: float


#: the most criteria one row may have (one verdict line each in the judge's answer)
MAX_CRITERIA = 64
#: a verdict line: "3: yes", "3. no", "Criterion 3 - yes", markdown emphasis around it
_VERDICT = re.compile(r"(?i)^(?:criterion\s*)?(\d+)\s*[:.)=-]?\s*(yes|no)$")
_DECORATION = " \t*_`#"


def criteria_of(metadata: Mapping[str, Any], column: str) -> list[Criterion]:
    """The criteria of a row's ``column``; :class:`ChecklistError` saying what is wrong."""
    raw = metadata.get(column)
    if raw is None:
        raise ChecklistError(f"the row has no {column!r} column (its checklist)")
    if not isinstance(raw, list) or not raw:
        raise ChecklistError(f"{column!r} must be a non-empty list of criteria, got "
                             f"{type(raw).__name__}")
    if len(raw) > MAX_CRITERIA:
        raise ChecklistError(f"{column!r} has {len(raw)} criteria; at most {MAX_CRITERIA}")
    found = []
    for i, item in enumerate(raw, 1):
        if isinstance(item, str):
            text, weight = item, 1.0
        elif isinstance(item, Mapping) and isinstance(item.get("criterion"), str):
            text, weight = item["criterion"], item.get("weight", 1.0)
            extra = set(item) - {"criterion", "weight"}
            if extra:
                raise ChecklistError(f"criterion {i} of {column!r}: unknown keys "
                                     f"{sorted(extra)} (criterion, weight)")
        else:
            raise ChecklistError(f"criterion {i} of {column!r} must be a text or "
                                 f"{{criterion: TEXT, weight: N}}, got {item!r:.80}")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or \
                not math.isfinite(weight):
            raise ChecklistError(f"criterion {i} of {column!r}: weight must be a finite "
                                 f"number, got {weight!r}")
        text = " ".join(text.split())
        if not text:
            raise ChecklistError(f"criterion {i} of {column!r} is empty")
        found.append(Criterion(text, float(weight)))
    if not any(c.weight > 0 for c in found):
        raise ChecklistError(f"{column!r} has no criterion of positive weight: nothing "
                             "to earn")
    return found


def render_criteria(criteria: Sequence[Criterion]) -> str:
    """The numbered list the judge sees; a pitfall (negative weight) is marked as one,
    so "met" keeps one meaning: the response does what the criterion says."""
    return "\n".join(f"{i}. {'(pitfall) ' if c.weight < 0 else ''}{c.text}"
                     for i, c in enumerate(criteria, 1))


def read_verdicts(answer: str, criteria: Sequence[Criterion]) -> list[bool]:
    """Whether each criterion is met, from the answer's last lines (``1: yes`` ...
    ``N: no``, in order); :class:`ChecklistError` when they are not all there or the
    answer gives a criterion two different verdicts."""
    n = len(criteria)
    lines = [line.strip(_DECORATION) for line in answer.splitlines() if line.strip()]
    tail = lines[-n:] if len(lines) >= n else []
    matches = [_VERDICT.fullmatch(line) for line in tail]
    if len(tail) < n or any(m is None or int(m.group(1)) != i
                            for i, m in enumerate(matches, 1)):
        raise ChecklistError(f"the judge's answer must end with one line per criterion, "
                             f"1 to {n} in order ('1: yes' or '1: no'): {answer[-200:]!r}")
    verdicts = [m.group(2).lower() == "yes" for m in matches if m is not None]
    for line in lines[:-n]:
        other = _VERDICT.fullmatch(line)
        if other is not None and 1 <= int(other.group(1)) <= n and \
                (other.group(2).lower() == "yes") != verdicts[int(other.group(1)) - 1]:
            raise ChecklistError(f"two verdicts for criterion {other.group(1)} in the "
                                 f"judge's answer: {answer[-200:]!r}")
    return verdicts


def checklist_value(criteria: Sequence[Criterion], met: Sequence[bool]) -> float:
    """The weight met over the positive weight there is, at least 0."""
    earned = math.fsum(c.weight for c, m in zip(criteria, met, strict=True) if m)
    return max(0.0, earned) / math.fsum(c.weight for c in criteria if c.weight > 0)
