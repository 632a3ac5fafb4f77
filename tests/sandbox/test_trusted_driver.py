"""The compiled-language driver runs from code the zygote compiled once at start
(``zygote.server._trusted_programs``; issue 42 item 5), not compiled again in every build
and run task: only the driver's own two programs, exactly as the runner sends them."""

from __future__ import annotations

import json
import statistics
import struct

from rewardkit_sandbox import SandboxPool, Status
from rewardkit_sandbox.languages import runner
from rewardkit_sandbox.zygote.server import _trusted_programs


def framed(header: object) -> bytes:
    body = json.dumps(header).encode()
    return struct.pack("!Q", len(body)) + body


def test_the_zygote_precompiles_exactly_the_programs_the_runner_sends() -> None:
    programs = _trusted_programs()
    # if the runner's programs changed and these did not, every task compiles again
    assert set(programs) == {runner._DRIVER + "\nbuild()\n", runner._DRIVER + "\nexecute()\n"}
    for source, (code, lines) in programs.items():
        assert code.co_filename == "main.py"
        assert "".join(lines) == source


def test_the_precompiled_driver_runs_and_its_traceback_shows_its_lines(
    contained: SandboxPool,
) -> None:
    program = runner._DRIVER + "\nexecute()\n"
    header = {"raw_files": [["data.txt", 0o644, 3]], "argv": ["/bin/cat", "data.txt"],
              "env": {}}
    ran = contained.run(program, stdin=framed(header) + b"abc")
    assert (ran.status, ran.stdout) == (Status.OK, "abc")
    missing = {"raw_files": [], "argv": ["./no-such-program"], "env": {}}
    failed = contained.run(program, stdin=framed(missing))
    assert failed.status is Status.FAILED
    assert "FileNotFoundError" in failed.stderr
    # the source lines come from the zygote's copy (linecache), as when compiled here
    assert 'File "main.py"' in failed.stderr
    assert "os.execve(argv[0], argv, env)" in failed.stderr


def test_any_other_program_is_compiled_in_its_own_child(contained: SandboxPool) -> None:
    # the driver's text with one more statement is not the trusted program: it runs as
    # written (its last line included), compiled in the task child
    program = runner._DRIVER + "\nprint('compiled here')\n"
    ran = contained.run(program)
    assert (ran.status, ran.stdout) == (Status.OK, "compiled here\n")


def test_the_zygote_runs_its_own_copy_not_a_new_compile(contained: SandboxPool) -> None:
    # the same driver with a comment after it is compiled in its child: ~300 lines more
    # to compile, several ms of the child's CPU (the zygote's copy: none). Read before
    # the mounts: a zygote that read the file after them (hidden) compiled every time.
    header = framed({"raw_files": [], "argv": ["/bin/true"], "env": {}})
    trusted = runner._DRIVER + "\nexecute()\n"
    compiled = trusted + "# compiled in the child\n"
    cpu: dict[str, list[float]] = {trusted: [], compiled: []}
    for _ in range(7):
        for program in (trusted, compiled):
            ran = contained.run(program, stdin=header)
            assert ran.status is Status.OK, (ran.error, ran.stderr)
            cpu[program].append(ran.cpu_time_s)
    assert statistics.median(cpu[trusted]) < statistics.median(cpu[compiled]), cpu
