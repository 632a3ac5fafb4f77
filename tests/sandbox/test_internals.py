"""The zygote's fast paths keep the same isolation and the same task environment.

Covers what the throughput work changed: the seccomp filter compiled once and inherited
from a self-confined zygote, the task's stdio prepared in the zygote, the fixed work
directory, the marshal control protocol, the symlink-safe file removal, the lean
zygote (no at-fork hooks) and its preloaded modules, binary and large stdin.
"""

from __future__ import annotations

import os
import socket
import textwrap
import time
from pathlib import Path

import pytest
from rewardkit_sandbox import SandboxPool, Status, _confinement
from rewardkit_sandbox._protocol import Channel, ProtocolError
from rewardkit_sandbox.zygote.workdir import _remove_tree
from sandbox_audit import TEST_LIMITS


def run(pool: SandboxPool, source: str, **kwargs: object):  # type: ignore[no-untyped-def]
    return pool.run(textwrap.dedent(source), **kwargs)  # type: ignore[arg-type]


def _status_fields(pid: int | str) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as status:
        return {
            key.strip(): value.strip()
            for key, value in (line.split(":", 1) for line in status if ":" in line)
        }


def test_the_zygote_runs_under_its_own_seccomp_filter_and_no_new_privs(
    contained: SandboxPool,
) -> None:
    assert len(contained.zygote_pids()) == contained.size
    for pid in contained.zygote_pids():
        fields = _status_fields(pid)
        assert (fields["Seccomp"], fields["NoNewPrivs"]) == ("2", "1")


def test_a_task_inherits_the_filter_no_new_privs_and_is_not_dumpable(
    contained: SandboxPool,
) -> None:
    source = """
        import ctypes
        fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
        libc = ctypes.CDLL(None)
        print(fields["Seccomp"].strip(), fields["NoNewPrivs"].strip(), libc.prctl(3, 0, 0, 0, 0))
    """
    assert run(contained, source).stdout.split() == ["2", "1", "0"]  # PR_GET_DUMPABLE


def test_the_filter_is_compiled_to_bpf_once() -> None:
    bpf = _confinement.compile_seccomp_bpf(deny_network_sockets=False)
    with_sockets_rule = _confinement.compile_seccomp_bpf(deny_network_sockets=True)
    assert len(bpf) % 8 == 0 and len(with_sockets_rule) > len(bpf)
    assert _confinement.SeccompProgram(bpf).instructions == len(bpf) // 8
    with pytest.raises(ValueError):
        _confinement.SeccompProgram(b"\0" * 7)


def test_the_task_stdio_are_pipes_with_the_usual_settings(contained: SandboxPool) -> None:
    source = """
        import os, stat, sys
        for stream in (sys.stdin, sys.stdout, sys.stderr):
            mode = os.fstat(stream.fileno()).st_mode
            print(stream.fileno(), stat.S_ISFIFO(mode), stream.seekable(), stream.isatty(),
                  stream.encoding, stream.line_buffering)
        print(repr(sys.stdin.read()))
    """
    lines = run(contained, source).stdout.splitlines()
    assert lines == [
        "0 True False False utf-8 False",
        "1 True False False utf-8 False",
        "2 True False False utf-8 True",
        "''",
    ]


def test_binary_and_large_stdin_and_output_pass_through(contained: SandboxPool) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB, more than a pipe holds
    source = """
        import hashlib, sys
        data = sys.stdin.buffer.read()
        print(len(data), hashlib.sha256(data).hexdigest())
        sys.stdout.flush()
        sys.stdout.buffer.write(b"\\xff\\xfe")
    """
    import hashlib

    result = run(contained, source, stdin=data)
    assert result.status is Status.OK
    first, rest = result.stdout.split("\n", 1)
    assert first == f"{len(data)} {hashlib.sha256(data).hexdigest()}"
    assert rest == "\ufffd\ufffd"  # undecodable output is replaced, as before


def test_the_task_environment_is_the_allow_list_with_its_work_dir(contained: SandboxPool) -> None:
    source = """
        import os, sys
        print(sorted(os.environ))
        print(os.environ["HOME"] == os.environ["TMPDIR"] == os.getcwd(), sys.argv)
    """
    names, checks = run(contained, source).stdout.splitlines()
    assert eval(names) == [
        "CUDA_VISIBLE_DEVICES",
        "HOME",
        "LANG",
        "OMP_NUM_THREADS",
        "PATH",
        "PYTHONDONTWRITEBYTECODE",
        "TMPDIR",
    ]
    assert checks == "True ['main.py']"


def test_task_children_do_not_inherit_at_fork_hooks(contained: SandboxPool) -> None:
    # threading and random register at-fork hooks that every task child would run; the
    # zygote does not import them (nor socket, shutil, tempfile: modules cost every fork).
    source = (
        "import sys\nprint(sorted({'threading', 'random', 'socket', 'shutil'} & set(sys.modules)))"
    )
    assert run(contained, source).stdout == "[]\n"


def test_the_default_preload_is_imported_before_the_task(contained: SandboxPool) -> None:
    from rewardkit_sandbox import DEFAULT_PRELOAD

    source = "import sys\nprint(sorted(set(%r) - set(sys.modules)))"
    assert run(contained, source % (list(DEFAULT_PRELOAD),)).stdout == "[]\n"


def test_preload_is_configurable_and_a_failed_one_is_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with SandboxPool(
        size=1,
        limits=TEST_LIMITS,
        preload=("heapq", "no_such_module_for_rewardkit"),
    ) as pool:
        result = run(pool, "import sys\nprint('heapq' in sys.modules, 'typing' in sys.modules)")
    assert result.stdout == "True False\n"
    assert "could not preload no_such_module_for_rewardkit" in caplog.text


