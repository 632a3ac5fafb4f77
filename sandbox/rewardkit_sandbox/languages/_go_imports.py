"""Go import declarations of several sources merged into one block, as goimports would.

A Go file must import every package it names and nothing else ("imported and not used"
is a compile error), and a HumanEval-X style program is pieces from different hands: the
prompt's import block (Go/27 imports ``strings`` its solution never uses), the solution
(Go/17 calls ``strings.Split`` that no block imports), the tests' setup. An honest answer
must not fail on that, so the pieces' imports are merged into one block: each once, a
package nothing references dropped, and a standard package referenced but imported by
no piece added from :data:`ADDABLE`.

No Go tool does this offline (``goimports`` is not in Debian's golang-go, ``gofmt`` keeps
unused imports), so this reads Go's lexical grammar itself: comments, string and rune
literals are blanked first, so an ``import`` or ``strings.`` inside them is not code;
the import declarations are those right after the package clause (Go allows them only
there). References are ``name.`` selectors whose ``name`` is not itself after a ``.``.
What it cannot see, resolution of local names: a package name shadowed by a local
variable everywhere it is used keeps its import (Go then reports it unused), and a
missing package is only added when the name is not declared in the file.

Nothing here widens what a program can import: the blank (``_``) and dot (``.``) imports
and imports whose package name is not known from their path are kept as written; an
added import is a standard-library package of the fixed table below.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: packages a reference ``name.`` may add when no piece imports ``name``: the standard
#: packages HumanEval-X / MultiPL-E solutions use unimported, and testify's assert (which
#: the test harness vendors); ``rand`` is math/rand (not crypto/rand), as those datasets mean
ADDABLE = {
    "bufio": "bufio", "bytes": "bytes", "errors": "errors", "fmt": "fmt", "math": "math",
    "regexp": "regexp", "sort": "sort", "strconv": "strconv", "strings": "strings",
    "time": "time", "unicode": "unicode", "utf8": "unicode/utf8", "rand": "math/rand",
    "bits": "math/bits", "big": "math/big", "cmplx": "math/cmplx", "md5": "crypto/md5",
    "hex": "encoding/hex", "heap": "container/heap", "list": "container/list",
    "reflect": "reflect", "testing": "testing",
    "assert": "github.com/stretchr/testify/assert",
}

_TOKEN = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
      |(?P<string>"(?:[^"\\\n]|\\.)*"?|`[^`]*`?|'(?:[^'\\\n]|\\.)*'?)
      |(?P<number>\.?\d(?:[eEpP][+-]|[\w.])*)
      |(?P<ident>[^\W\d]\w*)
      |(?P<space>\s+)
      |(?P<other>.)""",
    re.DOTALL | re.VERBOSE,
)


@dataclass(frozen=True)
class GoImport:
    """One import spec: ``name`` is the alias, ``.``, ``_`` or ``None`` (the package's
    own name)."""

    path: str
    name: str | None = None

    @property
    def binding(self) -> str | None:
        """The name the file refers to the package by, ``None`` for ``.``/``_`` and for a
        path whose package name cannot be told from it (``go-foo``, ``yaml.v2``)."""
        if self.name is not None:
            return None if self.name in (".", "_") else self.name
        last = self.path.rsplit("/", 1)[-1]
        return last if re.fullmatch(r"[^\W\d]\w*", last) else None

    def spec(self) -> str:
        return f'{self.name} "{self.path}"' if self.name else f'"{self.path}"'


def blanked(source: str) -> str:
    """``source`` with comments and string/rune literals replaced by spaces (newlines
    kept), so that positions still match and nothing inside them reads as code."""
    parts = []
    for match in _TOKEN.finditer(source):
        text = match.group()
        if match.lastgroup in ("comment", "string"):
            text = re.sub(r"[^\n]", " ", text)
        parts.append(text)
    return "".join(parts)


