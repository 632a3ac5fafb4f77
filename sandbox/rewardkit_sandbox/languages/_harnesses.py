"""The test harness of each compiled language: the part of a test program that the
candidate cannot rewrite.

Every harness reads a per-run secret (a nonce, the first line of stdin) before any test
runs, runs the tests, and only when they all ended without a failure writes
``{"harness": "<nonce>"}`` on the task's report descriptor (fd 3), which the zygote hands
back. A test program passes only with that record *and* exit code 0, so exiting early
(``exit(0)``, ``atexit``, ``System.exit(0)``, ``process.exit(0)``, ``os.Exit(0)``,
``std::process::exit(0)``) or printing what a passing run prints is a failure. What each
language adds to keep the tests out of the candidate's reach is said where it is built.
"""

from __future__ import annotations

import re
from pathlib import Path

from rewardkit_sandbox.languages import _go_imports as go_imports

#: C and C++: the tests' own ``main`` is linked behind the harness's (``--wrap=main``:
#: the C runtime calls ``__wrap_main``, which calls the tests' ``main`` as
#: ``__real_main``), and every ``assert`` failure calls ``rewardkit_assert_fail``
#: (glibc's ``__assert_fail`` renamed by ``-D``, so a candidate defining either symbol,
#: or a second ``main``, fails to link). A failed assert traps (SIGILL): a candidate that
#: interposes ``abort``/``_exit`` cannot make it return.
#:
#: The nonce is read from a ``.preinit_array`` entry, which runs before every
#: constructor of the program (``.init_array``, C++ static initialisers), with raw
#: system calls (a candidate's own ``read``/``write`` would interpose on libc's), and is
#: kept only masked by a random pad: no candidate code runs before it is consumed from
#: stdin, and the hex text is nowhere in memory until the record is written. The
#: program's binary is execute-only, so it starts non-dumpable and its /proc/self/mem is
#: not its own to open. What stays possible in C and C++ is raw pointer access to the
#: process's own memory (docs/sandbox.md, "Test verdicts").
C_HARNESS = r"""
#ifdef __cplusplus
extern "C" {
#endif
static int rewardkit_failed;
static unsigned char rewardkit_pad[80], rewardkit_masked[80];
static int rewardkit_size = -1;
static long rewardkit_syscall3(long number, long a, long b, long c) {
    long result;
    __asm__ volatile ("syscall" : "=a"(result) : "a"(number), "D"(a), "S"(b), "d"(c)
                      : "rcx", "r11", "memory");
    return result;
}
static void rewardkit_read_nonce(int argc, char **argv, char **envp) {
    (void)argc; (void)argv; (void)envp;
    unsigned char byte;
    int size = 0;
    if (rewardkit_syscall3(318 /* getrandom */, (long)rewardkit_pad, 80, 0) != 80) return;
    while (size < 79 && rewardkit_syscall3(0 /* read */, 0, (long)&byte, 1) == 1
           && byte != '\n') {
        rewardkit_masked[size] = byte ^ rewardkit_pad[size];
        size++;
    }
    byte = 0;
    rewardkit_size = size;
}
__attribute__((section(".preinit_array"), used))
static void (*rewardkit_preinit)(int, char **, char **) = rewardkit_read_nonce;
void rewardkit_assert_fail(const char *assertion, const char *file, unsigned int line,
                           const char *function) {
    static const char text[] = "assertion failed\n";
    rewardkit_failed = 1;
    (void)file; (void)line; (void)function; (void)assertion;
    rewardkit_syscall3(1 /* write */, 2, (long)text, sizeof text - 1);
    __builtin_trap();
}
int __real_main(int argc, char **argv);
int __wrap_main(int argc, char **argv) {
    int code = __real_main(argc, argv);
    if (code != 0 || rewardkit_failed || rewardkit_size <= 0) return code ? code : 1;
    char record[128] = "{\"harness\": \"";
    int at = 13;
    for (int i = 0; i < rewardkit_size; i++) record[at++] = rewardkit_masked[i] ^ rewardkit_pad[i];
    record[at++] = '"'; record[at++] = '}'; record[at++] = '\n';
    return rewardkit_syscall3(1 /* write */, 3, (long)record, at) == at ? 0 : 1;
}
#ifdef __cplusplus
}
#endif
"""

#: the GNU attributes that run code before or after main, or place, alias or rename a
#: symbol (refused in both spellings, ``__attribute__((...))`` and ``[[gnu::...]]``)
_PLACING = ("constructor|destructor|section|alias|ifunc|weakref|weak|init_priority|symver|"
            "externally_visible|retain")
_PLACING_WHY = ("an attribute that runs code before or after the tests or places or renames "
                "a symbol")

