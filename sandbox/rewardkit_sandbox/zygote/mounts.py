"""The zygote's start-up, part 1: the namespaces and mounts it enters.

A child subreaper, a private network namespace with loopback only, a private mount
namespace with tmpfs scratch directories (/tmp, /dev/shm, /var/tmp and every other
world-writable folder, which the pool finds once with :func:`find_world_writable`), and
the hidden paths (home directories, the repository) covered, with the import paths
found under them shown again read-only.  Guarantees: each step that fails is reported
as an inactive layer with why (the zygote goes on without it), and the children's import
paths stay importable through every cover.  Standard library only (see
:mod:`rewardkit_sandbox.zygote.server`).
"""

from __future__ import annotations

import os
import stat

from rewardkit_sandbox import _confinement as confinement
from rewardkit_sandbox.zygote.probes import layer

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote (see :mod:`rewardkit_sandbox.zygote.server`)
    from typing import Any

SCRATCH_DIRS = ("/tmp", "/dev/shm", "/var/tmp")

#: tmpfs size of each other world-writable folder's private copy (a lock file, a socket)
_WORLD_WRITABLE_TMPFS_BYTES = 8 * 1024 * 1024


class NamespacesAndMounts:
    """Entering what the kernel allows; each step records its layer in ``layers``.

    ``child_path``: the task children's ``sys.path``, rewritten where an import path is
    shown again elsewhere.  After :meth:`enter_mount_namespace`: ``mountns`` (the
    private mounts are in place), ``mounted`` (the tmpfs mounts made) and
    ``scratch_dirs`` (the world-writable folders a task may leave files in).
    """

    def __init__(self, layers: dict[str, dict[str, Any]], child_path: list[str]) -> None:
        self.layers = layers
        self.child_path = child_path
        self.netns = False
        self.mountns = False
        self.mounted: list[str] = []
        #: world-writable folders the walk found and that were gone when they were to be
        #: covered (another process's folder, removed at that moment): no task reaches them
        self.vanished: list[str] = []
        self.scratch_dirs: tuple[str, ...] = SCRATCH_DIRS

    def enter_subreaper(self) -> None:
        try:
            confinement.prctl(confinement.PR_SET_CHILD_SUBREAPER, 1)
            self.layers["child_subreaper"] = layer(True, "orphans of a task are reaped here")
        except OSError as error:
            self.layers["child_subreaper"] = layer(False, f"prctl failed: {error}")

    def enter_network_namespace(self) -> None:
        try:
            confinement.unshare(confinement.CLONE_NEWNET)
            self.netns = True
            try:
                confinement.loopback_up()
                what = "own namespace, loopback only: the slot's own processes, one task at a time"
            except OSError as error:
                what = f"empty namespace, loopback down ({error})"
            self.layers["network_namespace"] = layer(True, what)
        except OSError as error:
            self.netns = False
            self.layers["network_namespace"] = layer(
                False, f"unshare(CLONE_NEWNET) failed: {error}; seccomp denies inet sockets"
            )

    def enter_mount_namespace(self, config: dict[str, Any]) -> None:
        """Private tmpfs over /tmp (``disk_bytes``), /dev/shm, /var/tmp and every other
        world-writable folder the pool found (``world_writable``: see
        :func:`find_world_writable`); the ``hidden_paths`` covered.  The scratch directories
        are those folders, mounted or not: without a mount namespace a task's leftovers are
        swept from the shared ones."""
        disk_bytes: int = config["disk_bytes"]
        hidden_paths: list[str] = config["hidden_paths"]
        world_writable: dict[str, Any] = config.get("world_writable") or {}
        self.mountns = False
        self.mounted = []
        self.vanished = []
        found = [str(path) for path in world_writable.get("paths") or []]
        others = tuple(path for path in found if path not in SCRATCH_DIRS)
        self.scratch_dirs = SCRATCH_DIRS + others
        try:
            confinement.unshare(confinement.CLONE_NEWNS)
            confinement.mount("none", "/", None, confinement.MS_REC | confinement.MS_PRIVATE, None)
            flags = confinement.MS_NOSUID | confinement.MS_NODEV
            # import paths inside a scratch directory (a venv in /tmp) vanish under the
            # private tmpfs: hold them by descriptor now, bind them back below
            in_scratch = _paths_inside(self.child_path, self.scratch_dirs)
            handles = {item: os.open(item, os.O_PATH | os.O_DIRECTORY) for item in in_scratch}
            try:
                confinement.mount("tmpfs", "/tmp", "tmpfs", flags,
                                  f"size={disk_bytes},mode=1777")
                self.mounted.append("/tmp")
                for path in SCRATCH_DIRS[1:]:
                    if os.path.isdir(path):
                        confinement.mount("tmpfs", path, "tmpfs", flags, "size=8m,mode=1777")
                        self.mounted.append(path)
                failed = self._cover_world_writable(others, flags)
                if handles:
                    self._reexpose(handles)
            finally:
                for handle in handles.values():
                    os.close(handle)
            hidden = [path for path in hidden_paths if self._hide(path)]
        except OSError as error:
            self.layers["mount_namespace"] = layer(
                False, f"{error}; work dirs in the shared /tmp, no disk quota, paths not hidden"
            )
            self.layers["private_world_writable"] = layer(
                False, f"no private mounts ({error}); shared with the host and every slot: "
                + " ".join(found)
            )
            return
        self._report_world_writable(found, failed, world_writable)
        self.mountns = True
        detail = f"private tmpfs /tmp ({disk_bytes // (1024 * 1024)} MiB)"
        if hidden:
            detail += ", hidden: " + " ".join(hidden)
        self.layers["mount_namespace"] = layer(True, detail)

    def _cover_world_writable(self, paths: tuple[str, ...], flags: int) -> dict[str, str]:
        """A private tmpfs, with the folder's mode and owner, over each of ``paths``;
        returns the ones that could not be covered, with why."""
        failed: dict[str, str] = {}
        for path in paths:
            try:
                info = os.lstat(path)
                if not stat.S_ISDIR(info.st_mode) or not info.st_mode & stat.S_IWOTH:
                    continue  # gone, replaced or no longer world-writable since the walk
                options = (f"size={_WORLD_WRITABLE_TMPFS_BYTES},mode={info.st_mode & 0o7777:o},"
                           f"uid={info.st_uid},gid={info.st_gid}")
                confinement.mount("tmpfs", path, "tmpfs", flags, options)
            except OSError as error:
                if not os.path.lexists(path):  # removed since the walk: nothing to cover
                    self.vanished.append(path)
                    continue
                failed[path] = str(error)
                continue
            self.mounted.append(path)
        return failed

    def _report_world_writable(
        self, found: list[str], failed: dict[str, str], world_writable: dict[str, Any]
    ) -> None:
        private = [path for path in found if path in self.mounted]
        detail = "private tmpfs over " + (" ".join(private) or "nothing")
        if self.vanished:
            detail += "; gone since the search: " + " ".join(sorted(self.vanished))
        if failed:
            detail += "; SHARED (mount failed): " + "; ".join(
                f"{path}: {why}" for path, why in sorted(failed.items()))
        if not world_writable.get("complete", False):
            detail += f"; search incomplete: {world_writable.get('note', 'not searched')}"
        active = not failed and bool(world_writable.get("complete", False))
        self.layers["private_world_writable"] = layer(active, detail)

    def _reexpose(self, handles: dict[str, int]) -> None:
        """Bind the import paths held by ``handles`` read-only under a read-only tmpfs on
        ``_REEXPOSE_ROOT`` (outside every scratch directory, so task clean-up never meets
        them) and point the children's ``sys.path`` there."""
        if not os.path.isdir(_REEXPOSE_ROOT):
            raise OSError(f"import paths {sorted(handles)} are inside a scratch directory "
                          f"and there is no {_REEXPOSE_ROOT} to show them again under")
        flags = confinement.MS_NOSUID | confinement.MS_NODEV
        confinement.mount("tmpfs", _REEXPOSE_ROOT, "tmpfs", flags, "size=1m,mode=755")
        moved: dict[str, str] = {}
        for index, (item, handle) in enumerate(sorted(handles.items())):
            target = os.path.join(_REEXPOSE_ROOT, f"import-{index}")
            os.mkdir(target, 0o755)
            _bind_read_only(handle, target, flags)
            moved[item] = target
        confinement.mount("tmpfs", _REEXPOSE_ROOT, "tmpfs",
                          confinement.MS_REMOUNT | confinement.MS_RDONLY | flags,
                          "size=1m,mode=755")
        self.child_path = [moved.get(os.path.realpath(p), p) for p in self.child_path]

    def _hide(self, path: str) -> bool:
        """Cover ``path`` with an empty read-only tmpfs, re-exposing the import paths in it.

        The interpreter's own library may live under a hidden path (``/root/.pyenv``):
        those directories are bind-mounted back, read-only, through an ``O_PATH``
        descriptor opened before the cover went on.
        """
        path = os.path.realpath(path)
        if not os.path.isdir(path) or path == "/":
            return False
        for scratch in self.scratch_dirs:
            if scratch == path or scratch.startswith(path + os.sep):
                return False
        visible = sorted(
            {
                os.path.realpath(item)
                for item in self.child_path
                if os.path.isdir(item) and os.path.realpath(item).startswith(path + os.sep)
            }
        )
        if any(os.path.realpath(item) == path for item in self.child_path):
            return False
        handles = {item: os.open(item, os.O_PATH | os.O_DIRECTORY) for item in visible}
        try:
            flags = confinement.MS_NOSUID | confinement.MS_NODEV
            confinement.mount("tmpfs", path, "tmpfs", flags, "size=1m,mode=755")
            for item, handle in handles.items():
                os.makedirs(item, mode=0o755, exist_ok=True)
                _bind_read_only(handle, item, flags)
            confinement.mount(
                "tmpfs",
                path,
                "tmpfs",
                confinement.MS_REMOUNT | confinement.MS_RDONLY | flags,
                "size=1m,mode=755",
            )
        finally:
            for handle in handles.values():
                os.close(handle)
        return True


