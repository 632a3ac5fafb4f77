"""Another distribution that installs the same files as rewardkit.

PyPI's ``harbor-rewardkit`` also installs a top-level ``rewardkit`` package and a
``rewardkit`` console script. pip checks no file ownership: installed into one environment,
the second install overwrites the first one's files, and uninstalling either deletes files
the other still needs. No metadata makes pip refuse the pair (Python packaging has no
"conflicts with" requirement; ``Obsoletes-Dist`` and ``Provides-Dist`` are ignored by pip),
so rewardkit looks for the clash itself: a warning at import, a line in ``rewardkit plugins``.

:func:`suspect` is the cheap test run at import (our RECORD's hashes of the two shared files,
a second ``rewardkit`` package on ``sys.path``, modules in our folder no RECORD of ours lists);
:func:`clashes` names the other distributions by reading the RECORD files of the
environment's distributions (a few hundred milliseconds), only when asked or suspected.
"""

from __future__ import annotations

import base64
import hashlib
import sys
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

#: the distribution these files belong to
OURS = "rewardkit"
PACKAGE_DIR = Path(__file__).resolve().parent


class InstallClashWarning(UserWarning):
    """Another installed distribution owns files of rewardkit's (its package or script)."""


@dataclass(frozen=True)
class Clash:
    """One other distribution and the shared files it claims."""

    distribution: str
    version: str
    files: tuple[str, ...]

    def advice(self) -> str:
        shown = sorted({"the rewardkit script" if not f.endswith("__init__.py") else
                        "the rewardkit package" for f in self.files}, reverse=True)
        return (f"{self.distribution} {self.version} also installs {' and '.join(shown)} "
                f"({', '.join(self.files)}): "
                f"the two overwrite each other's files, and uninstalling one deletes the "
                f"other's. Keep {self.distribution} in its own virtual environment: pip "
                f"uninstall -y {self.distribution} {OURS}, then reinstall rewardkit")


def _is_shared(path: str) -> bool:
    """``path`` (a RECORD entry) is the ``rewardkit`` package's ``__init__.py`` or the
    ``rewardkit`` console script."""
    parts = path.replace("\\", "/").split("/")
    if parts[-2:] == ["rewardkit", "__init__.py"] and ".." not in parts:
        return True
    return parts[-1] in ("rewardkit", "rewardkit.exe") and len(parts) >= 2 and parts[-2] in (
        "bin", "Scripts")


def clashes() -> list[Clash]:
    """The distributions other than rewardkit that claim its package's ``__init__.py`` or
    its ``rewardkit`` script, by their RECORD (what pip would delete on uninstall)."""
    found: dict[str, Clash] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"] or ""
        if name.lower().replace("_", "-") == OURS:
            continue
        record = dist.read_text("RECORD") or ""
        shared = tuple(sorted({line.split(",", 1)[0] for line in record.splitlines()
                               if _is_shared(line.split(",", 1)[0])}))
        if shared and name not in found:
            found[name] = Clash(name, dist.version, shared)
    return sorted(found.values(), key=lambda c: c.distribution.lower())


def _hash(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes()).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def suspect() -> bool:
    """A cheap sign that another distribution shares rewardkit's files: a file our RECORD
    lists with a hash the disk no longer has, a module in our package folder our RECORD
    does not list (a non-editable install), or a second ``rewardkit`` package on sys.path."""
    try:
        ours = metadata.distribution(OURS)
    except metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
        return False
    listed = set()
    for file in ours.files or ():
        if _is_shared(str(file)) and file.hash is not None:
            where = Path(str(file.locate()))
            try:
                if _hash(where) != f"{file.hash.mode}={file.hash.value}":
                    return True
            except OSError:
                return True
        listed.add(str(file).replace("\\", "/"))
    # installed from a wheel (a RECORD, not a source tree's egg-info): the folder holds ours only
    if "rewardkit/__init__.py" in listed and ours.read_text("RECORD"):
        extra = [p for p in PACKAGE_DIR.iterdir() if p.name != "__pycache__" and (
            p.suffix == ".py" or p.is_dir()) and not any(
            entry.startswith(f"rewardkit/{p.name}") for entry in listed)]
        if extra:
            return True
    for entry in sys.path:
        other = Path(entry or ".") / "rewardkit" / "__init__.py"
        try:
            if other.is_file() and other.resolve().parent != PACKAGE_DIR:
                return True
        except OSError:
            continue
    return False


def warn_at_import() -> None:
    """Warn (:class:`InstallClashWarning`) when another distribution shares our files."""
    try:
        if not suspect():
            return
        found = clashes()
    except Exception:  # a check must never break the import it guards
        return
    for clash in found:
        warnings.warn(clash.advice(), InstallClashWarning, stacklevel=3)
