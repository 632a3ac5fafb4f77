"""The Go local runner against a bare ``go build`` + run loop, and where a Go build's time
goes (issue 42 item 5).

    python benchmarks/bench_go_runner.py [--n 6] [--programs-only] [--bare-dir /dev/shm]

1. ``CompiledRunner(pool, "go")`` (a fresh compile cache: every program is built) runs
   ``--n`` distinct small programs (stdin in, stdout checked), timed in turn with a bare
   loop of the same programs: ``go build -o prog -ldflags=-s -w main.go`` (the runner's
   flags and environment, the user's own warm ``GOCACHE``; with ``--bare-cold`` also an
   empty one per build, as the runner's) then ``./prog``. Ratio: median of the
   per-program ratios (runner / bare), with the spread; and CPU: this process, the
   sandbox's zygotes and the task children they reaped, against the go command and the
   program (``--programs-only``: this part alone). A second bare figure: the same loop
   with the environment the runner gives its builds only (``GO_BUILD_ENV``: no garbage
   collection in the go command, compiler and linker below 512 MiB), timed in turn too.
   ``--bare-dir DIR``: the bare loop works (and its go command keeps ``$WORK``) in DIR,
   e.g. ``/dev/shm``: a tmpfs, as the sandbox's work directories are; by default in the
   system's temporary folder (on a disk here, slower to write to on a busy machine).
2. The runner's test build (``go test -c``, the vendored assert package, the plan's
   environment) run outside the sandbox with its ``GOCACHE`` empty, as every sandboxed
   build starts, and then warm: wall and CPU seconds (the go command and its children).
3. The runner's test builds (``run(code, tests=[...])``, ``--n`` distinct candidates) with
   the Go build cache seed (``CompiledRunner._go_cache_seed``) and without it (an empty
   seed: every build's cache starts empty, as before the seed), timed in turn.
4. With ``--against CHECKOUT`` (another commit's tree, e.g. a ``git worktree``): that
   commit's ``languages/runner.py`` (its driver and protocol) and this one's, on the same
   pool, interleaved program by program with the bare loop between them (``--n``
   programs each, the order swapped every program): each one's ratio to the bare loop
   and theirs to each other. Only parts 1 and 4 run with it.

On the shared 2-core machine the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from rewardkit_sandbox import SandboxPool
from rewardkit_sandbox.languages import CompileCache, CompiledRunner
from rewardkit_sandbox.languages import runner as languages  # where the seeds are kept

PROGRAM = ('package main\nimport ("fmt"; "sort"; "strings")\nfunc main() {\n'
           '\ts := []int{3, 1, 2}\n\tsort.Ints(s)\n\tvar x string\n\tfmt.Scan(&x)\n'
           '\tfmt.Println(strings.ToUpper(x), s)\n}\n// program %d\n')
CODE = "package main\nfunc Add(a, b int) int { return a + b }\n"
TEST = ('package main\nimport (\n\t"testing"\n\t"github.com/stretchr/testify/assert"\n)\n'
        "func TestAdd(t *testing.T) { assert.Equal(t, 3, Add(1, 2)) }\n")


#: what the runner's Go builds (and only they) run with since issue 42 item 5; the same
#: for a runner of an older checkout (``--against``, another tree first on PYTHONPATH)
BUILD_ENV: dict[str, str] = getattr(languages, "GO_BUILD_ENV",
                                    {"GOGC": "off", "GOMEMLIMIT": "512MiB"})
BUILD_ENV_TEXT = " ".join(f"{name}={value}" for name, value in BUILD_ENV.items())


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def sandbox_cpu(pool: SandboxPool) -> float:
    """CPU seconds of the pool's zygotes with every task child and judge they reaped."""
    total = 0
    for pid in pool.zygote_pids():
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def bare_work(bare_dir: str | None, env: dict[str, str]) -> str:
    """The bare loop's work directory: the system's temporary folder, or one in
    ``bare_dir`` (e.g. a tmpfs, as the sandbox's work directories are), which is then the
    go command's ``TMPDIR`` too (its ``$WORK``), as a sandboxed build's is its own."""
    work = tempfile.mkdtemp(dir=bare_dir)
    if bare_dir:
        env["TMPDIR"] = work
    return work