#: where import paths from inside a scratch directory are shown again (under a tmpfs)
_REEXPOSE_ROOT = "/mnt"


def _paths_inside(paths: list[str], roots: tuple[str, ...]) -> list[str]:
    """The existing directories of ``paths`` (resolved) that lie inside one of ``roots``."""
    found = set()
    for item in paths:
        real = os.path.realpath(item)
        if os.path.isdir(real) and any(real.startswith(root + os.sep) for root in roots):
            found.add(real)
    return sorted(found)


def _bind_read_only(handle: int, target: str, flags: int) -> None:
    """Bind-mount the directory held by the O_PATH descriptor ``handle`` on ``target``,
    read-only."""
    confinement.mount(f"/proc/self/fd/{handle}", target, None,
                      confinement.MS_BIND | confinement.MS_REC, None)
    confinement.mount("none", target, None,
                      confinement.MS_REMOUNT | confinement.MS_BIND | confinement.MS_RDONLY | flags,
                      None)


#: kernel views with no folders a task could leave files in; never walked
_PSEUDO_FILE_SYSTEMS = frozenset({
    "proc", "sysfs", "cgroup", "cgroup2", "devpts", "securityfs", "debugfs", "tracefs",
    "bpf", "pstore", "configfs", "fusectl", "binfmt_misc", "efivarfs", "selinuxfs", "nsfs",
    "autofs", "rpc_pipefs",
})
#: file systems where a directory's link count is 2 + its subdirectories, so one with
#: ``st_nlink == 2`` has none and need not be listed (find's leaf optimisation)
_EXACT_LINK_COUNT_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "tmpfs", "devtmpfs"})
#: the walk stops (and says so) after listing this many directories
MAX_LISTED_DIRECTORIES = 200_000