#: What a C or C++ candidate may not write, checked on its own code after the
#: preprocessor (a macro cannot hide it): each renames, replaces or runs before the
#: tests' entry point, asserts or comparisons, or reaches the harness.
C_REFUSED = [
    [r"\b(?:asm|__asm|__asm__)\b", "inline assembly or an asm label (it can rename the "
     "tests' main or a symbol they call)"],
    [r"#\s*pragma\s+(?:redefine_extname|weak|GCC\s+visibility)\b",
     "a pragma that renames or weakens symbols"],
    [r"(?:__attribute__|__attribute)\s*\(\((?:(?!\)\))[^;{])*?\b_*(?:" + _PLACING + r")_*\b",
     _PLACING_WHY],
    [r"\[\[[^\]]*\b(?:gnu|__gnu__)::_*(?:" + _PLACING + r")_*\b", _PLACING_WHY],
    [r"\boperator\s*(?:==|!=|<=>)", "an equality operator of its own (the tests' "
     "comparisons must decide)"],
    [r"\bnamespace\s+(?:std|__gnu_cxx|boost)\b\s*(?:\{|::)", "code inside namespace std"],
    [r"\b(?:rewardkit\w*|__wrap_\w+|__real_\w+|__libc_\w+|_dl_\w+|_start|_init|_fini"
     r"|__preinit_array\w*|__init_array\w*|__fini_array\w*)\b",
     "a name of the harness or of the C runtime's start-up"],
]

#: C++: the functions the tests call must return plain standard values (numbers, text,
#: containers of them), never a type of the candidate's whose comparison it controls. No
#: header of its own: a container is known when the candidate's headers declared it
#: (libstdc++'s include guards), so the check adds nothing to parse
CPP_PLAIN = r"""
#include <type_traits>
#include <cstddef>
namespace rewardkit_plain {
template <class T> struct plain : std::bool_constant<std::is_arithmetic_v<T> ||
    std::is_void_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::nullptr_t>> {};
template <class T> struct plain<T *> : std::bool_constant<std::is_arithmetic_v<T>> {};
#ifdef _BASIC_STRING_H
template <class C, class Tr, class A> struct plain<std::basic_string<C, Tr, A>>
    : std::true_type {};
#endif
#ifdef _STL_VECTOR_H
template <class T, class A> struct plain<std::vector<T, A>> : plain<T> {};
#endif
#ifdef _STL_LIST_H
template <class T, class A> struct plain<std::list<T, A>> : plain<T> {};
#endif
#ifdef _STL_DEQUE_H
template <class T, class A> struct plain<std::deque<T, A>> : plain<T> {};
#endif
#ifdef _GLIBCXX_ARRAY
template <class T, std::size_t N> struct plain<std::array<T, N>> : plain<T> {};
#endif
#ifdef _STL_SET_H
template <class T, class C, class A> struct plain<std::set<T, C, A>> : plain<T> {};
#endif
#ifdef _UNORDERED_SET_H
template <class T, class H, class E, class A> struct plain<std::unordered_set<T, H, E, A>>
    : plain<T> {};
#endif
#ifdef _STL_MAP_H
template <class K, class V, class C, class A> struct plain<std::map<K, V, C, A>>
    : std::bool_constant<plain<K>::value && plain<V>::value> {};
#endif
#ifdef _UNORDERED_MAP_H
template <class K, class V, class H, class E, class A>
struct plain<std::unordered_map<K, V, H, E, A>>
    : std::bool_constant<plain<K>::value && plain<V>::value> {};
#endif
#ifdef _STL_PAIR_H
template <class A, class B> struct plain<std::pair<A, B>>
    : std::bool_constant<plain<A>::value && plain<B>::value> {};
#endif
#ifdef _GLIBCXX_TUPLE
template <class... T> struct plain<std::tuple<T...>>
    : std::bool_constant<(plain<T>::value && ...)> {};
#endif
#ifdef _GLIBCXX_OPTIONAL
template <class T> struct plain<std::optional<T>> : plain<T> {};
#endif
#ifdef BOOST_ANY_INCLUDED
template <> struct plain<boost::any> : std::true_type {};
#endif
template <class R, class... A> constexpr bool returns_plain(R (*)(A...)) {
    return plain<std::remove_cv_t<std::remove_reference_t<R> > >::value;
}
}  // namespace rewardkit_plain
"""

_C_IDENTIFIER_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_C_KEYWORDS = frozenset({
    "if", "while", "for", "switch", "return", "sizeof", "alignof", "decltype", "catch",
    "typeid", "static_assert", "new", "delete", "throw", "case", "do", "else", "defined",
    "operator"})


