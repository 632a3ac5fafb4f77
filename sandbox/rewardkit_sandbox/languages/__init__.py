"""Compiled languages in the local sandbox: C, C++, Java, JavaScript (Node), Go and Rust.

What a user imports is here (``from rewardkit_sandbox.languages import CompiledRunner``);
the package's modules, one concern each:

- :mod:`.runner`: the language table, toolchains, the build cache and
  :class:`CompiledRunner` (a build task and a run task of one ``SandboxPool``);
- :mod:`._driver`: the trusted driver that those tasks run (its source is the program);
- :mod:`._harnesses`: the test harnesses a candidate is compiled inside, per language
  (with :file:`_js_harness.js`, Node's);
- :mod:`._go_imports`: merging a Go candidate's and its tests' import blocks;
- :mod:`._node_modules`: a read-only ``node_modules`` offered to JavaScript programs;
- :mod:`.rust_crates`: prebuilt Rust crates offered to programs
  (``python -m rewardkit_sandbox.languages.rust_crates`` builds them; ``rust_compat/``
  holds the rand 0.4 compatibility crate).
"""

from rewardkit_sandbox.languages.runner import (
    ALIASES,
    COMPILE_LIMITS,
    COMPILER_OUTPUT_BYTES,
    LANGUAGES,
    MEMORY_FLOOR_BYTES,
    RUNTIME_RESERVE_BYTES,
    TASK_PATH,
    Build,
    CompileCache,
    CompiledRunner,
    Language,
    find_toolchain,
    go_cache_seed,
    language_named,
    shared_compile_cache,
)

__all__ = [
    "ALIASES",
    "COMPILER_OUTPUT_BYTES",
    "COMPILE_LIMITS",
    "LANGUAGES",
    "MEMORY_FLOOR_BYTES",
    "RUNTIME_RESERVE_BYTES",
    "TASK_PATH",
    "Build",
    "CompileCache",
    "CompiledRunner",
    "Language",
    "find_toolchain",
    "go_cache_seed",
    "language_named",
    "shared_compile_cache",
]
