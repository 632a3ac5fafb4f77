"""Calls between a test's judge process and its candidate process, with values as data.

An assert-style test runs in two confined processes (see :mod:`._harness`): the
*candidate* runs the program and serves calls of its top-level names; the *judge* runs
the test's statements, where each of those names is a :class:`CandidateObject` that sends
the call over a pipe pair and gets the result back.  What crosses is plain data only:
``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes`` and ``list``,
``tuple``, ``dict``, ``set``, ``frozenset`` of them, framed with ``marshal``.  The judge
rebuilds every value from those bytes and checks that it holds nothing else
(:func:`checked_plain`), so every comparison, truth test and ``abs()`` of a test runs on
the judge's own objects with the judge's own builtins; no object, method or patch of the
candidate reaches it.

What the candidate returns that is not plain data (an instance of its class, a
generator) stays in the candidate's process; the judge gets a :class:`CandidateObject`
handle on it that forwards calls, attribute reads and writes, and iteration (whose
results cross as data again), and refuses ``==``, ``!=``, ``bool()`` and ``hash()``:
those would let the candidate's code decide the verdict.  A refusal is a
:class:`NotPlainData` error, and fails the test even when the test catches it.

Around a call: arguments that are lists, dicts or sets are sent back after it and
written into the judge's originals (in-place mutation, as in one interpreter); an
exception of the candidate is raised in the judge as the nearest built-in exception
class (``ValueError``, ``KeyError``, ...) with its message; a callable argument (a key
function, a test's helper) stays in the judge and the candidate calls back into it.

Standard library only (the zygote preloads this module; each task child pays for what
it touches).
"""

from __future__ import annotations

import builtins
import marshal
import os
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:  # no ``typing`` in the zygote: every module there is paid per task
    from collections.abc import Sequence
    from typing import Any

_HEADER = struct.Struct("!I")
#: a read of a message (or of its rest, when that is larger): most are a few dozen
#: bytes, and a 64 KiB read buffer costs a fresh candidate heap pages (copy-on-write
#: faults) for nothing
_READ_CHUNK = 4096
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
_MAX_DEPTH = 100
_SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes})
#: the plain types a subclass is brought back to, scalars first (``bool`` before ``int``)
_SCALAR_BASES: tuple[Any, ...] = (bool, int, float, complex, str, bytes)
_CONTAINER_BASES: tuple[Any, ...] = (tuple, list, dict, set, frozenset)
_SEQUENCES = frozenset({list, tuple, set, frozenset})
_MUTABLE = (list, dict, set)
_ERROR_TEXT_LIMIT = 1000


class NotPlainData(BaseException):
    """A value that cannot cross as data, or an operation refused on a candidate object.

    A ``BaseException`` (not an ``Exception``) so that a test's ``except Exception`` does
    not turn it into a pass; the judge fails the test whenever one was raised.
    """


class CandidateGone(BaseException):
    """The candidate's process ended (or sent garbage) while the judge waited for it."""


class Link:
    """One end of the judge <-> candidate pipe pair: length-prefixed ``marshal`` frames."""

    __slots__ = ("_buffer", "_read_fd", "_write_fd")

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._buffer = bytearray()

    def send(self, message: Any) -> None:
        body = marshal.dumps(message)
        view = memoryview(_HEADER.pack(len(body)) + body)
        while view:
            view = view[os.write(self._write_fd, view) :]

    def receive(self) -> Any:
        """The next message; ``EOFError`` at end of stream, ``ValueError`` if unreadable."""
        header = self._read(_HEADER.size)
        (length,) = _HEADER.unpack(header)
        if length > MAX_MESSAGE_BYTES:
            raise ValueError(f"a message of {length} bytes")
        body = self._read(length)
        try:
            return marshal.loads(body)
        except (EOFError, TypeError) as error:
            raise ValueError(f"unreadable message: {error}") from error

    def _read(self, size: int) -> bytes:
        while len(self._buffer) < size:
            chunk = os.read(self._read_fd, max(_READ_CHUNK, size - len(self._buffer)))
            if not chunk:
                raise EOFError("the other process closed the link")
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data


# -- plain data ---------------------------------------------------------------------


def checked_plain(value: Any) -> Any:
    """``value`` if it is plain data (exact built-in types, nested at most 100 deep);
    else ``NotPlainData``.  The judge runs it on everything the candidate sends."""
    stack = [(value, 0)]
    seen: set[int] = set()
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind in _SCALARS:
            continue
        if depth >= _MAX_DEPTH:
            raise NotPlainData("a value nested more than 100 deep")
        if kind in _SEQUENCES or kind is dict:
            if id(item) in seen:
                continue
            seen.add(id(item))
            if kind is dict:
                stack.extend((key, depth + 1) for key in item)
                stack.extend((entry, depth + 1) for entry in item.values())
            else:
                stack.extend((entry, depth + 1) for entry in item)
            continue
        raise NotPlainData(f"a {kind.__name__} is not plain data")
    return value


