"""The zygote's start-up, part 1: the namespaces and mounts it enters.

A child subreaper, an empty network namespace, a private mount namespace with tmpfs
scratch directories, and the hidden paths (home directories, the repository) covered,
with the import paths found under them shown again read-only.  Standard library only
(see :mod:`rewardkit_sandbox._zygote`).
"""

from __future__ import annotations

import os

from rewardkit_sandbox import _confinement as confinement
from rewardkit_sandbox._zygote_probes import layer

SCRATCH_DIRS = ("/tmp", "/dev/shm", "/var/tmp")


class NamespacesAndMounts:
    """Entering what the kernel allows; each step records its layer in ``layers``."""

    layers: dict[str, dict[str, object]]
    child_path: list[str]
    netns: bool
    mountns: bool
    mounted: list[str]

    def _enter_subreaper(self) -> None:
        try:
            confinement.prctl(confinement.PR_SET_CHILD_SUBREAPER, 1)
            self.layers["child_subreaper"] = layer(True, "orphans of a task are reaped here")
        except OSError as error:
            self.layers["child_subreaper"] = layer(False, f"prctl failed: {error}")

    def _enter_network_namespace(self) -> None:
        try:
            confinement.unshare(confinement.CLONE_NEWNET)
            self.netns = True
            self.layers["network_namespace"] = layer(True, "empty namespace, loopback down")
        except OSError as error:
            self.netns = False
            self.layers["network_namespace"] = layer(
                False, f"unshare(CLONE_NEWNET) failed: {error}; seccomp denies inet sockets"
            )

    def _enter_mount_namespace(self, disk_bytes: int, hidden_paths: list[str]) -> None:
        self.mountns = False
        self.mounted: list[str] = []
        try:
            confinement.unshare(confinement.CLONE_NEWNS)
            confinement.mount("none", "/", None, confinement.MS_REC | confinement.MS_PRIVATE, None)
            flags = confinement.MS_NOSUID | confinement.MS_NODEV
            # import paths inside a scratch directory (a venv in /tmp) vanish under the
            # private tmpfs: hold them by descriptor now, bind them back below
            in_scratch = _paths_inside(self.child_path, SCRATCH_DIRS)
            handles = {item: os.open(item, os.O_PATH | os.O_DIRECTORY) for item in in_scratch}
            try:
                confinement.mount("tmpfs", "/tmp", "tmpfs", flags,
                                  f"size={disk_bytes},mode=1777")
                self.mounted.append("/tmp")
                for path in SCRATCH_DIRS[1:]:
                    if os.path.isdir(path):
                        confinement.mount("tmpfs", path, "tmpfs", flags, "size=8m,mode=1777")
                        self.mounted.append(path)
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
            return
        self.mountns = True
        detail = f"private tmpfs /tmp ({disk_bytes // (1024 * 1024)} MiB)"
        if hidden:
            detail += ", hidden: " + " ".join(hidden)
        self.layers["mount_namespace"] = layer(True, detail)

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
        for scratch in SCRATCH_DIRS:
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