def cpp_checked_functions(candidate: str, tests: str) -> list[str]:
    """The functions the tests call that the candidate defines once (a definition
    ``name(...) {`` outside any braces), whose return type is checked to be plain."""
    depth, top = 0, []
    for index, char in enumerate(candidate):
        if char == "{":
            if depth == 0:
                top.append(index)
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
    defined: dict[str, int] = {}
    for brace in top:
        head = candidate[max(0, brace - 400):brace]
        match = re.search(r"\b([A-Za-z_]\w*)\s*\([^(){};]*(?:\([^(){};]*\)[^(){};]*)*\)"
                          r"\s*(?:const\s*)?(?:noexcept\s*)?(?:->[^{;]*)?$", head)
        if match and match.group(1) not in _C_KEYWORDS:
            defined[match.group(1)] = defined.get(match.group(1), 0) + 1
    called = {match.group(1) for match in _C_IDENTIFIER_CALL.finditer(tests)}
    return sorted(name for name, count in defined.items() if count == 1 and name in called)


def cpp_plain_checks(names: list[str]) -> str:
    """``static_assert`` lines: each function returns plain standard values."""
    return "".join(
        f'static_assert(rewardkit_plain::returns_plain(&::{name}), "{name} must return '
        'plain standard values (numbers, strings, containers of them), not a type whose '
        'comparison the candidate defines");\n' for name in names)


#: Java: the candidate's classes and the tests' ``Main`` are separate compilation units;
#: ``Main`` imports every library type it names one by one (a single-type import wins
#: over a same-named class the candidate declares in the shared package), and this
#: class, which a candidate cannot redeclare, calls ``Main.main`` and then halts. It
#: reads the nonce unbuffered from fd 0 before any candidate class is loaded (so no
#: ``System.in`` buffer ever holds it) and keeps it masked by a random pad; it writes the
#: record on fd 3 itself (a task's /proc/self/fd is not its own to open). Every value a
#: test gets from the candidate's ``Solution`` passes through ``RewardkitPlain.copy``
#: first: JDK values are rebuilt as JDK values (a list as a JDK list, ...), so the
#: comparison that decides is the JDK's, never a candidate class's ``equals``.
JAVA_HARNESS = """
public final class RewardkitHarness {
    public static void main(String[] args) throws Exception {
        java.io.FileInputStream in = new java.io.FileInputStream(java.io.FileDescriptor.in);
        byte[] pad = new byte[80];
        try (java.io.FileInputStream random = new java.io.FileInputStream("/dev/urandom")) {
            if (random.read(pad) != pad.length) throw new java.io.IOException("short read");
        }
        byte[] masked = new byte[80];
        int size = 0;
        for (int c = in.read(); size < 80 && c != -1 && c != '\\n'; c = in.read()) {
            masked[size] = (byte) (c ^ pad[size]);
            size++;
        }
        Main.main(args);
        StringBuilder nonce = new StringBuilder();
        for (int i = 0; i < size; i++) nonce.append((char) ((masked[i] ^ pad[i]) & 0xff));
        java.io.FileDescriptor fd = new java.io.FileDescriptor();
        java.lang.reflect.Field number = java.io.FileDescriptor.class.getDeclaredField("fd");
        number.setAccessible(true);
        number.setInt(fd, 3);
        try (java.io.FileOutputStream report = new java.io.FileOutputStream(fd)) {
            report.write(("{\\"harness\\": \\"" + nonce + "\\"}\\n").getBytes("UTF-8"));
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}

final class RewardkitPlain {
    private RewardkitPlain() {}

    @SuppressWarnings("unchecked")
    static <T> T copy(T value) {
        return (T) plain(value, 0);
    }

    private static boolean jdk(Class<?> type) {
        return type.getClassLoader() == null;
    }

    private static Object fresh(Class<?> type, Class<?> kind, Object fallback) {
        for (Class<?> at = type; at != null; at = at.getSuperclass()) {
            if (jdk(at) && kind.isAssignableFrom(at)
                    && !java.lang.reflect.Modifier.isAbstract(at.getModifiers())) {
                try {
                    return at.getConstructor().newInstance();
                } catch (ReflectiveOperationException | RuntimeException error) {
                    break;
                }
            }
        }
        return fallback;
    }

    @SuppressWarnings("unchecked")
    private static Object plain(Object value, int depth) {
        if (depth > 64) throw new AssertionError("not plain data: nested too deeply");
        if (value == null) return null;
        Class<?> type = value.getClass();
        if (type == String.class || type == Integer.class || type == Long.class
                || type == Double.class || type == Float.class || type == Boolean.class
                || type == Character.class || type == Short.class || type == Byte.class
                || type == java.math.BigInteger.class || type == java.math.BigDecimal.class) {
            return value;
        }
        if (type.isArray()) {
            int length = java.lang.reflect.Array.getLength(value);
            Class<?> component = type.getComponentType();
            Object out = java.lang.reflect.Array.newInstance(component, length);
            for (int i = 0; i < length; i++) {
                Object item = java.lang.reflect.Array.get(value, i);
                java.lang.reflect.Array.set(
                    out, i, component.isPrimitive() ? item : plain(item, depth + 1));
            }
            return out;
        }
        if (value instanceof java.util.Optional) {
            java.util.Optional<Object> optional = (java.util.Optional<Object>) value;
            return optional.isPresent()
                ? java.util.Optional.ofNullable(plain(optional.get(), depth + 1))
                : java.util.Optional.empty();
        }
        if (value instanceof java.util.List) {
            java.util.List<Object> out = (java.util.List<Object>) fresh(
                type, java.util.List.class, new java.util.ArrayList<Object>());
            for (Object item : (java.util.List<Object>) value) out.add(plain(item, depth + 1));
            return out;
        }
        if (value instanceof java.util.Set) {
            java.util.Set<Object> out = (java.util.Set<Object>) fresh(
                type, java.util.Set.class, new java.util.LinkedHashSet<Object>());
            for (Object item : (java.util.Set<Object>) value) out.add(plain(item, depth + 1));
            return out;
        }
        if (value instanceof java.util.Map) {
            java.util.Map<Object, Object> out = (java.util.Map<Object, Object>) fresh(
                type, java.util.Map.class, new java.util.LinkedHashMap<Object, Object>());
            for (java.util.Map.Entry<Object, Object> entry
                    : ((java.util.Map<Object, Object>) value).entrySet()) {
                out.put(plain(entry.getKey(), depth + 1), plain(entry.getValue(), depth + 1));
            }
            return out;
        }
        if (jdk(type) && (type.isEnum() || value instanceof Number)) return value;
        throw new AssertionError("not plain data: a " + type.getName()
                                 + " (the tests compare JDK values only)");
    }
}
"""


