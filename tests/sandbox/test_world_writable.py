"""Every world-writable folder a task can reach is private to its zygote (issue 28.16).

The host's ``/run/lock`` (``/var/lock``) and any other world-writable folder are found
when the pool starts, not taken from a list: this suite makes a fresh 1777 folder under
``/run`` before its pool starts, and a task's files there must neither reach the host nor
a concurrent task on the other slot.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
import rewardkit_sandbox
from rewardkit_sandbox import SandboxPool
from rewardkit_sandbox.audit import leftover_files
from sandbox_audit import TEST_LIMITS

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="private mounts need root here")

MARK = f"rk-ww-{os.getpid()}"


@pytest.fixture(scope="module")
def planted(world_writable_folder: str) -> str:
    """A world-writable folder the pool has never heard of, outside every scratch dir
    (made by tests/conftest.py, which says why it outlives this module)."""
    return world_writable_folder


@pytest.fixture(scope="module")
def ww_pool(planted: str) -> Iterator[SandboxPool]:
    limits = TEST_LIMITS.__class__(**{**TEST_LIMITS.__dict__, "wall_time_s": 8.0})
    with SandboxPool(size=2, limits=limits) as pool:
        yield pool


def every_folder(pool: SandboxPool, planted: str) -> list[str]:
    """The world-writable folders a task can reach: those the pool found, and the known
    ones named too, so that a folder the walk missed fails a test, not silently."""
    return sorted({*pool.world_writable_dirs, "/run/lock", "/var/lock", planted})


def test_the_discovered_list_holds_run_lock_and_a_folder_made_before_start(
    ww_pool: SandboxPool, planted: str
) -> None:
    found = ww_pool.world_writable_dirs
    assert "/run/lock" in found
    assert planted in found
    assert "/tmp" in found
    assert not any(path.startswith(("/proc/", "/sys/")) for path in found)
    layer = ww_pool.layers["private_world_writable"]
    assert layer.active, layer.detail
    assert "/run/lock" in layer.detail and planted in layer.detail


def test_a_task_writing_into_every_world_writable_folder_leaves_nothing_on_the_host(
    ww_pool: SandboxPool, planted: str
) -> None:
    targets = every_folder(ww_pool, planted)
    program = (
        "import os, sys\n"
        f"wrote = []\nfor d in {targets!r}:\n"
        f"    try:\n        open(os.path.join(d, {MARK!r}), 'w').write('x')\n"
        "        wrote.append(d)\n    except OSError as e:\n        print(d, e, file=sys.stderr)\n"
        "print(len(wrote))\n"
    )
    result = ww_pool.run(program)
    assert result.status.value == "ok", result.stderr
    assert result.stdout == f"{len(targets)}\n", result.stderr  # every folder was writable
    for directory in targets:
        assert not os.path.exists(os.path.join(directory, MARK)), directory
    assert os.listdir(planted) == []
    assert leftover_files(ww_pool) == []


def test_leftover_files_sees_the_world_writable_folders(
    ww_pool: SandboxPool, planted: str
) -> None:
    """Inside a zygote's private /run/lock, and a slot uid's file in the host's."""
    zygote = ww_pool.zygote_pids()[0]
    inside = f"/proc/{zygote}/root/run/lock/{MARK}-inside"
    on_host = os.path.join(planted, f"{MARK}-host")
    open(inside, "w").close()
    open(on_host, "w").close()
    os.chown(on_host, ww_pool.slot_uids[1], ww_pool.slot_uids[1])
    try:
        found = leftover_files(ww_pool)
        assert inside in found and on_host in found, found
    finally:
        os.unlink(inside)
        os.unlink(on_host)
    assert leftover_files(ww_pool) == []


def test_an_import_path_inside_a_discovered_folder_is_still_importable(planted: str) -> None:
    """A checkout in a world-writable folder vanishes under its tmpfs: shown again read-only."""
    library = os.path.join(planted, "lib")
    os.makedirs(library, exist_ok=True)
    with open(os.path.join(library, "rk_ww_module.py"), "w") as module:
        module.write("ANSWER = 42\n")
    try:
        with SandboxPool(size=1, limits=TEST_LIMITS,
                         import_paths=[library]) as pool:
            assert planted in pool.world_writable_dirs
            result = pool.run(
                "import os, rk_ww_module\n"
                f"print(rk_ww_module.ANSWER, os.listdir({planted!r}))"
            )
            assert (result.status.value, result.stdout) == ("ok", "42 []\n"), result.stderr
            assert leftover_files(pool) == []
    finally:
        shutil.rmtree(library)