def runner_vs_bare(pool: SandboxPool, n: int, cold: bool, bare_dir: str | None = None) -> None:
    runner = CompiledRunner(pool, "go", cache=CompileCache())
    env = dict(os.environ, GO111MODULE="off", CGO_ENABLED="0", GOTOOLCHAIN="local",
               GOMAXPROCS="2", GOFLAGS="")
    work = bare_work(bare_dir, env)
    if cold:  # each bare build starts from an empty cache, as the runner's do
        env["GOCACHE"] = f"{work}/gocache"

    # the same loop with the environment the runner gives its builds only (the second
    # bare figure: the go command, compiler and linker with the runner's GC settings)
    tuned = dict(env, **BUILD_ENV)

    def bare(i: int, build_env: dict[str, str] = env) -> None:
        if cold:
            shutil.rmtree(env["GOCACHE"], ignore_errors=True)
        with open(f"{work}/main.go", "w") as handle:
            handle.write(PROGRAM % i)
        subprocess.run(["go", "build", "-o", "prog", *runner.flags, "main.go"], cwd=work,
                       env=build_env, check=True)
        out = subprocess.run(["./prog"], cwd=work, input="abc", capture_output=True,
                             text=True, check=True).stdout
        assert out.startswith("ABC"), out

    assert runner.run(PROGRAM % 0, stdin="warm").ok
    bare(-1)
    ours, theirs, builds, tuned_times = [], [], [], []
    our_cpu = their_cpu = tuned_cpu = 0.0
    for i in range(1, n + 1):
        t0, c0 = time.perf_counter(), own_cpu() + sandbox_cpu(pool)
        result = runner.run(PROGRAM % (1000 + i), stdin="abc")
        t1, c1, k1 = time.perf_counter(), own_cpu() + sandbox_cpu(pool), children_cpu()
        assert result.ok and result.stdout.startswith("ABC"), result
        bare(2000 + i)
        t2, k2 = time.perf_counter(), children_cpu()
        bare(3000 + i, tuned)
        tuned_times.append(time.perf_counter() - t2)
        tuned_cpu += children_cpu() - k2
        ours.append(t1 - t0)
        theirs.append(t2 - t1)
        our_cpu += c1 - c0
        their_cpu += k2 - k1
        builds.append(float(result.metadata["compile_s"]))
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    tuned_ratios = [a / b for a, b in zip(ours, tuned_times, strict=True)]
    where = f" (bare loop in {bare_dir})" if bare_dir else ""
    print(f"programs: {n}, each built and run once; load {load()}{where}")
    print(f"  go runner   {statistics.median(ours):.3f} s/program (its build "
          f"{statistics.median(builds):.3f} s), CPU {our_cpu / n:.3f} s/program")
    cache = "an empty GOCACHE each" if cold else "the user's warm GOCACHE"
    print(f"  bare loop   {statistics.median(theirs):.3f} s/program (go build + ./prog, "
          f"{cache}), CPU {their_cpu / n:.3f} s/program")
    print(f"  ratio runner / bare {statistics.median(ratios):.2f}x "
          f"(programs {min(ratios):.2f}-{max(ratios):.2f}x), CPU "
          f"{our_cpu / their_cpu:.2f}x (this process, the zygotes and their task children "
          "against the go command and the program)")
    print(f"  bare loop with the runner's build environment ({BUILD_ENV_TEXT}): "
          f"{statistics.median(tuned_times):.3f} s/program, CPU {tuned_cpu / n:.3f} s/program; "
          f"runner / it {statistics.median(tuned_ratios):.2f}x "
          f"(programs {min(tuned_ratios):.2f}-{max(tuned_ratios):.2f}x), CPU "
          f"{our_cpu / tuned_cpu:.2f}x")
    shutil.rmtree(work, ignore_errors=True)


