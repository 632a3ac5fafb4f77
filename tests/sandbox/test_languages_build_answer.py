"""The build task's answer (docs/sandbox.md, Languages): one framed JSON verdict on the
task's stdout, read as bytes, then the artifacts' bytes raw; the pool side takes only a
well-formed answer (relative names without ``..``, plain modes, sizes that add up, under
the artifact cap), and the driver sends only regular files (no links), under its cap."""

from __future__ import annotations

import dataclasses
import json
import struct

import pytest
from rewardkit_sandbox import CompileCache, CompiledRunner, SandboxPool, Status
from rewardkit_sandbox.languages import LANGUAGES, find_toolchain
from rewardkit_sandbox.languages.runner import _build_answer, _Plan

needs_c = pytest.mark.skipif(
    find_toolchain(LANGUAGES["c"])[1] is not None, reason="no C compiler on the sandbox PATH"
)

HELLO = '#include <stdio.h>\nint main(void){ puts("hi"); return 0; }\n'


def framed(verdict: object, *parts: bytes) -> bytes:
    body = json.dumps(verdict).encode()
    return b"".join([struct.pack("!Q", len(body)), body, *parts])


def test_a_well_formed_answer_is_read_byte_for_byte() -> None:
    data = bytes(range(256)) * 3
    answer = framed({"ok": True, "log": "", "raw_files": [["prog", 0o755, len(data)],
                                                           ["classes/A.class", 0o644, 2]]},
                    data, b"\xca\xfe")
    read = _build_answer(answer, 1 << 20)
    assert read is not None
    verdict, files = read
    assert verdict["ok"] is True
    assert files == {"prog": (0o755, data), "classes/A.class": (0o644, b"\xca\xfe")}


@pytest.mark.parametrize(
    ("entries", "tail"),
    [
        ([["/etc/passwd", 0o644, 1]], b"x"),  # an absolute path
        ([["../prog", 0o755, 1]], b"x"),  # out of the work directory
        ([["a/../../prog", 0o755, 1]], b"x"),
        ([["prog\0x", 0o755, 1]], b"x"),
        ([["", 0o755, 1]], b"x"),
        ([["prog", 0o4755, 1]], b"x"),  # setuid bit
        ([["prog", 0o777, 1]], b"x"),  # group/other write
        ([["prog", 0o755, -1]], b"x"),
        ([["prog", 0o755, 2]], b"x"),  # says more than follows
        ([["prog", 0o755, 1]], b"xy"),  # bytes nobody listed
        ([["prog", 0o755, 1], ["prog", 0o755, 0]], b"x"),  # the same file twice
        ([["prog", "493", 1]], b"x"),
        ([["prog", 0o755, 1.0]], b"x"),
        ([["prog", 0o755, True]], b"x"),
        ([["prog", 0o755]], b"x"),
        ([["prog", 0o755, 2048]], bytes(2048)),  # over the cap (1 KiB here)
    ],
)
def test_a_malformed_answer_is_refused(entries: list[list[object]], tail: bytes) -> None:
    assert _build_answer(framed({"ok": True, "raw_files": entries}, tail), 1024) is None


@pytest.mark.parametrize(
    "answer",
    [b"", b"\0\0\0", struct.pack("!Q", 99) + b"{}", struct.pack("!Q", 3) + b"{no",
     framed([1, 2]), framed({"ok": True}), framed({"ok": True, "raw_files": {"a": 1}}),
     b'{"ok": true, "files": {}}'],  # the old shape: JSON text, no frame
)
def test_an_unreadable_answer_is_refused(answer: bytes) -> None:
    assert _build_answer(answer, 1024) is None


def test_raw_stdout_comes_back_as_written(contained: SandboxPool) -> None:
    program = "import sys\nsys.stdout.buffer.write(bytes(range(256)) * 2)\n"
    raw = contained.run(program, raw_stdout=True)
    assert raw.ok, (raw.status, raw.error)
    assert raw.stdout_bytes == bytes(range(256)) * 2 and raw.stdout == ""
    text = contained.run(program)  # the default: decoded text, no bytes kept
    assert text.stdout_bytes is None and "\ufffd" in text.stdout


@needs_c
def test_a_binary_build_travels_raw_and_runs(contained: SandboxPool) -> None:
    runner = CompiledRunner(contained, "c", cache=CompileCache())
    plan = runner._program_plan(HELLO)
    build = runner._build(plan)
    assert build.ok, build.error
    mode, data = build.files["prog"]
    assert data[:4] == b"\x7fELF" and mode & 0o100
    assert any(byte >= 0x80 for byte in data)  # not text: it came back unencoded
    result = runner.run(HELLO)
    assert (result.status, result.stdout) == (Status.OK, "hi\n")


@needs_c
def test_the_driver_sends_regular_files_only_and_keeps_its_cap(
    contained: SandboxPool,
) -> None:
    runner = CompiledRunner(contained, "c", cache=CompileCache())
    # a build whose outputs include links (to a host file, to a folder) beside real files
    script = ("ln -s /etc/hostname prog && mkdir -p out/sub && printf A > out/a && "
              "printf B > out/sub/b && ln -s /etc out/etc && ln -s ../out/a out/sub/back")
    plan = _Plan({"main.c": HELLO}, [{"argv": ["/bin/sh", "-c", script], "name": "sh"}],
                 ["prog", "out"], ["./prog"])
    build = runner._build(plan)
    assert build.ok, build.error
    assert build.files == {"out/a": (0o644, b"A"), "out/sub/b": (0o644, b"B")}

    # artifacts over the cap (half the build task's stdout cap) are a failed collect
    small = dataclasses.replace(runner.compile_limits, stdout_bytes=256 * 1024)
    capped = CompiledRunner(contained, "c", cache=CompileCache(), compile_limits=small)
    big = _Plan({"main.c": HELLO},
                [{"argv": ["/bin/sh", "-c", "head -c 200000 /dev/zero > prog"], "name": "sh"}],
                ["prog"], ["./prog"])
    over = capped._build(big)
    assert over.status is Status.COMPILE_ERROR and "collect" in str(over.error), over
    assert over.files == {}


@needs_c
def test_a_compiler_step_gets_what_popen_gave_it(contained: SandboxPool) -> None:
    """The driver starts each step with posix_spawnp: stdin /dev/null, stdout and
    stderr one pipe (the log), no other descriptor, SIGPIPE and SIGXFSZ not ignored."""
    runner = CompiledRunner(contained, "c", cache=CompileCache())
    script = ("for fd in 3 4 5 6 7 8 9 10 11 12; do [ -e /proc/self/fd/$fd ] && "
              "echo inherited $fd; done; echo stdin $(readlink /proc/self/fd/0); "
              "grep SigIgn /proc/self/status; echo to-stderr >&2; exit 3")
    plan = _Plan({"main.c": HELLO}, [{"argv": ["/bin/sh", "-c", script], "name": "probe"}],
                 ["prog"], ["./prog"])
    build = runner._build(plan)
    assert build.status is Status.COMPILE_ERROR and "(probe)" in str(build.error), build
    assert "inherited" not in build.log, build.log
    assert "stdin /dev/null" in build.log and "to-stderr" in build.log, build.log
    ignored = int(build.log.split("SigIgn:")[1].split()[0], 16)
    assert not ignored & (1 << (13 - 1) | 1 << (25 - 1)), build.log  # SIGPIPE, SIGXFSZ
    missing = _Plan({"main.c": HELLO}, [{"argv": ["/no/such/compiler"], "name": "cc"}],
                    ["prog"], ["./prog"])
    assert runner._build(missing).status is Status.SANDBOX_ERROR