def _java_call_end(text: str, start: int) -> int | None:
    """The index after the ``)`` closing the call whose ``(`` is at ``start``."""
    depth, index, quote = 0, start, ""
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return None


def java_plain_calls(tests: str) -> str:
    """The tests with every call on a ``Solution`` (``s.f(...)``, ``new Solution().f(...)``,
    ``Solution.f(...)``) wrapped in ``RewardkitPlain.copy(...)``."""
    names = set(re.findall(r"\b([A-Za-z_]\w*)\s*=\s*new\s+Solution\s*\(\s*\)", tests))
    receivers = [re.escape(name) for name in sorted(names)] + [
        r"new\s+Solution\s*\(\s*\)", r"Solution"]
    call = re.compile(rf"(?<![\w.])(?:{'|'.join(receivers)})\s*\.\s*[A-Za-z_]\w*\s*\(")
    spans = []
    for match in call.finditer(tests):
        end = _java_call_end(tests, match.end() - 1)
        if end is not None:
            spans.append((match.start(), end))
    done: list[tuple[int, int]] = []
    opening = "RewardkitPlain.copy("
    for start, end in sorted(spans, key=lambda span: -span[0]):  # inner (later) calls first
        inner = sum(1 for a, b in done if a > start and b <= end)
        stop = end + inner * (len(opening) + 1)
        tests = f"{tests[:start]}{opening}{tests[start:stop]}){tests[stop:]}"
        done.append((start, end))
    return tests


#: the library types HumanEval-X style Java tests name, by package
_JAVA_TYPES = {
    package: names.split()
    for package, names in {
        "java.lang": "AssertionError Boolean Byte Character Double Float Integer Long Math "
        "Object Short String StringBuilder System",
        "java.util": "ArrayList Arrays Collections Comparator HashMap HashSet Iterator "
        "LinkedList List Map Objects Optional Random Set TreeMap TreeSet",
        "java.util.stream": "Collectors IntStream Stream",
        "java.security": "MessageDigest NoSuchAlgorithmException",
        "java.math": "BigDecimal BigInteger",
    }.items()
}


def java_tests_source(tests: str) -> str:
    """``Main.java``: the tests with a single-type import of each library type they name."""
    named = set(re.findall(r"\b[A-Z]\w*\b", tests))
    imports = [
        f"import {package}.{name};"
        for package, names in _JAVA_TYPES.items()
        for name in names
        if name in named
    ]
    return "\n".join([*imports, "import java.util.*;", "import java.util.stream.*;", "",
                      java_plain_calls(tests)])


def java_public_class(source: str) -> str | None:
    """The public class of a stdin/stdout program (its file must carry that name)."""
    match = re.search(r"\bpublic\s+(?:final\s+)?class\s+([A-Za-z_]\w*)", source)
    return match.group(1) if match else None


