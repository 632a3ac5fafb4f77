"""The trusted Python driver of a compiled-language task, run *inside* the sandbox.

:mod:`rewardkit_sandbox.languages` sends this module's source as the task's program, with
one of its entry points called at the end: ``build()`` (write the sources, run the
compiler steps, send back the artifacts) or ``execute()`` (write the artifacts, then
``execve`` the program). Running in the task child, it is under every layer of the task
(rlimits, seccomp, no network, private work directory, the slot uid), and so is every
compiler or program it starts: nothing here runs outside the sandbox.

Both read their instructions from stdin: one length-prefixed JSON header (``!Q`` + bytes),
then the files to write (raw, in the order and sizes the header's ``raw_files`` lists:
the sources and the Go cache seed for ``build``, the artifacts for ``execute``), then,
for ``execute``, whatever stdin the program itself gets (read by the program from the
same descriptor, after them). ``build`` answers the same way on stdout: one
length-prefixed JSON verdict whose ``raw_files`` lists the artifacts, then their bytes,
raw (no base64: a Go binary of 1.3 MB is not 1.75 MB of text to encode and decode).
The compiler's output is capped here, before it ever reaches the zygote's pipes.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

_HEADER = struct.Struct("!Q")


def _read_exact(size: int) -> bytes:
    """Exactly ``size`` bytes of fd 0 (unbuffered: the rest stays for the program)."""
    data = bytearray()
    while len(data) < size:
        chunk = os.read(0, size - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _read_header() -> dict[str, Any]:
    (size,) = _HEADER.unpack(_read_exact(_HEADER.size))
    header: dict[str, Any] = json.loads(_read_exact(size))
    return header


def _new_file(name: str, mode: int) -> BinaryIO:
    """``name`` created for writing (its folders too); never an existing file or a link."""
    directory = os.path.dirname(name)
    if directory:
        os.makedirs(directory, exist_ok=True)
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    return os.fdopen(fd, "wb")


def _write_raw_files(files: list[list[Any]]) -> None:
    """Write ``[name, mode, size]`` files whose bytes follow the header on fd 0, in order."""
    for name, mode, size in files:
        with _new_file(name, mode) as handle:
            left = int(size)
            while left > 0:
                chunk = os.read(0, min(left, 1 << 20))
                if not chunk:
                    raise EOFError(f"the input ended {left} bytes before {name} did")
                handle.write(chunk)
                left -= len(chunk)


def _limit_data(data_bytes: int | None) -> None:
    """Cap the data segment (heap) for runtimes that reserve far more address space
    than they use (JVM, V8, Go): the task's address-space limit is their ceiling."""
    if data_bytes:
        resource.setrlimit(resource.RLIMIT_DATA, (data_bytes, data_bytes))


def _environment(header: dict[str, Any]) -> dict[str, str]:
    """The task's environment plus the language's (``{cwd}``: the work directory)."""
    cwd = os.getcwd()
    extra = {name: value.replace("{cwd}", cwd) for name, value in header.get("env", {}).items()}
    return dict(os.environ, **extra)


def _run_step(argv: list[str], env: dict[str, str], cap: int) -> tuple[int, bytes]:
    """Run one compiler step; (exit code or -signal, its output up to ``cap`` bytes).

    Started with ``posix_spawnp`` as ``subprocess.Popen`` would start it (stdin from
    /dev/null, stdout and stderr into one pipe, no descriptor but those three passed on,
    SIGPIPE and SIGXFSZ back to their defaults), without importing ``subprocess``
    (10-60 ms of a build on a busy machine)."""
    import signal

    _no_descriptors_inherited()
    read_end, write_end = os.pipe()
    try:
        pid = os.posix_spawnp(
            argv[0], argv, env,
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                          (os.POSIX_SPAWN_DUP2, write_end, 1),
                          (os.POSIX_SPAWN_DUP2, write_end, 2)],
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    finally:
        os.close(write_end)
    kept = bytearray()
    try:
        while chunk := os.read(read_end, 65536):
            if len(kept) < cap:
                kept += chunk[: cap - len(kept)]
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), bytes(kept)


