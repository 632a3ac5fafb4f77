"""What a compiled-language program may import: npm packages offered to JavaScript (a
``node_modules`` directory on NODE_PATH, read-only in the sandbox) and Go's imports
merged, completed and pruned the way goimports does (HumanEval-X's Go prompts import what
their solutions do not use, and miss what they use).

The graded cases (honest Go answers paid, test-runner flag forgeries refused) are the
golden cases of tests/cases/code/code_execution_go.cases.yaml.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from rewardkit_sandbox import CompileCache, CompiledRunner, SandboxPool, Status
from rewardkit_sandbox.languages import LANGUAGES, find_toolchain
from rewardkit_sandbox.languages._go_imports import GoImport, merged_file, split_imports
from sandbox_audit import TEST_LIMITS

needs_node = pytest.mark.skipif(
    find_toolchain(LANGUAGES["javascript"])[1] is not None, reason="no node on the sandbox PATH"
)
needs_go = pytest.mark.skipif(
    find_toolchain(LANGUAGES["go"])[1] is not None, reason="no go on the sandbox PATH"
)

USES_PACKAGE = "const double = require('rk-double');\nconst f = (x) => double(x) + 1;\n"
TEST = "console.assert(f(20) === 41);\n"
WRITES = (
    "const fs = require('fs');\nconst where = require.resolve('rk-double');\n"
    "let wrote = 'no';\ntry { fs.writeFileSync(where, 'module.exports = () => 0'); wrote = 'yes'; }"
    " catch (e) { wrote = e.code; }\nconsole.log(wrote);\n"
)


@pytest.fixture
def node_modules(tmp_path: Path) -> Path:
    """A node_modules directory (inside /tmp, which the sandbox replaces) with one package."""
    package = tmp_path / "node_modules" / "rk-double"
    package.mkdir(parents=True)
    (package / "package.json").write_text('{"name": "rk-double", "main": "index.js"}')
    (package / "index.js").write_text("module.exports = (x) => 2 * x;\n")
    for path in (tmp_path, tmp_path / "node_modules", package):
        os.chmod(path, 0o755)
    return tmp_path / "node_modules"


@needs_node
def test_a_node_modules_import_path_is_required_read_only(node_modules: Path) -> None:
    with SandboxPool(size=1, limits=TEST_LIMITS,
                     import_paths=[str(node_modules)]) as pool:
        runner = CompiledRunner(pool, "javascript", node_modules=node_modules,
                                cache=CompileCache())
        passed = runner.run(USES_PACKAGE, tests=[TEST])
        written = runner.run(WRITES)
    assert passed.status is Status.OK, (passed.error, passed.stderr)
    assert written.status is Status.OK, written.stderr
    assert written.stdout.strip() in ("EROFS", "EACCES")
    assert "2 * x" in (node_modules / "rk-double" / "index.js").read_text()


@needs_node
def test_without_the_package_or_the_directory_the_program_fails_or_the_grading_errs(
    node_modules: Path, contained: SandboxPool
) -> None:
    plain = CompiledRunner(contained, "javascript", cache=CompileCache())
    missing = plain.run(USES_PACKAGE, tests=[TEST])
    assert missing.status is Status.FAILED  # Cannot find module: the program's failure
    hidden = CompiledRunner(contained, "javascript", node_modules=node_modules)
    result = hidden.run(USES_PACKAGE, tests=[TEST])  # in /tmp, not an import path
    assert result.status is Status.TOOLCHAIN_MISSING
    assert "import_paths" in (result.error or "") and str(node_modules) in (result.error or "")


def test_node_modules_is_refused_for_other_languages_and_missing_directories(
    tmp_path: Path, contained: SandboxPool
) -> None:
    with pytest.raises(ValueError, match="javascript, not go"):
        CompiledRunner(contained, "go", node_modules=tmp_path)
    with pytest.raises(ValueError, match="not a directory"):
        CompiledRunner(contained, "javascript", node_modules=tmp_path / "absent")


def _specs(go_file: str) -> list[str]:
    """The import specs of the one import block of ``go_file``."""
    block = go_file.split("import (\n", 1)[1].split("\n)\n", 1)[0]
    return [line.strip() for line in block.splitlines()]


def test_go_import_declarations_are_read_after_the_package_clause_only() -> None:
    source = (
        'package main\n// c\nimport "os"\nimport (\n  s "strings"\n  _ "embed"; "math"\n)\n'
        'var x = `\nimport "fmt"\n`\nfunc F() {}\n'
    )
    imports, body = split_imports(source)
    assert imports == [GoImport("os"), GoImport("strings", "s"), GoImport("embed", "_"),
                       GoImport("math")]
    assert body.startswith("\n// c\n") and 'import "fmt"' in body and "package" not in body


def test_go_imports_merge_into_one_block_each_once_unused_dropped_missing_added() -> None:
    prompt = 'import (\n    "strings"\n    "math"\n)\n\nfunc F(xs []float64) float64 {\n'
    solution = "    sort.Float64s(xs)\n    return math.Abs(xs[0]) // strings.Fields\n}\n"
    tests = ('package main\n\nimport (\n    "testing"\n    "math"\n)\n\n'
             "func TestF(t *testing.T) { _ = F(nil) }\n")
    merged = merged_file("main", [prompt + solution, tests])
    assert _specs(merged) == ['"math"', '"testing"', '"sort"']
    assert "strings.Fields" in merged  # a comment: neither a use nor removed


def test_go_keeps_blank_dot_and_unnamed_imports_and_adds_only_standard_packages() -> None:
    source = ('import (\n    _ "unsafe"\n    . "fmt"\n    "example.com/go-thing"\n)\n'
              "func F() { os.Exit(0); yaml.Marshal(1) }\n")
    assert _specs(merged_file("main", [source])) == [
        '_ "unsafe"', '. "fmt"', '"example.com/go-thing"']  # no os nor yaml: not in the table


@needs_go
def test_a_go_program_with_an_unused_and_a_missing_import_compiles(
    contained: SandboxPool,
) -> None:
    limits = dataclasses.replace(TEST_LIMITS, file_size_bytes=64 * 1024 * 1024)
    runner = CompiledRunner(contained, "go", limits=limits, cache=CompileCache())
    code = ('package main\n\nimport (\n    "fmt"\n    "sort"\n)\n\n'
            "func main() {\n    fmt.Println(strings.Repeat(\"ab\", 2))\n}\n")
    result = runner.run(code)
    assert result.status is Status.OK, (result.error, result.stderr)
    assert result.stdout == "abab\n"