#: JavaScript: three realms. The harness's own (Node's main context) reads the nonce,
#: keeps it masked, reads the tests and deletes their file; the candidate runs in a fresh
#: context with its own builtins (``console``, ``require`` and ``module`` are closures of
#: that context: no object of the harness's realm, and ``require`` offers only the
#: builtins of :data:`JS_CANDIDATE_BUILTINS` and installed packages); the tests run in a
#: third, pristine context that the candidate never holds. A test's call of a candidate
#: function crosses as data: the arguments and the result are copied (own data properties
#: of plain objects and arrays, numbers, strings, booleans, null, undefined, BigInt; no
#: getter, proxy, ``toJSON`` or prototype method runs), so replacing ``JSON.stringify``,
#: ``Math.abs``, ``vm`` or ``fs``, or returning an object whose methods lie, changes only
#: the candidate's realm. Code generation from strings is off in both contexts and in
#: the process (``--disallow-code-generation-from-strings``).
JS_HARNESS = (Path(__file__).parent / "_js_harness.js").read_text()
JS_CANDIDATE_BUILTINS = ("assert", "buffer", "crypto", "events", "os", "path", "querystring",
                         "string_decoder", "url", "util")


#: ``#[test]``, then comments or other attributes, then ``fn name``
_RUST_TEST = re.compile(r"#\[test\]((?:\s*//[^\n]*|\s*#\[[^\]]*\])*)\s*fn\s+(\w+)")
_GO_TEST = re.compile(r"^func\s+(Test\w*)\s*\(\s*\w+\s+\*testing\.T\s*\)", re.MULTILINE)


def count_tests(language: str, tests: str) -> int | None:
    """How many test functions a Rust or Go test program declares (None: the language
    has no test functions): a program with none must not pass by running nothing."""
    if language == "rust":
        return len(_RUST_TEST.findall(re.sub(r"/\*.*?\*/", "", tests, flags=re.DOTALL)))
    if language == "go":
        return len(_GO_TEST.findall(go_imports.blanked(tests)))
    return None


#: What a candidate may not write, per language (checked on its text, comments and
#: strings included: a refusal there costs an honest answer nothing on HumanEval-X): each
#: reaches the harness, its secret or the tests' text, or runs code before the tests.
REFUSED: dict[str, list[list[str]]] = {
    "rust": [
        [r"\bunsafe\b", "unsafe code (raw memory: the harness's secret)"],
        [r"#!?\[\s*(?:link_section|no_mangle|export_name|link_name|link|used)\b",
         "an attribute that places, exports or links a symbol (code before main)"],
        [r"\bextern\s*(?:\"[^\"]*\"\s*)?\{|\bextern\s+\"[^\"]*\"\s+fn\b", "foreign functions"],
        [r"\b(?:global_asm|asm|naked_asm|include_str|include_bytes|include)\s*!",
         "assembly or the program's own source text (the tests) included"],
        [r"#!\s*\[", "a crate attribute (no_main, no_std, no_implicit_prelude, features)"],
        [r"\brewardkit\w*", "a name of the harness"],
    ],
    "go": [
        [r"\"unsafe\"|\"runtime/debug\"|\"plugin\"|\"embed\"",
         "unsafe memory, heap dumps, plugins or embedded files (the tests' source)"],
        [r"//\s*go:(?:linkname|embed|cgo_\w+)", "a compiler directive that reaches other "
         "packages' names or embeds files"],
        [r"\brewardkit\w*", "a name of the harness"],
    ],
    "java": [
        [r"(?i)\brewardkit\w*", "a name of the harness"],
        [r"\bsun\.misc\b|\bjdk\.internal\b|\bUnsafe\b", "the JDK's unsafe memory access"],
    ],
    "javascript": [
        [r"\brewardkit\w*", "a name of the harness"],
    ],
}


def refused(language: str, candidate: str) -> str | None:
    """Why the candidate program is refused before it is compiled, or None."""
    for pattern, why in REFUSED.get(language, ()):
        found = re.search(pattern, candidate)
        if found:
            return f"refused: {why} ({found.group(0)[:60]!r})"
    return None


_RUST_CORE_MACROS = re.compile(
    r"(?<![\w:])(assert|assert_eq|assert_ne|debug_assert|debug_assert_eq|debug_assert_ne|"
    r"panic|unreachable|matches|todo|unimplemented)\s*!")
_RUST_STD_MACROS = re.compile(r"(?<![\w:])(vec|format|print|println|eprint|eprintln)\s*!")
_RUST_FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?fn\s+([A-Za-z_]\w*)\s*(<)?\s*\(",
                      re.MULTILINE)

