"""Length-prefixed JSON messages, optionally carrying file descriptors, over a unix socket.

Used on both sides of the pool <-> zygote control socket. Standard library only: the
zygote imports it under ``python -I -S``.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

_HEADER = struct.Struct("!I")
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class ProtocolError(Exception):
    """The peer sent something that is not a well-formed message."""


def send_message(sock: socket.socket, payload: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
    """Send one message; ``fds`` travel with its first bytes (SCM_RIGHTS)."""
    body = json.dumps(payload, separators=(",", ":")).encode()
    data = _HEADER.pack(len(body)) + body
    if fds:
        sent = socket.send_fds(sock, [data], list(fds))
        data = data[sent:]
    if data:
        sock.sendall(data)


def _receive_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def receive_message(
    sock: socket.socket, max_fds: int = 0
) -> tuple[dict[str, Any] | None, list[int]]:
    """Receive one message and the descriptors sent with it; ``(None, [])`` at end of stream."""
    fds: list[int] = []
    header = b""
    while len(header) < _HEADER.size:
        if max_fds:
            chunk, new_fds, _flags, _addr = socket.recv_fds(
                sock, _HEADER.size - len(header), max_fds
            )
            fds.extend(new_fds)
        else:
            chunk = sock.recv(_HEADER.size - len(header))
        if not chunk:
            return None, fds
        header += chunk
    (length,) = _HEADER.unpack(header)
    if length > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {length} bytes exceeds {MAX_MESSAGE_BYTES}")
    body = _receive_exactly(sock, length)
    if body is None:
        return None, fds
    payload = json.loads(body)
    if not isinstance(payload, dict):
        raise ProtocolError("message is not a JSON object")
    return payload, fds
