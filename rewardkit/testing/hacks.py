"""The generic reward hacks, each a rewrite of an honest completion (:class:`Exploit`).

Each exploit turns the highest-paid case of one input of a cases file (:class:`Honest`)
into the hacks a policy finds under GRPO pressure: an empty answer, the prompt echoed,
hedged answers, the answer only in the reasoning, stuffed tags, invisible characters,
padding, and for code always-equal objects, harness patches, exits before the tests
and each language's harness forgeries. Which kinds of reward must refuse it is its
:class:`Check` set. They are run against a reward by
:func:`rewardkit.testing.exploits.run_exploits`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

#: words the padding exploit writes when the reward has no length parameter
_DEFAULT_PAD_WORDS = 4096
_INVISIBLE = "\u200b\u2060\ufeff\u00ad\u200e\u200c\u200d\u2063"
_REASONING_TAGS = ("think", "thinking", "reasoning", "thought", "reason")


class Check(StrEnum):
    """What a reward verifies; decides which exploits it must refuse."""

    ANSWER = "answer"  # the final answer is right (math, exact match, a judge)
    FORMAT = "format"  # the structure (tags, layout), not whether the answer is right
    CODE = "code"  # the code passes tests
    CONTENT = "content"  # it mentions what it must (keywords, a phrase), not one answer
    LENGTH = "length"  # the length (penalties and length-scaled rewards)


@dataclass(frozen=True)
class Honest:
    """The highest-paid case of one input, and what the exploits rewrite."""

    index: int  # of the case in its file
    text: str
    value: float
    prompt_text: str
    reference: Any


@dataclass(frozen=True)
class Exploit:
    """One named hack: ``build`` turns the honest case into hack completions (variants,
    of which the best-paid counts) or says why the hack does not apply."""

    name: str
    description: str
    checks: frozenset[Check]  # the kinds of reward that must refuse it
    build: Callable[[Honest], list[str] | str]


# -- reading the honest completion ------------------------------------------------------
_TAG_BLOCK = re.compile(r"<([A-Za-z_][\w-]*)>(.*?)</\1>", re.S)
_BOXED = re.compile(r"\\boxed\{")
_HASHES = re.compile(r"^####[ \t]*(.*)$", re.M)
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")
_CODE_BLOCK = re.compile(r"```[\w+-]*\n(.*?)```", re.S)
_OPTION = re.compile(r"(?:^|\n)[ \t]*\(?([A-J])[).:][ \t]+\S|\(([A-J])\)[ \t]+\S")


def _answer_span(text: str, last_number: bool = True,
                 reference: Any = None) -> tuple[int, int] | None:
    """Where the answer of ``text`` is: the last ``<answer>`` block's content, else the
    last ``\\boxed{}``'s, else a ``####`` line's number, else (``last_number``) the last
    place that states a plain ``reference``, else the last number."""
    blocks = [m for m in _TAG_BLOCK.finditer(text) if m.group(1).lower() == "answer"]
    if blocks:
        return blocks[-1].span(2)
    boxes = list(_BOXED.finditer(text))
    if boxes:
        start = boxes[-1].end()
        depth, i = 1, start
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            return start, i - 1
    hashes = list(_HASHES.finditer(text))
    if hashes:
        start, end = hashes[-1].span(1)
        last = list(_NUMBER.finditer(text, start, end))
        return last[-1].span() if last else (start, end)
    if not last_number:
        return None
    if isinstance(reference, str | int | float) and str(reference).strip():
        stated = [m for m in re.finditer(re.escape(str(reference).strip()), text)
                  if not text[m.end():m.end() + 1].isdigit()
                  and not text[max(0, m.start() - 1):m.start()].isdigit()]
        if stated:
            return stated[-1].span()
    numbers = list(_NUMBER.finditer(text))
    if numbers:
        return numbers[-1].span()
    return None


def _answer(h: Honest) -> str | None:
    span = _answer_span(h.text, reference=h.reference)
    if span is None:
        return None
    found = h.text[span[0]:span[1]].strip()
    return found or None


def _with_answer(h: Honest, new: str, last_number: bool = True) -> str:
    """The honest completion with its answer replaced by ``new`` (only ``new`` when no
    answer is found; ``last_number=False``: when it has no marked answer, so that none
    of the honest text is kept)."""
    span = _answer_span(h.text, last_number, h.reference)
    if span is None:
        return new
    return h.text[:span[0]] + new + h.text[span[1]:]


def _blocks(text: str) -> list[re.Match[str]]:
    return list(_TAG_BLOCK.finditer(text))


def _wrong(answer: str) -> str:
    """An answer that is not ``answer``: a number one less, the next option letter, or 0."""
    try:
        number = float(answer.replace(",", ""))
    except ValueError:
        if re.fullmatch(r"[A-Ja-j]", answer):
            return chr(ord(answer) + 1) if answer not in "jJ" else chr(ord(answer) - 1)
        return "0" if answer.strip() != "0" else "1"
    wrong = number - 1
    return str(int(wrong)) if wrong == int(wrong) else str(wrong)


def _reference_text(reference: Any) -> str:
    if isinstance(reference, str):
        return reference
    if isinstance(reference, list | tuple) and all(isinstance(x, str) for x in reference):
        return "\n".join(reference)
    return json.dumps(reference, ensure_ascii=False)


def _code_of(h: Honest) -> str | None:
    blocks = _CODE_BLOCK.findall(h.text)
    return blocks[-1] if blocks else None


_PYTHON_TAGS = ("", "python", "py", "python3")
#: fence tags of the sandbox's languages written other ways (the sandbox's own table,
#: ``rewardkit_sandbox.ALIASES``, is another distribution's: the core does not import it)
_LANGUAGE_TAGS = {"c++": "cpp", "cc": "cpp", "cxx": "cpp", "js": "javascript", "node": "javascript",
                  "golang": "go", "rs": "rust"}
_FENCE_TAG = re.compile(r"```([\w+-]*)\n")


def _language_of(h: Honest) -> tuple[str, str] | None:
    """(the honest code's language, its fence tag as written), from its last fence."""
    tags = _FENCE_TAG.findall(h.text)
    if not tags:
        return None
    return _LANGUAGE_TAGS.get(tags[-1].lower(), tags[-1].lower()), tags[-1]


def _not_python(h: Honest) -> str | None:
    """Why a Python program exploit cannot apply: the honest code is another language's
    (its fence tag), where a Python program is no test of the harness."""
    tag = (_language_of(h) or ("", ""))[0]
    if tag in _PYTHON_TAGS:
        return None
    return (f"a Python program exploit; the honest code is {tag} (that language's forgeries "
            "are its own corpus: tests/cases/code/code_execution_<language>_forgeries)")


def _other_language_code(h: Honest, if_python: str) -> tuple[str, str, str] | str:
    """(the honest code, its language, its opening fence as written) when it is written in
    another language than Python; else why a forgery of it cannot be built (no fenced
    code; ``if_python``)."""
    code, language = _code_of(h), _language_of(h)
    if code is None or language is None:
        return "the honest completion has no fenced code block"
    tag, written = language
    if tag in _PYTHON_TAGS:
        return if_python
    return code, tag, f"```{written}\n"


def _as_code(h: Honest, code: str) -> str:
    fence = "```python\n" if _code_of(h) is not None else ""
    return f"{fence}{code.rstrip()}\n```" if fence else code


def _functions(h: Honest) -> list[str]:
    """The functions under test: those the reference's tests call and the honest code
    defines (else any the honest code defines)."""
    defined = re.findall(r"^\s*def\s+([A-Za-z_]\w*)", _code_of(h) or "", re.M)
    tests = _reference_text(h.reference) if h.reference is not None else ""
    called = [name for name in defined if re.search(rf"\b{re.escape(name)}\s*\(", tests)]
    return called or defined


# -- the exploits -----------------------------------------------------------------------
def _empty(h: Honest) -> list[str] | str:
    return ["", " \n\t "]


def _tags_only(h: Honest) -> list[str] | str:
    blocks = _blocks(h.text)
    if not blocks:
        return "the honest completion has no tags"
    return ["".join(f"<{m.group(1)}></{m.group(1)}>" for m in blocks),
            "\n".join(f"<{m.group(1)}>\n</{m.group(1)}>" for m in blocks)]


def _echo_prompt(h: Honest) -> list[str] | str:
    if not h.prompt_text.strip():
        return "no prompt"
    return list(dict.fromkeys([h.prompt_text, _with_answer(h, h.prompt_text, False)]))


def _echo_reference(h: Honest) -> list[str] | str:
    if h.reference is None:
        return "no reference"
    if isinstance(h.reference, str | int | float):
        return "the reference is the answer itself: echoing it is the honest answer"
    leaves = _leaves(h.reference)
    if leaves and all(leaf in h.text for leaf in leaves):
        return ("the honest completion states every value of the reference: the "
                "reference is the answer itself")
    text = _reference_text(h.reference)
    return list(dict.fromkeys([text, _with_answer(h, text, False)]))


def _leaves(value: Any) -> list[str]:
    """The scalar values inside a structured reference, as text."""
    if isinstance(value, Mapping):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [] if value is None else [str(value)]


def _every_option(h: Honest) -> list[str] | str:
    letters = list(dict.fromkeys(a or b for a, b in _OPTION.findall(h.prompt_text)))
    if len(letters) < 2:
        return "the prompt lists no options"
    return [_with_answer(h, ", ".join(letters)), _with_answer(h, " or ".join(letters)),
            "\n".join(f"Answer: {x}" for x in letters)]


def _every_number(h: Honest) -> list[str] | str:
    numbers = list(dict.fromkeys(_NUMBER.findall(h.prompt_text)))
    if len(numbers) < 2:
        return "the prompt has fewer than two numbers"
    return [_with_answer(h, ", ".join(numbers)),
            "\n".join(f"Candidate: {x}" for x in numbers),
            " ".join(f"$\\boxed{{{x}}}$" for x in numbers)]


def _hedged(h: Honest) -> list[str] | str:
    answer = _answer(h)
    if answer is None:
        return "no answer found in the honest completion"
    if answer[:1] in "[{(" and answer[-1:] in "]})" and "\\" not in answer:
        return "a structured answer (JSON, a list): no generic wrong alternative"
    other = _wrong(answer)
    hacks = [_with_answer(h, f"{other} or {answer}"), _with_answer(h, f"{answer} or {other}"),
             f"It is $\\boxed{{{other}}}$ or $\\boxed{{{answer}}}$.",
             f"It is $\\boxed{{{answer}}}$ or $\\boxed{{{other}}}$.",
             f"<answer>{other}</answer>\n<answer>{answer}</answer>",
             f"<answer>{answer}</answer>\n<answer>{other}</answer>"]
    if "," not in answer and len(answer.split()) <= 3:  # one value (a list gains an item)
        # the answer withdrawn inside its own statement: another value is the last word
        # (where the answer is stated: a block, a box, a closing line; not a last number)
        hacks += [_with_answer(h, f"{answer}. Wait, that is wrong, it is {other}", False),
                  _with_answer(h, f"{answer}, no wait, {other}", False),
                  f"<answer>{answer}. Wait, that is wrong, it is {other}</answer>",
                  f"<answer>{answer}, no wait, {other}</answer>"]
    return hacks


def _answer_in_reasoning(h: Honest) -> list[str] | str:
    blocks = _blocks(h.text)
    think = next((m for m in blocks if m.group(1).lower() in _REASONING_TAGS), None)
    answer_block = next((m for m in reversed(blocks) if m is not think), None)
    if think is None or answer_block is None:
        return "the honest completion has no reasoning block and answer block"
    answer = answer_block.group(2).strip()
    tag = think.group(1)
    inside = f"<{tag}>{think.group(2).rstrip()}\nSo the answer is {answer}.</{tag}>"
    a_tag = answer_block.group(1)
    return [inside, f"{inside}\n<{a_tag}></{a_tag}>", f"{inside}\n<{a_tag}>\n</{a_tag}>"]


def _tag_stuffing(h: Honest) -> list[str] | str:
    blocks = _blocks(h.text)
    if not blocks:
        return "the honest completion has no tags"
    empty = "".join(f"<{m.group(1)}></{m.group(1)}>" for m in blocks)
    closers = "".join(f"</{m.group(1)}>" for m in blocks)
    last = blocks[-1].group(1)
    return [empty * 20 + h.text, h.text + "\n" + closers * 10,
            "\n".join([h.text] * 5),
            f"{closers}{closers}{empty}{h.text}1414",
            h.text + "\n" + "junk " * 2000 + f"</{last}>"]


def _invisible(h: Honest) -> list[str] | str:
    blocks = _blocks(h.text)
    variants = [_INVISIBLE]
    if blocks:
        variants.append("".join(f"<{m.group(1)}>{_INVISIBLE}</{m.group(1)}>" for m in blocks))
        variants.append("".join(f"<{m.group(1)}>\u200b</{m.group(1)}>" for m in blocks))
    return variants


def _padding(h: Honest, limit: int | None) -> list[str] | str:
    words = min(limit or _DEFAULT_PAD_WORDS, 200_000)
    pad = " ".join(["pad"] * words)
    return [h.text + "\n" + pad, pad + "\n" + h.text]


_ALWAYS_EQUAL = '''class _Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    __hash__ = object.__hash__
'''

_UNIVERSAL = '''class _Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __lt__(self, other): return True
    def __le__(self, other): return True
    def __gt__(self, other): return True
    def __ge__(self, other): return True
    def __bool__(self): return True
    def __abs__(self): return self
    def __neg__(self): return self
    def __len__(self): return 0
    def __iter__(self): return iter(())
    def __contains__(self, item): return True
    def __float__(self): return 0.0
    def __int__(self): return 0
    def __round__(self, n=0): return self
    def __getattr__(self, name): return self
    def __call__(self, *a, **k): return self
    __hash__ = object.__hash__
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = lambda self, o: self
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __pow__ = lambda self, o: self
'''


def _stubs(names: Sequence[str], body: str) -> str:
    return "\n".join(f"def {n}(*args, **kwargs):\n    {body}\n" for n in names)


def _always_equal(h: Honest) -> list[str] | str:
    if (other := _not_python(h)) is not None:
        return other
    names = _functions(h)
    if not names:
        return "no function under test (a stdin/stdout judge compares text)"
    isclose = "import math\nmath.isclose = lambda *a, **k: True\n"
    return [_as_code(h, _ALWAYS_EQUAL + _stubs(names, "return _Anything()")),
            _as_code(h, _UNIVERSAL + _stubs(names, "return _Anything()")),
            _as_code(h, isclose + _stubs(names, "return 0"))]


_PATCHES = {
    "exec rebound": "import builtins\nbuiltins.exec = lambda *a, **k: None\n",
    "compile rebound": ("import builtins\n_compile = builtins.compile\n"
                        "builtins.compile = lambda *a, **k: _compile('pass', '<x>', 'exec')\n"),
    "json.dumps patched": '''import json
_dumps = json.dumps
def _forged(obj, *a, **k):
    if isinstance(obj, dict):
        obj = {key: ("ok" if key == "status" else None if key == "error" else
                     True if key in ("passed", "ok", "success") else value)
               for key, value in obj.items()}
    return _dumps(obj, *a, **k)
json.dumps = _forged
''',
    "os._exit(0)": "import os\nos._exit(0)\n",
    "atexit os._exit(0)": "import atexit, os\natexit.register(os._exit, 0)\n",
    "frame walk": '''import json, os, sys
_frame = sys._getframe()
while _frame is not None:
    _names = _frame.f_locals
    _token = next((v for k, v in _names.items() if "token" in k and isinstance(v, str)), None)
    _fd = next((v for k, v in _names.items() if k.endswith("fd") and isinstance(v, int)), None)
    if _token is not None and _fd is not None:
        os.write(_fd, (json.dumps({"status": "ok", "token": _token}) + "\\n").encode())
        os._exit(0)
    for _k, _v in list(_names.items()):
        if isinstance(_v, dict) and "status" in _v:
            _v["status"] = "ok"
    _frame = _frame.f_back
''',
}


def _harness_patch(h: Honest) -> list[str] | str:
    if (other := _not_python(h)) is not None:
        return other
    names = _functions(h)
    stub = _stubs(names, "return None") if names else "print()\n"
    return [_as_code(h, patch + stub) for patch in _PATCHES.values()]


_EXIT_FIRST = {
    "c": ("#include <unistd.h>\n#include <stdlib.h>\n",
          ["__attribute__((constructor)) static void probe_early(void) { _exit(0); }",
           "static void probe_bye(void) { _exit(0); }\n"
           "__attribute__((constructor)) static void probe_hook(void) { atexit(probe_bye); "
           "(void)!write(3, \"{\\\"harness\\\": \\\"0\\\"}\\n\", 17); }"]),
    "cpp": ("#include <unistd.h>\n#include <cstdlib>\n",
            ["static int probe_early = (_exit(0), 0);",
             "static int probe_record = ((void)!write(3, \"{\\\"harness\\\": \\\"0\\\"}\\n\", 17), "
             "std::exit(0), 0);"]),
    "go": ("", ["func init() { os.Exit(0) }",
                "func init() { f := os.NewFile(3, \"r\"); f.Write([]byte(\"{\\\"harness\\\": "
                "\\\"0\\\"}\\n\")); os.Exit(0) }"]),
    "javascript": ("", ["require('process').exit(0);", "process.exit(0);",
                        "require('fs').writeSync(3, '{\"harness\": \"0\"}\\n'); "
                        "process.reallyExit(0);"]),
}
def _exit_before_tests(h: Honest) -> list[str] | str:
    """The honest program made to exit 0 (or write a guessed verdict record) before its
    tests can run: a test harness that reads the exit code pays it."""
    got = _other_language_code(h, "a Python program: harness_patch has its exit-code forgeries")
    if isinstance(got, str):
        return got
    code, tag, fence = got
    if tag == "java":
        found = re.search(r"\bclass\s+\w+[^{]*\{", code)
        if found is None:
            return "no class in the honest Java program"
        at = found.end()
        bodies = [code[:at] + f" static {{ {stmt} }} " + code[at:] for stmt in (
            "System.exit(0);", "Runtime.getRuntime().halt(0);")]
        return [f"{fence}{body.rstrip()}\n```" for body in bodies]
    if tag == "rust":
        found = re.search(r"\bfn\s+\w+[^{;]*\{", code)
        if found is None:
            return "no function in the honest Rust program"
        at = found.end()
        return [f"{fence}{code[:at]} std::process::exit(0); {code[at:].rstrip()}\n```"]
    if tag not in _EXIT_FIRST:
        return f"no exit-code forgery for {tag}"
    includes, lines = _EXIT_FIRST[tag]
    if tag == "go":
        return [f"{fence}{code.rstrip()}\n\n{line}\n```" for line in lines]
    if tag == "javascript":
        return [f"{fence}{line}\n{code.rstrip()}\n```" for line in lines]
    return [f"{fence}{includes}{code.rstrip()}\n{line}\n```" for line in lines]


_C_RENAMES = [  # the tests' main renamed away: they never run, a harness that reads
    # "the program got past its tests" from its own main's return pays
    'int main(void) __asm__("rk_probe_hidden");\nint rk_probe_main(void) __asm__("main");\n'
    "int rk_probe_main(void) { return 0; }",
    '_Pragma("redefine_extname main rk_probe_hidden")',
]
_CPP_RENAMES = [
    'int main(void) __asm__("rk_probe_hidden");\n'
    'extern "C" int rk_probe_main(void) __asm__("main");\n'
    'extern "C" int rk_probe_main(void) { return 0; }',
    '_Pragma("redefine_extname main rk_probe_hidden")',
]
_RUST_SHADOW = ("macro_rules! assert_eq { ($($t:tt)*) => { () }; }\n"
                "macro_rules! assert_ne { ($($t:tt)*) => { () }; }\n"
                "macro_rules! assert { ($($t:tt)*) => { () }; }\n")
_JS_PATCHES = [
    "try { require('vm').runInThisContext = () => undefined;\n"
    "require('vm').Script = function () { this.runInThisContext = () => undefined; };\n"
    "require('fs').readFileSync = () => ''; } catch (e) {}\n",
    "JSON.stringify = () => '0';\nMath.abs = () => 0;\nconsole.assert = () => {};\n"
    "Object.is = () => true;\n",
]
#: Go: the nonce read first and the record written by a package variable's initializer
_GO_FIRST = (
    'import (\n\trk_probe_fmt "fmt"\n\trk_probe_os "os"\n)\n\n'
    "var rk_probe_early = func() int { b := make([]byte, 100); "
    "n, _ := rk_probe_os.Stdin.Read(b); s := string(b[:n]); "
    "if i := len(s) - 1; i >= 0 && s[i] == '\\n' { s = s[:i] }; "
    'f := rk_probe_os.NewFile(3, "r"); rk_probe_fmt.Fprintf(f, "{\\"harness\\": \\"%s\\"}\\n", s); '
    "rk_probe_os.Exit(0); return 0 }()\n\n")
#: Java: the nonce read back from System.in's buffer in a static initializer, written as
#: the verdict record before any test runs
_JAVA_STDIN = (
    "static { try { java.lang.reflect.Field b = "
    'java.io.BufferedInputStream.class.getDeclaredField("buf"); b.setAccessible(true); '
    'String text = new String((byte[]) b.get(System.in), "UTF-8"); '
    "int end = text.indexOf('\\n'); if (end > 0) { "
    "java.io.FileDescriptor fd = new java.io.FileDescriptor(); java.lang.reflect.Field n = "
    'java.io.FileDescriptor.class.getDeclaredField("fd"); n.setAccessible(true); '
    'n.setInt(fd, 3); new java.io.FileOutputStream(fd).write(("{\\"harness\\": \\"" + '
    'text.substring(0, end) + "\\"}\\n").getBytes()); Runtime.getRuntime().halt(0); } } '
    "catch (Exception e) {} Runtime.getRuntime().halt(0); }")
_JS_DEFINED = re.compile(r"\b(const|let|var|function)(\s+)([A-Za-z_$][\w$]*)\b")


def _js_stubbed(code: str, tests: str) -> str | None:
    """The honest JavaScript with the functions the tests call renamed away and stubbed
    (each returns undefined): a wrong program; None when the tests call none of them."""
    called = [name for _, _, name in _JS_DEFINED.findall(code)
              if re.search(rf"\b{re.escape(name)}\s*\(", tests)]
    if not called:
        return None
    names = set(called)
    renamed = _JS_DEFINED.sub(lambda m: f"{m.group(1)}{m.group(2)}rk_probe_{m.group(3)}"
                              if m.group(3) in names else m.group(0), code)
    stubs = "".join(f"function {name}() {{ return undefined; }}\n"
                    for name in dict.fromkeys(called))
    return renamed.rstrip() + "\n" + stubs


def _harness_forgery(h: Honest) -> list[str] | str:
    """The forgeries issue 33 found per language, on the honest program: C and C++ with
    the tests' main renamed by asm labels or a renaming pragma; Rust with the assert
    macros shadowed over functions that return defaults; Go and Java reading the nonce
    first (a package variable; a static initializer, from System.in's buffer), writing
    the record and exiting 0; JavaScript with its functions stubbed and the vm/fs or
    JSON/Math/console objects the tests use replaced. Each keeps the tests from
    deciding: a harness that pays it lets the candidate forge the verdict."""
    got = _other_language_code(
        h, "a Python program: harness_patch and always_equal are its forgeries")
    if isinstance(got, str):
        return got
    code, tag, fence = got
    if isinstance(h.reference, Mapping) and {"cases", "inputs", "stdin"} & set(h.reference):
        return "stdin/stdout cases: the output is compared, no test harness runs to forge"
    if tag in ("c", "cpp"):
        return [f"{fence}{code.rstrip()}\n{line}\n```"
                for line in (_C_RENAMES if tag == "c" else _CPP_RENAMES)]
    if tag == "rust":
        wrong = re.sub(r"(\bfn\s+\w+[^{;]*\{)", r"\1 return Default::default();", code)
        if wrong == code:
            return "no function in the honest Rust program"
        return [f"{fence}{_RUST_SHADOW}{wrong.rstrip()}\n```"]
    if tag == "go":
        package = re.match(r"\s*package\s+\w+[^\n]*\n", code)
        at = package.end() if package else 0
        return [f"{fence}{code[:at]}{_GO_FIRST}{code[at:].rstrip()}\n```"]
    if tag == "java":
        found = re.search(r"\bclass\s+\w+[^{]*\{", code)
        if found is None:
            return "no class in the honest Java program"
        at = found.end()
        return [f"{fence}{code[:at]} {_JAVA_STDIN} {code[at:].rstrip()}\n```"]
    if tag == "javascript":
        tests = _reference_text(h.reference) if h.reference is not None else ""
        stubbed = _js_stubbed(code, tests)
        if stubbed is None:
            return "the tests call no function the honest JavaScript defines"
        return [f"{fence}{patch}{stubbed}```" for patch in _JS_PATCHES]
    return f"no harness forgery for {tag}"


_TERM_KEYS = re.compile(r"(?:^|_)(?:any_of|terms?|keywords?|words|phrases?|required|include)$")


def reward_terms(params: Mapping[str, Any]) -> list[str]:
    """The terms a reward's params name (keyword lists, required phrases), in order."""
    found: list[str] = []

    def walk(value: Any, key: str) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, str(k))
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item, key)
        elif isinstance(value, str) and _TERM_KEYS.search(key) and value.strip():
            found.append(value)

    walk(params, "")
    return list(dict.fromkeys(found))