def test_a_task_on_one_slot_cannot_pass_a_note_to_a_concurrent_task_on_the_other(
    ww_pool: SandboxPool, planted: str
) -> None:
    folders = every_folder(ww_pool, planted)
    writer = (
        "import os, time\n"
        f"for d in {folders!r}:\n"
        f"    open(os.path.join(d, {MARK!r} + '-note'), 'w').write('hello')\n"
        "print('written', flush=True)\ntime.sleep(3)\n"
    )
    reader = (
        "import os, time\ntime.sleep(1.5)\n"
        f"for d in {folders!r}:\n"
        f"    print(d, os.path.exists(os.path.join(d, {MARK!r} + '-note')))\n"
    )
    results: dict[str, object] = {}
    threads = [
        threading.Thread(target=lambda: results.setdefault("writer", ww_pool.run(writer))),
        threading.Thread(target=lambda: results.setdefault("reader", ww_pool.run(reader))),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    written, read = results["writer"], results["reader"]
    assert written.stdout == "written\n", written.stderr  # type: ignore[attr-defined]
    lines = read.stdout.splitlines()  # type: ignore[attr-defined]
    assert lines == [f"{folder} False" for folder in folders], read.stderr  # type: ignore[attr-defined]


def test_doctor_lists_the_world_writable_folders() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "rewardkit_sandbox", "doctor", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    report = json.loads(completed.stdout)
    layer = report["layers"]["private_world_writable"]
    assert layer["active"] is True, layer
    assert "/run/lock" in layer["detail"]
    assert "/run/lock" in report["world_writable"]


def test_a_folder_removed_between_the_search_and_its_mount_is_gone_not_shared(tmp_path) -> None:
    """Another process's world-writable folder (another test worker's /run/rk-ww-<pid>)
    removed after the pool's search and before the zygote covers it: nothing to cover,
    named as gone; it was a failed mount that turned the layer off (the doctor's
    "SHARED (mount failed): ... No such file or directory" on two test workers)."""
    from rewardkit_sandbox.zygote.mounts import NamespacesAndMounts

    gone = tmp_path / "gone"
    gone.mkdir()
    gone.chmod(0o1777)
    search = {"paths": [str(gone)], "complete": True}
    gone.rmdir()
    layers: dict[str, dict[str, object]] = {}
    mounts = NamespacesAndMounts(layers, [])
    failed = mounts._cover_world_writable((str(gone),), 0)  # no mount: the lstat finds none
    mounts._report_world_writable([str(gone)], failed, search)
    assert failed == {} and mounts.mounted == []
    layer = layers["private_world_writable"]
    assert layer["active"] is True, layer
    assert f"gone since the search: {gone}" in str(layer["detail"])


@pytest.mark.skipif(
    shutil.which("setpriv") is None or not os.path.exists("/usr/bin/python3"),
    reason="needs setpriv and a system python3 that uid nobody can run",
)
def test_without_mount_permission_the_layer_is_missing_and_named_loudly() -> None:
    """Not root (no mount namespace): the folders are named as shared, with a warning."""
    program = (
        "import logging\nlogging.basicConfig()\n"
        "from rewardkit_sandbox import SandboxPool\n"
        "with SandboxPool(size=1) as pool:\n"
        "    layer = pool.layers['private_world_writable']\n"
        "    print(layer.active, '/run/lock' in layer.detail,\n"
        "          '/run/lock' in pool.world_writable_dirs)\n"
    )
    package = os.path.dirname(os.path.dirname(rewardkit_sandbox.__file__))
    completed = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         "env", f"PYTHONPATH={package}", "/usr/bin/python3", "-c", program],
        capture_output=True, text=True, timeout=120, check=False, cwd="/",
    )
    assert completed.stdout == "False True True\n", completed.stderr
    assert "sandbox layer 'private_world_writable' is missing" in completed.stderr
    assert "shared with the host and every slot" in completed.stderr