def to_plain(value: Any, depth: int = 0) -> Any:
    """``value`` as exact built-in types, converting what has an obvious plain form
    (``int``/``str``/... subclasses, named tuples, ``OrderedDict``/``Counter``, numpy
    scalars and arrays via ``tolist()``); ``NotPlainData`` for anything else.  Runs in
    the candidate's process: it only shapes the candidate's own answer."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if depth >= _MAX_DEPTH:
        raise NotPlainData("a value nested more than 100 deep")
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        if all(type(item) in _SCALARS for item in value):
            return value
        return kind(to_plain(item, depth + 1) for item in value)
    if kind is dict:
        return {to_plain(k, depth + 1): to_plain(v, depth + 1) for k, v in value.items()}
    for base in _SCALAR_BASES:
        if isinstance(value, base):
            return base(value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    for base in _CONTAINER_BASES:
        if isinstance(value, base):
            return to_plain(base(value), depth)
    tolist = getattr(type(value), "tolist", None)
    if tolist is not None and hasattr(value, "dtype"):  # numpy arrays and scalars
        return to_plain(tolist(value), depth)
    raise NotPlainData(f"a {kind.__name__} is not plain data")


# -- the candidate's side ------------------------------------------------------------

_LARGE_GLOBAL = 100_000


def _large(value: Any) -> bool:
    """A global too big to copy into the judge for every test (a precomputed table)."""
    return isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)) and len(
        value
    ) > _LARGE_GLOBAL


def _exception_message(error: BaseException) -> tuple[Any, ...]:
    """(built-in base classes by MRO, the class's name, message, args if plain)."""
    bases = [
        klass.__name__
        for klass in type(error).__mro__
        if getattr(builtins, klass.__name__, None) is klass
    ]
    try:
        message = str(error)[:_ERROR_TEXT_LIMIT]
    except BaseException:
        message = ""
    try:
        args = to_plain(tuple(error.args))
    except BaseException:
        args = None
    return ("raise", bases, type(error).__name__, message, args)


class _JudgeCallable:
    """The candidate's stand-in for a callable the test passed: calls go back to the judge."""

    __slots__ = ("_ref", "_server")

    def __init__(self, server: CandidateServer, ref: int) -> None:
        self._server = server
        self._ref = ref

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._server.call_back(self._ref, args, kwargs)


class CandidateServer:
    """Serves the judge's requests in the candidate's process until the judge is done."""

    def __init__(self, link: Link, namespace: dict[str, Any]) -> None:
        self.link = link
        self.namespace = namespace
        self.objects: dict[int, Any] = {}

    def names(self) -> list[tuple[str, str, Any]]:
        """The program's top-level names: ``module`` (the judge imports its own copy),
        ``data`` (a plain value, sent as a copy) or ``object`` (served from here)."""
        entries = []
        for name, value in list(self.namespace.items()):
            if name.startswith("__") and name.endswith("__"):
                continue
            module_name = getattr(value, "__name__", None)
            if type(value).__name__ == "module" and isinstance(module_name, str):
                entries.append((name, "module", module_name))
                continue
            if callable(value) or _large(value):  # functions, classes; big tables stay here
                entries.append((name, "object", type(value).__name__))
                continue
            try:
                entries.append((name, "data", to_plain(value)))
            except NotPlainData:
                entries.append((name, "object", type(value).__name__))
        return entries

    def serve(self) -> None:
        """Answer requests until the judge closes the link."""
        while True:
            try:
                request = self.link.receive()
            except (EOFError, ValueError, OSError):
                return
            self.link.send(self._answer(request))

    def call_back(self, ref: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call the judge's callable ``ref``; serve the judge's nested requests meanwhile."""
        self.link.send(("callback", ref, [self._outgoing(a) for a in args],
                        {k: self._outgoing(v) for k, v in kwargs.items()}))
        while True:
            try:
                message = self.link.receive()
            except (EOFError, ValueError, OSError):
                os._exit(1)
            if message[0] == "return":
                return self._incoming(message[1])
            if message[0] == "raise":
                raise _rebuilt_exception(message)
            self.link.send(self._answer(message))

    def _outgoing(self, value: Any) -> Any:
        if isinstance(value, _JudgeCallable):
            return ("j", value._ref)
        try:
            return ("v", to_plain(value))
        except NotPlainData:
            ref = len(self.objects) + 1
            self.objects[ref] = value
            return ("h", ref, type(value).__name__)

    def _incoming(self, tagged: Any) -> Any:
        if tagged[0] == "v":
            return tagged[1]
        if tagged[0] == "h":
            return self.objects[tagged[1]]
        return _JudgeCallable(self, tagged[1])

    def _answer(self, request: Any) -> Any:
        try:
            op, target = request[0], request[1]
            subject = self.namespace[target] if type(target) is str else self.objects[target]
            if op == "call":
                args = [self._incoming(a) for a in request[2]]
                kwargs = {k: self._incoming(v) for k, v in request[3].items()}
                result = subject(*args, **kwargs)
                changed = [
                    (key, to_plain(value))
                    for key, value in (*enumerate(args), *kwargs.items())
                    if type(value) in _MUTABLE
                ]
                return ("return", self._outgoing(result), changed)
            if op == "getattr":
                return ("return", self._outgoing(getattr(subject, request[2])), [])
            if op == "setattr":
                setattr(subject, request[2], self._incoming(request[3]))
                return ("return", ("v", None), [])
            if op == "iter":
                return ("return", self._outgoing(iter(subject)), [])
            if op == "next":
                return ("return", self._outgoing(next(subject)), [])
            raise ValueError(f"unknown request {op!r}")
        except BaseException as error:
            return _exception_message(error)


# -- the judge's side ----------------------------------------------------------------


def _rebuilt_exception(message: Any) -> BaseException:
    """The judge's exception for the candidate's ``("raise", bases, name, text, args)``:
    an instance of the nearest built-in class (a subclass named as the candidate's when
    that is not built in), made from plain data only."""
    _, bases, name, text, args = message
    base: type[BaseException] = Exception
    for candidate in bases if type(bases) is list else ():
        klass = getattr(builtins, candidate, None) if type(candidate) is str else None
        if isinstance(klass, type) and issubclass(klass, BaseException):
            base = klass
            break
    if type(name) is str and name != base.__name__:
        base = type(name, (base,), {"__module__": "program"})
    try:
        values = tuple(checked_plain(args)) if type(args) is tuple else (str(text),)
        return base(*values)
    except BaseException:
        return base(str(text))


class JudgeClient:
    """The judge's end: sends requests, checks answers, serves callbacks.

    ``violation`` keeps the first :class:`NotPlainData` or :class:`CandidateGone` raised
    during the test, so that a test which catches it still fails.
    """

    def __init__(self, link: Link) -> None:
        self.link = link
        self.violation: BaseException | None = None
        self.callables: dict[int, Any] = {}
        self.gone = False

    def fail(self, error: BaseException) -> BaseException:
        if self.violation is None:
            self.violation = error
        return error

    def program_names(self) -> Any:
        """The candidate's first message: its top-level names, or why the program failed."""
        return self._receive()

    def request(self, message: tuple[Any, ...], originals: Sequence[tuple[Any, Any]] = ()) -> Any:
        if self.gone:
            raise self.fail(CandidateGone("the program's process has ended"))
        try:
            self.link.send(message)
        except OSError as error:
            raise self._gone(f"the program's process has ended ({error})") from None
        while True:
            answer = self._receive()
            kind = answer[0] if type(answer) is tuple and answer else None
            if kind == "return" and len(answer) == 3:
                result = self.value(answer[1])
                if type(answer[2]) is list:
                    _write_back(originals, answer[2])
                return result
            if kind == "raise" and len(answer) == 5:
                raise _rebuilt_exception(answer)
            if kind == "callback" and len(answer) == 4:
                self._serve_callback(answer)
                continue
            raise self._gone("the program's process sent an unreadable answer")

    def value(self, tagged: Any) -> Any:
        """A tagged value from the candidate: plain data, or a handle on its object."""
        if type(tagged) is tuple and len(tagged) == 2 and tagged[0] == "v":
            try:
                return checked_plain(tagged[1])
            except NotPlainData as error:
                raise self.fail(error) from None
        if type(tagged) is tuple and len(tagged) == 3 and tagged[0] == "h":
            ref, kind = tagged[1], tagged[2]
            if type(ref) is int and type(kind) is str:
                return CandidateObject(self, ref, f"{kind[:80]} object")
        raise self._gone("the program's process sent an unreadable value")

    def outgoing(self, value: Any) -> Any:
        """A judge value as sent: a handle stays a handle, a callable stays here."""
        if type(value) is CandidateObject:
            if object.__getattribute__(value, "_client") is not self:
                raise self.fail(NotPlainData("a handle of another program"))
            return ("h", object.__getattribute__(value, "_ref"))
        try:
            return ("v", checked_plain(value))
        except NotPlainData:
            if callable(value):
                ref = len(self.callables) + 1
                self.callables[ref] = value
                return ("j", ref)
            raise self.fail(NotPlainData(
                f"a {type(value).__name__} cannot be passed to the program: only plain "
                "data, the program's own objects and callables")) from None

    def call(self, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        sent = [self.outgoing(arg) for arg in args]
        sent_kwargs = {key: self.outgoing(value) for key, value in kwargs.items()}
        originals = [
            (key, value)
            for key, value in (*enumerate(args), *kwargs.items())
            if type(value) in _MUTABLE
        ]
        return self.request(("call", target, sent, sent_kwargs), originals)

    def _serve_callback(self, message: tuple[Any, ...]) -> None:
        _, ref, args, kwargs = message
        function = self.callables.get(ref) if type(ref) is int else None
        if function is None or type(args) is not list or type(kwargs) is not dict:
            raise self._gone("the program's process sent an unreadable callback")
        try:
            values = [self.value(arg) for arg in args]
            named = {str(key): self.value(value) for key, value in kwargs.items()}
            result = function(*values, **named)
            answer: Any = ("return", self.outgoing(result))
        except (NotPlainData, CandidateGone):
            raise
        except BaseException as error:
            answer = ("raise", [type(error).__name__], type(error).__name__,
                      _describe_text(error), None)
        try:
            self.link.send(answer)
        except OSError:
            raise self._gone("the program's process has ended") from None

    def _receive(self) -> Any:
        try:
            return self.link.receive()
        except (EOFError, OSError):
            raise self._gone("the program's process ended during the test") from None
        except ValueError as error:
            raise self._gone(f"the program's process sent garbage ({error})") from None

    def _gone(self, why: str) -> CandidateGone:
        self.gone = True
        return self.fail(CandidateGone(why))  # type: ignore[return-value]


def _describe_text(error: BaseException) -> str:
    try:
        return str(error)[:_ERROR_TEXT_LIMIT]
    except BaseException:
        return ""


def _write_back(originals: Any, changed: list[Any]) -> None:
    """Write the candidate's view of mutable arguments into the judge's originals."""
    by_key = dict(originals)
    for entry in changed:
        if type(entry) is not tuple or len(entry) != 2:
            continue
        key, value = entry
        original = by_key.get(key)
        if original is not None:
            _sync(original, checked_plain(value), 0)


def _sync(original: Any, value: Any, depth: int) -> None:
    """Make ``original`` equal ``value`` in place, keeping nested containers' identity."""
    if type(original) is list and type(value) is list:
        if depth >= _MAX_DEPTH:
            original[:] = value
            return
        for index, item in enumerate(value[: len(original)]):
            inner = original[index]
            if type(inner) in _MUTABLE and type(inner) is type(item):
                _sync(inner, item, depth + 1)
            elif not (type(inner) is type(item) and inner == item):
                original[index] = item
        if len(value) > len(original):
            original.extend(value[len(original) :])
        else:
            del original[len(value) :]
    elif type(original) is type(value) and type(value) in (dict, set):
        original.clear()
        original.update(value)


class CandidateObject:
    """The judge's handle on an object that lives in the candidate's process.

    Calling it, reading or setting an attribute, and iterating it are sent to the
    candidate (results come back as data or as further handles).  ``==``, ``!=``,
    ``bool()`` and ``hash()`` are refused (:class:`NotPlainData`); ordering, arithmetic
    and ``abs()`` are undefined and raise ``TypeError`` as for any object without them.
    """

    __slots__ = ("_client", "_ref", "_what")

    def __init__(self, client: JudgeClient, ref: Any, what: str) -> None:
        object.__setattr__(self, "_client", client)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_what", what)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        client = object.__getattribute__(self, "_client")
        return client.call(object.__getattribute__(self, "_ref"), args, kwargs)

    def __getattr__(self, name: str) -> Any:
        client = object.__getattribute__(self, "_client")
        return client.request(("getattr", object.__getattribute__(self, "_ref"), name))

    def __setattr__(self, name: str, value: Any) -> None:
        client = object.__getattribute__(self, "_client")
        ref = object.__getattribute__(self, "_ref")
        client.request(("setattr", ref, name, client.outgoing(value)))

    def __iter__(self) -> Any:
        client = object.__getattribute__(self, "_client")
        return client.request(("iter", object.__getattribute__(self, "_ref")))

    def __next__(self) -> Any:
        client = object.__getattribute__(self, "_client")
        return client.request(("next", object.__getattribute__(self, "_ref")))

    def __repr__(self) -> str:
        return f"<the program's {object.__getattribute__(self, '_what')}>"

    def _refuse(self, *args: Any) -> Any:
        client = object.__getattribute__(self, "_client")
        what = object.__getattribute__(self, "_what")
        raise client.fail(NotPlainData(
            f"the program returned a {what}, not plain data: it cannot be compared or "
            "tested for truth (only its methods, attributes and items are read)"))

    __eq__ = __ne__ = __bool__ = __hash__ = _refuse