def split_imports(source: str) -> tuple[list[GoImport], str]:
    """(the import specs of ``source``, ``source`` without its package clause and import
    declarations). A declaration it cannot read ends the import section there: the rest
    stays in the body for Go to report."""
    tokens = [(m.lastgroup, m.group(), m.start(), m.end()) for m in _TOKEN.finditer(source)
              if m.lastgroup not in ("space", "comment")]
    cut: list[tuple[int, int]] = []
    at = 0
    if len(tokens) > 1 and tokens[0][1] == "package" and tokens[1][0] == "ident":
        cut.append((tokens[0][2], tokens[1][3]))
        at = 2
    imports: list[GoImport] = []
    while at < len(tokens) and tokens[at][1] in ("import", ";"):
        if tokens[at][1] == ";":
            at += 1
            continue
        specs, end = _import_declaration(tokens, at + 1)
        if end is None:
            break
        imports += specs
        cut.append((tokens[at][2], tokens[end - 1][3]))
        at = end
    body, last = [], 0
    for start, end in cut:
        body.append(source[last:start])
        last = end
    body.append(source[last:])
    return imports, "".join(body)


def _import_declaration(
    tokens: Sequence[tuple[str | None, str, int, int]], at: int
) -> tuple[list[GoImport], int | None]:
    """The specs of the declaration after ``import`` and the token index after it."""
    grouped = at < len(tokens) and tokens[at][1] == "("
    specs: list[GoImport] = []
    at += grouped
    while at < len(tokens):
        kind, text = tokens[at][0], tokens[at][1]
        if grouped and text == ")":
            return specs, at + 1
        if grouped and text == ";":
            at += 1
            continue
        name = None
        if kind == "ident" or text == ".":
            name, at = text, at + 1
        if at >= len(tokens) or tokens[at][0] != "string" or tokens[at][1][:1] not in "\"`":
            return specs, None
        literal = tokens[at][1]
        specs.append(GoImport(literal[1:-1], name))
        at += 1
        if not grouped:
            return specs, at
    return specs, None


def referenced(code: str) -> set[str]:
    """Names used as ``name.X`` selectors (not ``x.name.X``) in ``code``."""
    plain = blanked(code)
    return set(re.findall(r"(?<![\w.])(?<!\.\s)([^\W\d]\w*)[ \t]*\.[ \t]*[^\W\d]", plain))


def declares(code: str, name: str) -> bool:
    """Whether ``code`` declares ``name`` itself (a variable, constant, type, function),
    so that ``name.`` there is not a package."""
    plain = blanked(code)
    word = re.escape(name)
    return bool(
        re.search(rf"\b(?:var|const|type|func)\s+{word}\b", plain)
        or re.search(rf"(?<![\w.]){word}\s*(?:,\s*[^\W\d]\w*\s*)*:=(?!\s*{word}\s*\.)", plain)
        or re.search(rf",\s*{word}\s*(?:,\s*[^\W\d]\w*\s*)*:=", plain)
    )


def merged_block(imports: Iterable[GoImport], bodies: Sequence[str]) -> str:
    """One ``import ( ... )`` declaration for a file made of ``bodies``: ``imports`` each
    once (the first of two binding one name wins), less those nothing references, plus
    the :data:`ADDABLE` packages referenced but not imported nor declared."""
    code = "\n".join(bodies)
    used = referenced(code)
    kept: list[GoImport] = []
    bound: set[str] = set()
    for spec in dict.fromkeys(imports):
        name = spec.binding
        if name is None:  # blank, dot or unknown: as written
            kept.append(spec)
            continue
        if name in bound or name not in used:
            continue
        kept.append(spec)
        bound.add(name)
    for name in sorted(used - bound):
        if name in ADDABLE and not declares(code, name):
            kept.append(GoImport(ADDABLE[name]))
    if not kept:
        return ""
    return "import (\n" + "".join(f"    {spec.spec()}\n" for spec in kept) + ")\n"


def merged_file(package: str, sources: Sequence[str]) -> str:
    """``sources`` as one Go file of ``package``: one merged import block, then each
    source without its package clause and imports."""
    imports: list[GoImport] = []
    bodies: list[str] = []
    for source in sources:
        found, body = split_imports(source)
        imports += found
        bodies.append(body)
    block = merged_block(imports, bodies)
    return f"package {package}\n\n{block}\n" + "\n\n".join(bodies) + "\n"