def find_world_writable(
    skip: list[str], max_listed: int = MAX_LISTED_DIRECTORIES
) -> dict[str, Any]:
    """Every world-writable directory a task could reach: ``{"paths": [...], "complete":
    bool, "listed": n, "note": why incomplete}``.  Run once when a pool starts.

    Walks from ``/`` without following symlinks, skipping ``skip`` (the hidden paths,
    covered anyway), /proc, /sys and the kernel's pseudo file systems; a directory a task
    cannot search (no ``o+x``: tasks run as a uid of their own, without groups) is not
    entered, a world-writable one is recorded and not entered (the tmpfs over it covers
    everything below), one on a read-only mount is not recorded.  On file systems with
    exact directory link counts, a directory without subdirectories is not listed at all:
    ~75 ms for 17,000 directories here (warm cache) instead of ~200 ms.
    """
    file_systems = _file_systems_by_device()
    pruned = {os.path.realpath(path) for path in skip} | {"/proc", "/sys"}
    found: list[str] = []
    stack = ["/"]
    listed = 0
    while stack:
        if listed >= max_listed:
            return {"paths": sorted(found), "complete": False, "listed": listed,
                    "note": f"stopped after listing {listed} directories"}
        path = stack.pop()
        try:
            entries = os.scandir(path)
        except OSError:
            continue
        listed += 1
        with entries:
            for entry in entries:
                try:
                    if not entry.is_dir(follow_symlinks=False) or entry.path in pruned:
                        continue
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                kind = file_systems.get(info.st_dev, "")
                if kind in _PSEUDO_FILE_SYSTEMS:
                    continue
                if info.st_mode & stat.S_IWOTH:
                    if not _read_only(entry.path):
                        found.append(entry.path)
                elif info.st_mode & stat.S_IXOTH and not (
                    info.st_nlink == 2 and kind in _EXACT_LINK_COUNT_FILE_SYSTEMS
                ):
                    stack.append(entry.path)
    return {"paths": sorted(found), "complete": True, "listed": listed, "note": ""}


def _file_systems_by_device() -> dict[int, str]:
    """``st_dev`` -> file-system type of every mount, from /proc/self/mountinfo."""
    kinds: dict[int, str] = {}
    try:
        with open("/proc/self/mountinfo") as mountinfo:
            for line in mountinfo:
                fields = line.split()
                if " - " not in line or len(fields) < 5:
                    continue
                major, _, minor = fields[2].partition(":")
                kind = line.split(" - ", 1)[1].split()[0]
                kinds[os.makedev(int(major), int(minor))] = kind
    except (OSError, ValueError):
        pass  # no mountinfo: walk everything, list every directory
    return kinds


def _read_only(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False