def test_build_cache(pool: SandboxPool) -> None:
    plan = CompiledRunner(pool, "go", cache=CompileCache())._test_plan(CODE, TEST)
    work = tempfile.mkdtemp()
    for name, text in plan.sources.items():
        path = os.path.join(work, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
    env = dict(os.environ, **{k: v.replace("{cwd}", work) for k, v in plan.env.items()})
    print(f"test build ({' '.join(plan.steps[0]['argv'][1:])}), outside the sandbox; "
          f"load {load()}")
    for label in ("empty GOCACHE (as every sandboxed build)", "empty GOCACHE",
                  "warm GOCACHE", "warm GOCACHE"):
        if label.startswith("empty"):
            shutil.rmtree(f"{work}/gocache", ignore_errors=True)
        t0, c0 = time.perf_counter(), children_cpu()
        subprocess.run(plan.steps[0]["argv"], cwd=work, env=env, check=True)
        print(f"  {label:<44} wall {time.perf_counter() - t0:.3f} s   "
              f"CPU {children_cpu() - c0:.3f} s")
    shutil.rmtree(work, ignore_errors=True)


def seeded_vs_cold(pool: SandboxPool, n: int) -> None:
    runner = CompiledRunner(pool, "go", cache=CompileCache())
    t0 = time.perf_counter()
    seed = runner._go_cache_seed()
    made = time.perf_counter() - t0
    key = next(key for key, value in languages._go_seeds.items() if value is seed)
    seeded, cold = [], []
    for i in range(1, n + 1):
        for label, times in (("seed", seeded), ("cold", cold)):
            languages._go_seeds[key] = seed if label == "seed" else {}
            result = runner.run(f"{CODE}// {label} {i}\n", tests=[TEST])
            assert result.ok, result
            times.append(float(result.metadata["compile_s"]))
    languages._go_seeds[key] = seed
    ratios = [a / b for a, b in zip(seeded, cold, strict=True)]
    print(f"runner test builds (go test -c in the sandbox), {n} candidates each; load {load()}")
    print(f"  seed: {len(seed)} files, made once in {made:.3f} s")
    print(f"  seeded GOCACHE  {statistics.median(seeded):.3f} s/build")
    print(f"  empty GOCACHE   {statistics.median(cold):.3f} s/build")
    print(f"  ratio seeded / empty {statistics.median(ratios):.2f}x "
          f"(candidates {min(ratios):.2f}-{max(ratios):.2f}x)")


def against(pool: SandboxPool, n: int, checkout: str, bare_dir: str | None = None) -> None:
    path = os.path.join(checkout, "sandbox", "rewardkit_sandbox", "languages", "runner.py")
    spec = importlib.util.spec_from_file_location("other_runner", path)
    assert spec is not None and spec.loader is not None, path
    other = importlib.util.module_from_spec(spec)
    sys.modules["other_runner"] = other  # its dataclasses look their module up
    spec.loader.exec_module(other)
    runners = {"that": other.CompiledRunner(pool, "go", cache=other.CompileCache()),
               "this": CompiledRunner(pool, "go", cache=CompileCache())}
    env = dict(os.environ, GO111MODULE="off", CGO_ENABLED="0", GOTOOLCHAIN="local",
               GOMAXPROCS="2", GOFLAGS="")
    work = bare_work(bare_dir, env)

    def bare(i: int) -> None:
        with open(f"{work}/main.go", "w") as handle:
            handle.write(PROGRAM % i)
        subprocess.run(["go", "build", "-o", "prog", *runners["this"].flags, "main.go"],
                       cwd=work, env=env, check=True)
        out = subprocess.run(["./prog"], cwd=work, input="abc", capture_output=True,
                             text=True, check=True).stdout
        assert out.startswith("ABC"), out

    for runner in runners.values():
        assert runner.run(PROGRAM % 0, stdin="warm").ok
    bare(-1)
    times: dict[str, list[float]] = {"that": [], "this": [], "bare": []}
    builds: dict[str, list[float]] = {"that": [], "this": []}
    for i in range(n):
        for label in (["that", "bare", "this"] if i % 2 == 0 else ["this", "bare", "that"]):
            t0 = time.perf_counter()
            if label == "bare":
                bare(30000 + i)
            else:
                result = runners[label].run(PROGRAM % ((10000 if label == "that" else 20000)
                                                       + i), stdin="abc")
                assert result.ok and result.stdout.startswith("ABC"), result
                builds[label].append(float(result.metadata["compile_s"]))
            times[label].append(time.perf_counter() - t0)
    where = f", bare loop in {bare_dir}" if bare_dir else ""
    print(f"interleaved with {checkout}: {n} programs each; load {load()}{where}")
    for label in ("that", "this"):
        ratios = [a / b for a, b in zip(times[label], times["bare"], strict=True)]
        print(f"  {label} runner {statistics.median(times[label]):.3f} s/program (its build "
              f"{statistics.median(builds[label]):.3f} s), runner / bare "
              f"{statistics.median(ratios):.2f}x (programs {min(ratios):.2f}-{max(ratios):.2f}x)")
    print(f"  bare loop   {statistics.median(times['bare']):.3f} s/program")
    ratios = [a / b for a, b in zip(times["this"], times["that"], strict=True)]
    print(f"  this / that {statistics.median(ratios):.2f}x "
          f"(programs {min(ratios):.2f}-{max(ratios):.2f}x)")
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=6, help="programs timed (default 6)")
    ap.add_argument("--bare-cold", action="store_true",
                    help="also time the bare loop with an empty GOCACHE for each build")
    ap.add_argument("--against", metavar="CHECKOUT",
                    help="also time another checkout's runner, interleaved (part 4 only)")
    ap.add_argument("--programs-only", action="store_true",
                    help="part 1 only (the runner against the bare loop)")
    ap.add_argument("--bare-dir", metavar="DIR",
                    help="the bare loop's work directory and TMPDIR in DIR (e.g. /dev/shm, a "
                    "tmpfs as the sandbox's); default: the system's temporary folder")
    args = ap.parse_args()
    with SandboxPool(size=1) as pool:
        runner_vs_bare(pool, args.n, cold=False, bare_dir=args.bare_dir)
        if args.programs_only:
            return
        if args.against:
            against(pool, args.n, args.against, args.bare_dir)
            return
        if args.bare_cold:
            runner_vs_bare(pool, args.n, cold=True, bare_dir=args.bare_dir)
        test_build_cache(pool)
        seeded_vs_cold(pool, args.n)


if __name__ == "__main__":
    main()