#: the types whose comparisons decide a test: the standard library's (a sealed trait: the
#: candidate cannot name the module, nor implement its private supertrait)
_RUST_PLAIN = """
#[allow(dead_code, unused_imports)]
mod rewardkit_plain {
    mod sealed { pub trait Sealed {} }
    pub trait Plain: sealed::Sealed {}
    macro_rules! plain {
        ($($t:ty),*) => { $(impl sealed::Sealed for $t {} impl Plain for $t {})* };
    }
    plain!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64, bool,
           char, String, str, ());
    impl<T: Plain + ?Sized> sealed::Sealed for &T {}
    impl<T: Plain + ?Sized> Plain for &T {}
    impl<T: Plain + ?Sized> sealed::Sealed for Box<T> {}
    impl<T: Plain + ?Sized> Plain for Box<T> {}
    impl sealed::Sealed for Box<dyn ::std::any::Any> {}
    impl Plain for Box<dyn ::std::any::Any> {}
    impl<T: Plain> sealed::Sealed for [T] {}
    impl<T: Plain> Plain for [T] {}
    impl<T: Plain, const N: usize> sealed::Sealed for [T; N] {}
    impl<T: Plain, const N: usize> Plain for [T; N] {}
    impl<T: Plain> sealed::Sealed for Vec<T> {}
    impl<T: Plain> Plain for Vec<T> {}
    impl<T: Plain> sealed::Sealed for ::std::collections::VecDeque<T> {}
    impl<T: Plain> Plain for ::std::collections::VecDeque<T> {}
    impl<T: Plain> sealed::Sealed for Option<T> {}
    impl<T: Plain> Plain for Option<T> {}
    impl<T: Plain, E: Plain> sealed::Sealed for Result<T, E> {}
    impl<T: Plain, E: Plain> Plain for Result<T, E> {}
    impl<K: Plain, V: Plain, S> sealed::Sealed for ::std::collections::HashMap<K, V, S> {}
    impl<K: Plain, V: Plain, S> Plain for ::std::collections::HashMap<K, V, S> {}
    impl<K: Plain, V: Plain> sealed::Sealed for ::std::collections::BTreeMap<K, V> {}
    impl<K: Plain, V: Plain> Plain for ::std::collections::BTreeMap<K, V> {}
    impl<T: Plain, S> sealed::Sealed for ::std::collections::HashSet<T, S> {}
    impl<T: Plain, S> Plain for ::std::collections::HashSet<T, S> {}
    impl<T: Plain> sealed::Sealed for ::std::collections::BTreeSet<T> {}
    impl<T: Plain> Plain for ::std::collections::BTreeSet<T> {}
    impl<A: Plain, B: Plain> sealed::Sealed for (A, B) {}
    impl<A: Plain, B: Plain> Plain for (A, B) {}
    impl<A: Plain, B: Plain, C: Plain> sealed::Sealed for (A, B, C) {}
    impl<A: Plain, B: Plain, C: Plain> Plain for (A, B, C) {}
    impl<A: Plain, B: Plain, C: Plain, D: Plain> sealed::Sealed for (A, B, C, D) {}
    impl<A: Plain, B: Plain, C: Plain, D: Plain> Plain for (A, B, C, D) {}
    pub fn returns0<R: Plain>(_: fn() -> R) {}
    pub fn returns1<A, R: Plain>(_: fn(A) -> R) {}
    pub fn returns2<A, B, R: Plain>(_: fn(A, B) -> R) {}
    pub fn returns3<A, B, C, R: Plain>(_: fn(A, B, C) -> R) {}
    pub fn returns4<A, B, C, D, R: Plain>(_: fn(A, B, C, D) -> R) {}
    pub fn returns5<A, B, C, D, E, R: Plain>(_: fn(A, B, C, D, E) -> R) {}
}
"""


def _rust_arity(candidate: str, start: int) -> int | None:
    """How many parameters the ``fn`` whose ``(`` is at ``start`` takes."""
    depth, count, seen = 0, 0, False
    for char in candidate[start:start + 2000]:
        if char in "([<{":
            depth += 1
            if depth == 1:
                continue
        elif char in ")]>}":
            depth -= 1
            if depth == 0:
                return count + (1 if seen else 0)
        elif char == "," and depth == 1:
            count += 1
            seen = False
            continue
        if depth >= 1 and not char.isspace():
            seen = True
    return None


def rust_plain_checks(candidate: str, tests: str) -> str:
    """Calls checking that each function the tests call, defined once at the candidate's
    top level and not generic, returns standard values (:data:`_RUST_PLAIN`)."""
    found: dict[str, list[int | None]] = {}
    for match in _RUST_FN.finditer(candidate):
        if match.group(2):  # generic: no single fn pointer type
            found.setdefault(match.group(1), []).extend([None, None])
            continue
        found.setdefault(match.group(1), []).append(_rust_arity(candidate, match.end() - 1))
    lines = []
    for name, arities in sorted(found.items()):
        if len(arities) != 1 or arities[0] is None or arities[0] > 5:
            continue
        if re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", tests):
            lines.append(f"    crate::rewardkit_plain::returns{arities[0]}({name});\n")
    return "".join(lines)