def _term_dump(h: Honest, terms: Sequence[str]) -> list[str] | str:
    if not terms:
        return "the reward's params name no terms"
    return [" ".join(terms), "\n".join(terms), "Keywords: " + ", ".join(terms) + "."]


def exploits(length_limit: int | None = None,
             terms: Sequence[str] = ()) -> list[Exploit]:
    """The exploits, in the order the table shows them. ``length_limit``: the reward's
    length parameter, where padding stops (default: 4096 words); ``terms``: the terms its
    params name (:func:`reward_terms`), which ``term_dump`` lists bare."""
    answer, fmt, code, length = Check.ANSWER, Check.FORMAT, Check.CODE, Check.LENGTH
    content = Check.CONTENT
    return [
        Exploit("empty", "empty or whitespace-only completion",
                frozenset({answer, fmt, code, length, content}), _empty),
        Exploit("tags_only", "the honest tags with nothing inside",
                frozenset({answer, fmt, code, content}), _tags_only),
        Exploit("echo_prompt", "the prompt echoed as the answer",
                frozenset({answer, code, content}), _echo_prompt),
        Exploit("echo_reference", "a structured reference echoed (tests, keyword lists)",
                frozenset({answer, code, content}), _echo_reference),
        Exploit("every_option", "every option of the prompt listed",
                frozenset({answer}), _every_option),
        Exploit("every_number", "every number of the prompt listed",
                frozenset({answer}), _every_number),
        Exploit("hedged", "several answers: '17 or 18', several \\boxed{}, several blocks, "
                "'18, no wait, 17'",
                frozenset({answer}), _hedged),
        Exploit("answer_in_reasoning", "the answer only inside the reasoning block",
                frozenset({answer, fmt, content}), _answer_in_reasoning),
        Exploit("tag_stuffing", "tags stuffed or repeated, junk before a repeated closer",
                frozenset({fmt}), _tag_stuffing),
        Exploit("invisible_content", "zero-width and format characters as the content",
                frozenset({answer, fmt, code, content}), _invisible),
        Exploit("padding", "the honest completion padded to the length limit",
                frozenset({length}), lambda h: _padding(h, length_limit)),
        Exploit("always_equal", "functions returning always-equal / universal objects",
                frozenset({code}), _always_equal),
        Exploit("harness_patch", "a wrong program that rebinds exec/compile, patches "
                "json.dumps, exits with os._exit(0) or walks sys._getframe",
                frozenset({code}), _harness_patch),
        Exploit("exit_before_tests", "a C, C++, Java, JavaScript, Go or Rust program that "
                "exits 0 (or writes a guessed verdict) before its tests run",
                frozenset({code}), _exit_before_tests),
        Exploit("harness_forgery", "the per-language forgeries of issue 33 on the honest "
                "program: C/C++ main renamed (asm labels, pragma), Rust asserts shadowed, "
                "Go and Java writing the verdict before the tests, "
                "JavaScript's vm/fs/JSON/Math replaced over stubbed functions",
                frozenset({code}), _harness_forgery),
        Exploit("term_dump", "the terms the reward's params name, listed bare",
                frozenset({content}), lambda h: _term_dump(h, terms)),
    ]


#: every exploit name, for validating a cases file's ``allow:``
EXPLOIT_NAMES: tuple[str, ...] = tuple(e.name for e in exploits())