def _no_descriptors_inherited() -> None:
    """Every descriptor above 2 close-on-exec (what ``Popen(close_fds=True)`` ensures)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every descriptor the limit allows
        fds = list(range(resource.getrlimit(resource.RLIMIT_NOFILE)[0]))
    for fd in fds:
        try:
            if fd > 2 and os.get_inheritable(fd):
                os.set_inheritable(fd, False)
        except OSError:  # not open (the listing's own descriptor, closed by now)
            continue


def _own_lines(preprocessed: bytes, source: str) -> list[str]:
    """The lines of ``cpp -dD`` output that come from ``source`` itself (not a header)."""
    own: list[str] = []
    current = ""
    for raw in preprocessed.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if line.startswith("# ") and '"' in line:  # a line marker: # 12 "file" flags
            current = line.split('"')[1]
        elif current == source:
            own.append(line)
    return own


def _macros_of(own: list[str]) -> list[str]:
    """Names the candidate itself defines or undefines."""
    names: list[str] = []
    for line in own:
        if line.startswith(("#define ", "#undef ")):
            name = line.split()[1].split("(")[0]
            if name not in names:
                names.append(name)
    return names


def _refused(own: list[str], rules: list[list[str]]) -> str | None:
    """The first rule (``[regex, why]``) the candidate's own code breaks, after the
    preprocessor (so a macro cannot hide it); macro definitions are not code."""
    import re

    code = "\n".join(line for line in own if not line.startswith(("#define ", "#undef ")))
    for pattern, why in rules:
        found = re.search(pattern, code)
        if found:
            return f"refused: {why} ({found.group(0)[:60]!r})"
    return None


def _collect(paths: list[str], limit: int) -> list[tuple[str, int, bytes]]:
    """The build's artifacts (regular files only, no links followed): (path, mode, bytes)."""
    found: list[tuple[str, int, bytes]] = []
    total = 0
    pending = list(paths)
    while pending:
        path = pending.pop()
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            pending.extend(os.path.join(path, name) for name in sorted(os.listdir(path)))
            continue
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        total += info.st_size
        if total > limit:
            raise OSError(f"build artifacts exceed {limit} bytes")
        with open(path, "rb") as handle:
            data = handle.read(info.st_size + 1)
        if len(data) != info.st_size:
            raise OSError(f"{path} changed while it was read")
        found.append((path, info.st_mode & 0o755, data))
    return found


def _write_out(data: bytes) -> None:
    """All of ``data`` on fd 1 (raw: the text stream would encode it)."""
    sys.stdout.flush()
    with memoryview(data) as view:
        while view:
            view = view[os.write(1, view):]


def build() -> None:
    """Compile: write the sources, run each step; answer on stdout with one framed JSON
    verdict and the artifacts' bytes after it."""
    header = _read_header()
    _write_raw_files(header["raw_files"])
    _limit_data(header.get("data_bytes"))
    env = _environment(header)
    cap = int(header["log_bytes"])
    log = bytearray()
    verdict: dict[str, Any] = {"ok": True}
    for step in header["steps"]:
        code, output = _run_step(step["argv"], env, cap)
        if "undef_of" in step and code == 0:  # a preprocessor pass: the candidate's macros
            with open(step["preprocessed"], "rb") as handle:
                own = _own_lines(handle.read(), step["undef_of"])
            refused = _refused(own, step.get("refuse") or [])
            if refused is not None:
                log += refused.encode()
                verdict = {"ok": False, "exit": None, "step": "refused"}
                break
            with open(step["undef_into"], "w") as handle:
                handle.write("".join(f"#undef {name}\n" for name in _macros_of(own)))
            continue
        log += output[: max(0, cap - len(log))]
        if code != 0:
            verdict = {"ok": False, "exit": code, "step": step.get("name", step["argv"][0])}
            break
    artifacts: list[tuple[str, int, bytes]] = []
    if verdict["ok"]:
        try:
            artifacts = _collect(header["collect"], int(header["artifact_bytes"]))
        except OSError as error:
            verdict = {"ok": False, "exit": None, "step": "collect", "problem": str(error)}
    verdict["raw_files"] = [[name, mode, len(data)] for name, mode, data in artifacts]
    verdict["log"] = log.decode("utf-8", "replace")
    body = json.dumps(verdict).encode()
    _write_out(b"".join([_HEADER.pack(len(body)), body, *(data for _, _, data in artifacts)]))


def _interpreter_of(path: str) -> str | None:
    """The dynamic loader an ELF executable names (its PT_INTERP), or None."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:  # 64-bit, little
                return None
            phoff, = struct.unpack_from("<Q", head, 32)
            size, count = struct.unpack_from("<HH", head, 54)
            handle.seek(phoff)
            table = handle.read(size * count)
            for index in range(count):
                kind, = struct.unpack_from("<I", table, index * size)
                if kind == 3:  # PT_INTERP
                    offset, = struct.unpack_from("<Q", table, index * size + 8)
                    length, = struct.unpack_from("<Q", table, index * size + 32)
                    handle.seek(offset)
                    return handle.read(length).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


def _through_private_loader(argv: list[str]) -> list[str]:
    """``argv`` run by an execute-only copy of its dynamic loader: the process then
    starts non-dumpable (its executable is not readable by it), so a runtime whose own
    binary everybody may read (java, node) cannot open its /proc/self/mem either. The
    argv unchanged when the runtime names no loader."""
    loader = _interpreter_of(argv[0])
    if loader is None:
        return argv
    copy = "rewardkit-loader"
    with open(loader, "rb") as source, open(copy, "wb") as target:
        target.write(source.read())
    os.chmod(copy, 0o100)
    # the real path: a runtime finds its libraries from where it lies ($ORIGIN)
    return [f"./{copy}", os.path.realpath(argv[0]), *argv[1:]]


def execute() -> None:
    """Run: write the artifacts, cap the heap if asked, and become the program."""
    header = _read_header()
    _write_raw_files(header["raw_files"])
    for name in header.get("exec_only", ()):
        # an execute-only binary starts non-dumpable: its /proc/self/mem is not its own
        # to open (and the sandbox's seccomp filter refuses making it dumpable again)
        os.chmod(name, 0o100)
    _limit_data(header.get("data_bytes"))
    env = _environment(header)
    sys.stdout.flush()
    argv = header["argv"]
    if header.get("private_loader"):
        argv = _through_private_loader(argv)
    os.execve(argv[0], argv, env)