def rust_tests_source(tests: str, candidate: str = "") -> str:
    """The tests as plain functions called by a harness ``main`` (no libtest, whose
    exit code and summary a candidate's ``process::exit``/``println!`` could fake).

    ``#[cfg(test)]`` is dropped and each ``#[test] fn name`` becomes ``pub fn name``; the
    candidate cannot declare a second ``main`` or a second ``mod`` of the same name. The
    tests' macros are the standard library's by path (``::core::assert_eq!``: a
    candidate's ``macro_rules! assert_eq`` cannot shadow them), their module sees the
    standard prelude explicitly (a candidate's ``struct String`` is then ambiguous, not
    theirs), and the functions they call must return standard types.
    """
    body = re.sub(r"#\[cfg\(test\)\]", "", tests)
    body = _RUST_CORE_MACROS.sub(r"::core::\1!", body)
    body = _RUST_STD_MACROS.sub(r"::std::\1!", body)
    body = re.sub(r"(\buse\s+super::\*\s*;)", r"\1 use ::std::prelude::rust_2021::*;", body)
    names = [match.group(2) for match in _RUST_TEST.finditer(body)]
    body = _RUST_TEST.sub(lambda match: f"{match.group(1)}\npub fn {match.group(2)}", body)
    module = re.search(r"\bmod\s+(\w+)\s*\{", body)
    prefix = f"{module.group(1)}::" if module else ""
    calls = "".join(f"    {prefix}{name}();\n" for name in names)
    checks = rust_plain_checks(candidate, tests) if candidate else ""
    return (
        f"{body}\n{_RUST_PLAIN}\n#[allow(unused_imports)]\nfn main() {{\n"
        "    use std::io::{Read, Write};\n    use std::os::unix::io::FromRawFd;\n"
        f"{checks}"
        "    let mut nonce = Vec::new();\n    let mut byte = [0u8; 1];\n"
        "    let mut stdin = unsafe { std::fs::File::from_raw_fd(0) };\n"
        "    while stdin.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\\n' {\n"
        "        nonce.push(byte[0]);\n    }\n"
        f"{calls}"
        "    let mut report = unsafe { std::fs::File::from_raw_fd(3) };\n"
        "    let nonce = String::from_utf8_lossy(&nonce);\n"
        "    if nonce.is_empty() { std::process::exit(1); }\n"
        "    let _ = write!(report, \"{{\\\"harness\\\": \\\"{}\\\"}}\\n\", nonce);\n"
        "}\n"
    )


#: Go: the tests' ``TestX`` functions are renamed (``rewardkitTestX``: ``go test`` no
#: longer finds them) and run as subtests of the harness's one test, which counts, in a
#: variable of its own, each that returned: the record is written only when that count is
#: the number of tests and every subtest passed. So a candidate's ``init`` changing the
#: test runner's flags (``-test.run=^$``, ``-test.list``, ``-test.count=0``, a subtest
#: filter), which makes ``go test`` run nothing and exit 0, does not pass. ``TestMain`` is
#: the harness's (a candidate defining another fails to compile). Its imports are aliased,
#: so a candidate's own top-level ``os`` or ``atomic`` does not clash with them.
_GO_HARNESS = """package main

import (
\trewardkitRand "crypto/rand"
\trewardkitFmt "fmt"
\trewardkitOs "os"
\trewardkitAtomic "sync/atomic"
\trewardkitTesting "testing"
)

func TestMain(m *rewardkitTesting.M) { rewardkitOs.Exit(m.Run()) }

// read before any of the candidate's code: the first variable initialised (its file
// sorts first, and it depends on nothing of the candidate's), kept masked by a random pad
var rewardkitPad, rewardkitMasked = rewardkitReadNonce()

func rewardkitReadNonce() ([]byte, []byte) {
	pad := make([]byte, 80)
	if _, err := rewardkitRand.Read(pad); err != nil {
		return nil, nil
	}
	masked := make([]byte, 0, 80)
	buf := make([]byte, 1)
	for len(masked) < 80 {
		n, err := rewardkitOs.Stdin.Read(buf)
		if n != 1 || err != nil || buf[0] == '\\n' {
			break
		}
		masked = append(masked, buf[0]^pad[len(masked)])
	}
	buf[0] = 0
	return pad, masked
}

func TestRewardkit(t *rewardkitTesting.T) {
\ttests := []struct {
\t\tname string
\t\trun  func(*rewardkitTesting.T)
\t}{
@TESTS@\t}
\tvar ran int64
\tpassed := t.Run("tests", func(t *rewardkitTesting.T) {
\t\tfor _, test := range tests {
\t\t\trun := test.run
\t\t\tt.Run(test.name, func(t *rewardkitTesting.T) { run(t); rewardkitAtomic.AddInt64(&ran, 1) })
\t\t}
\t})
\tall := rewardkitAtomic.LoadInt64(&ran) == int64(len(tests))
\tif passed && all && !t.Failed() && len(rewardkitMasked) > 0 {
\t\tnonce := make([]byte, len(rewardkitMasked))
\t\tfor i := range nonce {
\t\t\tnonce[i] = rewardkitMasked[i] ^ rewardkitPad[i]
\t\t}
\t\trewardkitFmt.Fprintf(rewardkitOs.NewFile(3, "report"), "{\\"harness\\": \\"%s\\"}\\n", nonce)
\t}
}
"""

