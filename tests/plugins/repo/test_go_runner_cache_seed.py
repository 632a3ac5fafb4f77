"""repo_tests ``runner: go``: each run's empty GOCACHE starts as a copy of the sandbox's
Go build cache seed (``rewardkit_sandbox.languages.go_cache_seed``, the one the code
reward's Go test builds start from); the code under test cannot change the seed or what
a later run starts from (real git, go, sandbox)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tiny_go_repo import CALC, FIX, make_go_repo
from tiny_repo import diff_of

from rewardkit import Sample

rewardkit_repo = pytest.importorskip("rewardkit_repo")
go_runner = pytest.importorskip("rewardkit_repo.go_runner")

pytestmark = pytest.mark.skipif(not os.path.isfile(os.path.join(go_runner.goroot(), "bin", "go"))
                                or shutil.which("git") is None, reason="needs go and git")

#: code under test that, when TestAdd calls it, overwrites every file of its GOCACHE
#: (the driver's gohome/cache, $HOME/cache) and plants one more
POISON = CALC.replace("package calc\n", 'package calc\n\nimport (\n\t"io/fs"\n\t"os"\n'
                      '\t"path/filepath"\n)\n').replace("\treturn a - b", """\
	cache := filepath.Join(os.Getenv("HOME"), "cache")
	_ = os.MkdirAll(filepath.Join(cache, "00"), 0o777)
	_ = os.WriteFile(filepath.Join(cache, "00", "poison-a"), []byte("poison"), 0o666)
	_ = filepath.WalkDir(cache, func(p string, d fs.DirEntry, e error) error {
		if e == nil && !d.IsDir() {
			_ = os.WriteFile(p, []byte("poison"), 0o666)
		}
		return nil
	})
	return a + b""")


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    root = tmp_path_factory.mktemp("gorepo")
    return root / "repo", make_go_repo(root / "repo")


def _score(reference: dict[str, object], completion: str) -> object:
    return rewardkit_repo.RepoTests({"runner": "go"}).score(
        Sample(prompt="fix Add", completion=completion, reference=reference))


def _seed_digest() -> tuple[int, str]:
    from rewardkit_code.sandboxes import shared_sandbox_pool
    from rewardkit_sandbox.languages import go_cache_seed

    pool = shared_sandbox_pool(None, (go_runner.goroot(),))
    seed = go_cache_seed(pool, os.path.join(go_runner.goroot(), "bin", "go"))
    sha = hashlib.sha256()
    for name, data in sorted(seed.items()):
        sha.update(name.encode() + b"\0" + data)
    return len(seed), sha.hexdigest()


def test_the_build_starts_from_the_seed(task: tuple[Path, dict[str, object]]) -> None:
    score = _score(task[1], FIX)
    assert score.value == 1.0, (score.reason, score.details)
    cache = score.details["go_build_cache"]
    # the seed: the standard library's module index (~190 files), made once per process
    assert cache["seeded_files"] > 50, cache
    # building the module's two packages found it there: from an empty cache the same
    # builds write ~175 files (the index again), seeded only their own few
    assert cache["files_after_builds"] - cache["seeded_files"] < 40, cache


def test_another_toolchain_gets_no_seed(tmp_path: Path) -> None:
    from rewardkit_code.sandboxes import shared_sandbox_pool
    from rewardkit_sandbox.languages import go_cache_seed

    pool = shared_sandbox_pool(None, (go_runner.goroot(),))
    other = tmp_path / "bin" / "go"
    other.parent.mkdir()
    shutil.copy(os.path.join(go_runner.goroot(), "bin", "go"), other)
    assert go_cache_seed(pool, str(other)) == {}


def test_code_under_test_cannot_poison_the_seed_or_a_later_run(
        task: tuple[Path, dict[str, object]]) -> None:
    before = _seed_digest()
    assert before[0] > 50
    attack = _score(task[1], diff_of(task[0], {"calc.go": POISON}))
    assert attack.status == "ok" and attack.value == 1.0, (attack.reason, attack.details)
    assert _seed_digest() == before
    later = _score(task[1], FIX)
    assert later.value == 1.0, (later.reason, later.details)
    cache = later.details["go_build_cache"]
    assert cache["seeded_files"] == before[0]
    assert cache["files_after_builds"] - cache["seeded_files"] < 40, cache
