"""The Go build cache seed (``CompiledRunner._go_cache_seed``, docs/sandbox.md, Go): each
Go test build starts from a copy of it in its own work directory; a candidate, built or
run, cannot change the seed that later builds start from."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess

import pytest
from rewardkit_sandbox import CompileCache, CompiledRunner, SandboxPool, Status
from rewardkit_sandbox.languages import LANGUAGES, find_toolchain

pytestmark = pytest.mark.skipif(
    find_toolchain(LANGUAGES["go"])[1] is not None, reason="no go on the sandbox PATH"
)

ADD = "package main\nfunc Add(a, b int) int { return a + b }\n"
WRONG = "package main\nfunc Add(a, b int) int { return a - b }\n"
TEST = ('package main\nimport (\n\t"testing"\n\t"github.com/stretchr/testify/assert"\n)\n'
        "func TestAdd(t *testing.T) { assert.Equal(t, 3, Add(1, 2)) }\n")

#: a candidate whose program, when its tests run, tries to poison every Go build cache it
#: can reach: its own $GOCACHE (a planted entry, every file overwritten), the toolchain's
#: precompiled standard library, and the user's cache; it prints what it managed
POISONER = r'''package main
import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)
func try(path string) {
	_ = os.MkdirAll(filepath.Dir(path), 0o777)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err == nil {
		_, err = f.WriteString("poison")
		f.Close()
	}
	fmt.Printf("WRITE %s %v\n", path, err == nil)
}
func Add(a, b int) int {
	cache := os.Getenv("GOCACHE")
	try(filepath.Join(cache, "00", "poison-a"))
	_ = filepath.WalkDir(cache, func(p string, d fs.DirEntry, e error) error {
		if e == nil && !d.IsDir() { try(p) }
		return nil
	})
	try("@FMT@")
	fmt.Printf("CHMOD %v\n", os.Chmod("@FMT@", 0o666) == nil)
	try("/root/.cache/go-build/00/poison-a")
	return a + b
}
'''


def digest(files: dict[str, tuple[int, bytes]]) -> str:
    sha = hashlib.sha256()
    for name, (mode, data) in sorted(files.items()):
        sha.update(f"{name}\0{mode}\0{len(data)}\0".encode() + data)
    return sha.hexdigest()


def test_a_candidate_cannot_poison_the_go_cache_seed_or_a_later_build(
    contained: SandboxPool,
) -> None:
    limits = dataclasses.replace(contained.limits, wall_time_s=10.0, cpu_time_s=10.0,
                                 memory_bytes=1 << 30, file_size_bytes=64 << 20)
    runner = CompiledRunner(contained, "go", limits=limits, cache=CompileCache())
    goroot = subprocess.run([runner.tools["go"], "env", "GOROOT"], capture_output=True,
                            text=True, check=True).stdout.strip()
    fmt_archive = os.path.join(goroot, "pkg", "linux_amd64", "fmt.a")
    if not os.path.exists(fmt_archive):
        pytest.skip(f"no precompiled standard library at {fmt_archive}")
    seed = runner._go_cache_seed()
    # what the seed is for: the standard library's module index and the assert package
    assert len(seed) > 50, sorted(seed)[:5]
    before = digest(seed)

    attack = runner.run(POISONER.replace("@FMT@", fmt_archive), tests=[TEST])
    assert attack.ok, (attack.status, attack.error, attack.stderr[-500:])
    writes = [line.split() for line in attack.stdout.splitlines() if line.startswith("WRITE")]
    # the run task has no cache of its build: what it writes is its own, and goes with it
    own = [w for w in writes if w[1].endswith("/00/poison-a") and not w[1].startswith("/root")]
    assert own and own[0][2] == "true", writes  # the attack ran
    assert ["WRITE", fmt_archive, "false"] in writes, writes
    assert ["WRITE", "/root/.cache/go-build/00/poison-a", "false"] in writes, writes
    assert "CHMOD false" in attack.stdout, attack.stdout

    # the seed the runner keeps is the same, and later builds are unaffected by the run
    assert digest(runner._go_cache_seed()) == before
    assert runner.run(ADD, tests=[TEST]).ok
    wrong = runner.run(WRONG, tests=[TEST])
    assert wrong.status is Status.FAILED, (wrong.status, wrong.error)
    # a later build's cache: every seed file as made, nothing the candidate planted
    plan = dataclasses.replace(runner._test_plan(ADD + "// again\n", TEST),
                               collect=["gocache"])
    build = runner._build(plan)
    assert build.ok, build.log
    assert not any("poison" in name for name in build.files)
    changed = [name for name, (_, data) in seed.items() if build.files[name][1] != data]
    assert changed == []