#: a minimal ``github.com/stretchr/testify/assert`` (the part test suites use: New,
#: Equal, NotEqual, True, False, Nil, NotNil, Len), vendored into each Go build so tests
#: in testify's shape compile offline
GO_ASSERT_SHIM = """package assert

import (
\t"bytes"
\t"reflect"
)

type TestingT interface {
\tErrorf(format string, args ...interface{})
}

type Assertions struct{ t TestingT }

func New(t TestingT) *Assertions { return &Assertions{t} }

func ObjectsAreEqual(expected, actual interface{}) bool {
\tif expected == nil || actual == nil {
\t\treturn expected == actual
\t}
\texp, ok := expected.([]byte)
\tif !ok {
\t\treturn reflect.DeepEqual(expected, actual)
\t}
\tact, ok := actual.([]byte)
\treturn ok && bytes.Equal(exp, act)
}

func Equal(t TestingT, expected, actual interface{}, msg ...interface{}) bool {
\tif !ObjectsAreEqual(expected, actual) {
\t\tt.Errorf("not equal: expected %#v, actual %#v", expected, actual)
\t\treturn false
\t}
\treturn true
}

func NotEqual(t TestingT, expected, actual interface{}, msg ...interface{}) bool {
\tif ObjectsAreEqual(expected, actual) {
\t\tt.Errorf("should not be %#v", actual)
\t\treturn false
\t}
\treturn true
}

func isNil(object interface{}) bool {
\tif object == nil {
\t\treturn true
\t}
\tvalue := reflect.ValueOf(object)
\tswitch value.Kind() {
\tcase reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Ptr, reflect.Slice:
\t\treturn value.IsNil()
\t}
\treturn false
}

func (a *Assertions) Equal(expected, actual interface{}, msg ...interface{}) bool {
\treturn Equal(a.t, expected, actual, msg...)
}

func (a *Assertions) NotEqual(expected, actual interface{}, msg ...interface{}) bool {
\treturn NotEqual(a.t, expected, actual, msg...)
}

func (a *Assertions) True(value bool, msg ...interface{}) bool {
\treturn Equal(a.t, true, value, msg...)
}

func (a *Assertions) False(value bool, msg ...interface{}) bool {
\treturn Equal(a.t, false, value, msg...)
}

func (a *Assertions) Nil(object interface{}, msg ...interface{}) bool {
\tif !isNil(object) {
\t\ta.t.Errorf("expected nil, got %#v", object)
\t\treturn false
\t}
\treturn true
}

func (a *Assertions) NotNil(object interface{}, msg ...interface{}) bool {
\tif isNil(object) {
\t\ta.t.Errorf("expected a value, got nil")
\t\treturn false
\t}
\treturn true
}

func (a *Assertions) Len(object interface{}, length int, msg ...interface{}) bool {
\tif reflect.ValueOf(object).Len() != length {
\t\ta.t.Errorf("expected length %d", length)
\t\treturn false
\t}
\treturn true
}
"""

GO_MOD = "module rewardkit\n\ngo 1.18\n\nrequire github.com/stretchr/testify v1.8.0\n"
GO_VENDOR_MODULES = (
    "# github.com/stretchr/testify v1.8.0\n## explicit\ngithub.com/stretchr/testify/assert\n"
)


def go_test_sources(candidate: str, tests: str) -> dict[str, str]:
    """The two ``_test.go`` files of a Go test program: the candidate and the tests in
    one file with one merged import block (:mod:`._go_imports`), their ``TestX``
    functions renamed, and the harness that runs them (above)."""
    renamed = tests
    names = list(_GO_TEST.finditer(go_imports.blanked(tests)))
    for match in reversed(names):
        renamed = renamed[: match.start(1)] + "rewardkit" + renamed[match.start(1):]
    listed = "".join(f'\t\t{{"{match.group(1)}", rewardkit{match.group(1)}}},\n'
                     for match in names)
    return {
        "candidate_test.go": go_imports.merged_file("main", [candidate, renamed]),
        # sorts before candidate_test.go: its variables are initialised first
        "a_rewardkit_main_test.go": _GO_HARNESS.replace("@TESTS@", listed),
    }