def test_threads_of_the_program_are_still_joined_at_exit(contained: SandboxPool) -> None:
    source = """
        import threading, time
        def late():
            time.sleep(0.2)
            print("thread done", flush=True)
        threading.Thread(target=late).start()
        print("main done")
    """
    assert run(contained, source).stdout == "main done\nthread done\n"


def test_files_left_in_the_work_dir_do_not_reach_the_next_task(contained: SandboxPool) -> None:
    run(contained, "import os\nos.makedirs('a/b/c')\nopen('a/b/c/f', 'w').write('x')")
    for _ in range(contained.size):
        assert run(contained, "import os\nprint(os.listdir())").stdout == "[]\n"


def test_a_deep_directory_tree_is_removed(contained: SandboxPool) -> None:
    source = """
        import os
        for _ in range(600):
            os.mkdir("d")
            os.chdir("d")
        open("leaf", "w").write("x")
        print("deep")
    """
    assert run(contained, source).stdout == "deep\n"
    # the ``contained`` fixture asserts the zygotes' scratch dirs are empty again


def test_file_removal_never_follows_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("precious")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "file").write_text("x")
    (tree / "link").symlink_to(outside)
    (tree / "sub" / "link").symlink_to(outside / "keep")
    _remove_tree(str(tree))
    assert not tree.exists()
    assert (outside / "keep").read_text() == "precious"
    link = tmp_path / "lonely-link"
    link.symlink_to(outside)
    _remove_tree(str(link))
    assert not link.is_symlink() and (outside / "keep").exists()


def test_the_channel_carries_bytes_and_large_messages() -> None:
    left, right = socket.socketpair()
    with left, right:
        sender, receiver = Channel(left.fileno()), Channel(right.fileno())
        payload = {"op": "run", "stdin": os.urandom(3 << 20), "n": [1, 2.5, None, True]}
        import threading

        thread = threading.Thread(target=sender.send, args=(payload,))
        thread.start()
        assert receiver.receive() == payload
        thread.join()
        right.setblocking(False)
        with pytest.raises(TimeoutError):
            receiver.receive(deadline=time.monotonic() + 0.05)
        left.sendall(b"\0\0\0\3abc")
        with pytest.raises(ProtocolError):
            receiver.receive(deadline=time.monotonic() + 1)
        left.close()
        receiver2 = Channel(right.fileno())
        assert receiver2.receive(deadline=time.monotonic() + 1) is None


@pytest.mark.parametrize("raw_size", [1500, 200_000])
def test_the_raw_part_leaves_no_copy_in_the_channel(raw_size: int) -> None:
    """The zygote's tests go from the channel's read buffer into a memory file: never
    into the message buffer (whose storage is freed unzeroed when it shrinks), and none
    of them stays behind, though only the part of the 64 KiB read buffer that reads
    wrote to is zeroed."""
    raw = (b"assert candidate(1) == 2  # secret\n" * (raw_size // 36 + 1))[:raw_size]
    left, right = socket.socketpair()
    with left, right:
        sender, receiver = Channel(left.fileno()), Channel(right.fileno())
        import threading

        thread = threading.Thread(target=sender.send, args=({"tests_bytes": len(raw)}, None, raw))
        thread.start()
        message = receiver.receive()
        assert message == {"tests_bytes": len(raw)}
        assert not receiver._buffer  # read no further than the message
        memory_file = os.memfd_create("raw-test")
        try:
            receiver.receive_raw(memory_file, len(raw))
            thread.join()
            assert os.pread(memory_file, len(raw) + 1, 0) == raw
        finally:
            os.close(memory_file)
        assert not any(receiver._chunk) and not any(receiver._buffer)
        assert receiver._chunk_used == 0
        sender.send({"after": 1})
        assert receiver.receive() == {"after": 1}  # the channel still works


def test_the_call_link_carries_small_and_large_messages() -> None:
    """A judge <-> candidate link reads a small message in one short read and a large one
    (longer than that read) whole."""
    from rewardkit_sandbox._calls import Link

    to_read, to_write = os.pipe()
    back_read, back_write = os.pipe()
    try:
        sender, receiver = Link(back_read, to_write), Link(to_read, back_write)
        import threading

        large = ["x" * 1000] * 3000  # ~3 MB, beyond the pipe's buffer
        def send_both() -> None:
            sender.send(("call", 1))
            sender.send(large)

        thread = threading.Thread(target=send_both)
        thread.start()
        assert receiver.receive() == ("call", 1)
        assert receiver.receive() == large
        thread.join()
    finally:
        for fd in (to_read, to_write, back_read, back_write):
            os.close(fd)


def test_a_slot_whose_files_cannot_be_removed_gets_a_new_zygote() -> None:
    with SandboxPool(size=1, limits=TEST_LIMITS) as pool:
        slot = pool._slots[0]
        first = slot.process
        assert first is not None and slot.channel is not None
        assert pool.run("print(1)").stdout == "1\n"
        assert slot.process is first  # a clean task keeps its zygote
        channel = slot.channel
        real_receive = channel.receive

        def receive_with_retire(deadline: float | None = None) -> dict | None:
            reply = real_receive(deadline)
            assert reply is not None
            return {**reply, "retire": "files of the task could not be removed"}

        channel.receive = receive_with_retire  # type: ignore[method-assign]
        result = pool.run("print(2)")
        assert (result.status, result.stdout) == (Status.OK, "2\n")  # the verdict stands
        assert pool.run("print(3)").stdout == "3\n"
        assert slot.process is not first  # ... but the slot got a fresh zygote
