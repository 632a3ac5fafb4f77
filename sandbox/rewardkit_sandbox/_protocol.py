"""Framed messages over the pool <-> zygote unix socket.

A frame is ``!I`` (length) + a ``marshal``-encoded dict of str/int/float/bool/None/bytes
/list values (stdin travels in the request, stdout and stderr in the reply, as bytes).
``marshal`` rather than JSON: both ends are trusted processes of the same interpreter,
and it is several times cheaper, which counts in the zygote, where every page touched
after a fork is a copy-on-write fault.  Never used for anything a task wrote (the task
child reports in JSON lines).  A frame is written with one ``writev`` and usually read
with two ``readv`` (its length, then the rest: never beyond it, so raw bytes that follow
reach only :meth:`Channel.receive_raw`); the raw descriptor is used, so the zygote
(``python -I -S``) needs neither ``socket`` nor ``selectors``.
"""

from __future__ import annotations

import marshal
import os
import select
import struct
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote: every module there is paid per task
    from typing import Any


_HEADER = struct.Struct("!I")
MAX_MESSAGE_BYTES = 2**32 - 1
_RECEIVE_CHUNK = 64 * 1024


_ZERO_VIEW = memoryview(bytes(_RECEIVE_CHUNK))


def _zero(view: memoryview) -> None:
    """Overwrite ``view`` with zero bytes in place (no temporary copy of its size)."""
    for start in range(0, len(view), _RECEIVE_CHUNK):
        part = view[start : start + _RECEIVE_CHUNK]
        part[:] = _ZERO_VIEW[: len(part)]


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        view = view[os.write(fd, view) :]


class ProtocolError(Exception):
    """The peer sent something that is not a well-formed message."""


class Channel:
    """One end of the control socket; not thread-safe (each slot is used by one thread).

    With a ``deadline`` (``time.monotonic()`` value), ``send`` and ``receive`` wait with
    ``poll`` and raise ``TimeoutError`` once it passes; the descriptor should then be
    non-blocking.  Without, they block.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()
        self._chunk = bytearray(_RECEIVE_CHUNK)
        #: how much of ``_chunk`` a read has written since it was last zeroed
        self._chunk_used = 0
        self._poll: Any = None

    def send(
        self, payload: dict[str, Any], deadline: float | None = None, raw: bytes = b""
    ) -> None:
        """Send one message, all of it, followed by ``raw`` bytes (read with
        :meth:`receive_raw`; the payload should say how many)."""
        body = marshal.dumps(payload)
        if len(body) > MAX_MESSAGE_BYTES:
            raise ProtocolError(f"message of {len(body)} bytes exceeds {MAX_MESSAGE_BYTES}")
        parts: list[Any] = [_HEADER.pack(len(body)), body]
        if raw:
            parts.append(raw)
        while parts:
            if deadline is not None:
                self._wait(select.POLLOUT, deadline)
            try:
                written = os.writev(self.fd, parts)
            except BlockingIOError:
                continue
            while parts and written >= len(parts[0]):
                written -= len(parts[0])
                del parts[0]
            if written:
                parts[0] = memoryview(parts[0])[written:]

    def receive(self, deadline: float | None = None) -> dict[str, Any] | None:
        """One message; ``None`` at end of stream."""
        if not self._fill(_HEADER.size, deadline):
            return None
        (length,) = _HEADER.unpack_from(self._buffer)
        if not self._fill(_HEADER.size + length, deadline):
            return None
        try:
            with memoryview(self._buffer) as view:
                payload = marshal.loads(view[_HEADER.size : _HEADER.size + length])
        except (EOFError, ValueError, TypeError) as error:
            raise ProtocolError(f"unreadable message: {error}") from error
        del self._buffer[: _HEADER.size + length]
        if not isinstance(payload, dict):
            raise ProtocolError("message is not a dict")
        return payload

    def receive_raw(self, fd: int, size: int) -> None:
        """Copy the ``size`` raw bytes that follow a message into file ``fd``, keeping no
        copy of them in this process: every buffer they passed through is zeroed.

        The zygote takes a task's tests this way, so that a candidate it forks later
        cannot find them in its own (copy-on-write) memory.  They go from the read buffer
        (``_chunk``, of which only the part reads wrote to is zeroed) to ``fd``; never
        into ``_buffer`` (``receive`` reads no further than its message), whose storage a
        shrink or a move frees unzeroed.  Blocking.
        """
        held = min(size, len(self._buffer))
        if held:
            with memoryview(self._buffer) as view:
                _write_all(fd, view[:held])
                _zero(view[:held])
            del self._buffer[:held]
        left = size - held
        while left > 0:
            received = os.readv(self.fd, [memoryview(self._chunk)[: min(left, _RECEIVE_CHUNK)]])
            if not received:
                break
            self._chunk_used = max(self._chunk_used, received)
            with memoryview(self._chunk) as view:
                _write_all(fd, view[:received])
            left -= received
        # Only the part a read wrote to: zeroing all 64 KiB (through a temporary copy,
        # as a bytearray slice assignment from bytes makes) touched ~30 pages of the
        # zygote's heap per task, each a copy-on-write fault after the fork before.
        with memoryview(self._chunk) as view:
            _zero(view[: self._chunk_used])
        self._chunk_used = 0
        if left:
            raise ProtocolError(f"the stream ended {left} bytes before the raw part did")

    def _fill(self, size: int, deadline: float | None) -> bool:
        while len(self._buffer) < size:
            if deadline is not None:
                self._wait(select.POLLIN, deadline)
            # Never past the message: raw bytes that follow it (a task's tests) must not
            # enter ``_buffer``, whose storage is freed unzeroed when it shrinks or moves.
            wanted = min(size - len(self._buffer), _RECEIVE_CHUNK)
            try:
                received = os.readv(self.fd, [memoryview(self._chunk)[:wanted]])
            except BlockingIOError:
                continue
            if not received:
                return False
            self._chunk_used = max(self._chunk_used, received)
            self._buffer += memoryview(self._chunk)[:received]
        return True

    def _wait(self, event: int, deadline: float) -> None:
        if self._poll is None:
            self._poll = select.poll()
            self._poll.register(self.fd, event)
        else:
            self._poll.modify(self.fd, event)
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not self._poll.poll(remaining * 1000):
            raise TimeoutError("no answer from the zygote in time")
