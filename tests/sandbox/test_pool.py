"""SandboxPool behaviour on well-behaved programs: statuses, stdin, tests, concurrency, recovery."""

from __future__ import annotations

import os
import signal
import time

import pytest
from rewardkit_sandbox import (
    LayerReport,
    SandboxLimits,
    SandboxPool,
    SandboxTask,
    SandboxUnavailableError,
    Status,
)
from rewardkit_sandbox.layers import LAYER_CATALOGUE
from sandbox_audit import TEST_LIMITS


def test_a_program_that_exits_zero_is_ok(contained: SandboxPool) -> None:
    result = contained.run("print('hello')")
    assert result.status is Status.OK
    assert (result.exit_code, result.stdout, result.stderr) == (0, "hello\n", "")


def test_stdin_is_fed_to_the_program(contained: SandboxPool) -> None:
    result = contained.run("import sys\nprint(sys.stdin.read()[::-1])", stdin="abc")
    assert result.stdout == "cba\n"


def test_large_stdin_and_stdout_pass_through_the_pipes(contained: SandboxPool) -> None:
    data = "x" * 50_000
    result = contained.run("import sys\nsys.stdout.write(sys.stdin.read())", stdin=data)
    assert result.status is Status.OK
    assert result.stdout == data


def test_an_exception_is_a_failure_with_its_traceback(contained: SandboxPool) -> None:
    result = contained.run("def f():\n    return 1 / 0\nf()")
    assert result.status is Status.FAILED
    assert result.exit_code == 1
    assert "ZeroDivisionError" in result.stderr
    assert 'File "main.py", line 2, in f' in result.stderr


def test_a_syntax_error_is_a_failure(contained: SandboxPool) -> None:
    result = contained.run("def broken(:\n")
    assert result.status is Status.FAILED
    assert "SyntaxError" in result.stderr


def test_sys_exit_code_is_reported(contained: SandboxPool) -> None:
    result = contained.run("import sys\nsys.exit(3)")
    assert (result.status, result.exit_code) == (Status.FAILED, 3)


def test_program_runs_as_main_in_a_private_work_dir(contained: SandboxPool) -> None:
    code = "import os\nprint(__name__, os.getcwd().startswith('/tmp/rewardkit-task-'), os.getuid())"
    result = contained.run(code)
    name, private, uid = result.stdout.split()
    assert (name, private) == ("__main__", "True")
    assert int(uid) in contained.slot_uids


def test_each_task_starts_from_a_clean_interpreter(contained: SandboxPool) -> None:
    contained.run("import builtins\nbuiltins.poisoned = True\nopen('marker', 'w').write('x')")
    result = contained.run(
        "import builtins, os\nprint(hasattr(builtins, 'poisoned'), os.listdir())"
    )
    assert result.stdout == "False []\n"


def test_cpu_and_wall_time_are_measured(contained: SandboxPool) -> None:
    result = contained.run("sum(range(3_000_000))")
    assert result.cpu_time_s > 0
    assert result.wall_time_s >= result.cpu_time_s * 0.5


def test_passing_tests_are_reported_one_by_one(contained: SandboxPool) -> None:
    result = contained.run(
        "def add(a, b):\n    return a + b",
        tests=["assert add(1, 2) == 3", "assert add(-1, 1) == 0"],
    )
    assert result.status is Status.OK
    assert [test.passed for test in result.tests or ()] == [True, True]


def test_a_failing_test_fails_the_run_and_names_the_assertion(contained: SandboxPool) -> None:
    result = contained.run(
        "def add(a, b):\n    return a - b",
        tests=["assert add(1, 1) == 0", "assert add(1, 2) == 3, 'add is wrong'"],
    )
    assert result.status is Status.FAILED
    assert result.tests is not None
    assert [test.status for test in result.tests] == [Status.OK, Status.FAILED]
    assert result.tests[1].error == "AssertionError: add is wrong"


def test_stop_on_first_failure_skips_the_remaining_tests(contained: SandboxPool) -> None:
    result = contained.run(
        "x = 1", tests=["assert x == 2", "assert x == 1"], stop_on_first_failure=True
    )
    assert result.tests is not None
    assert [test.status for test in result.tests] == [Status.FAILED, None]


def test_a_hanging_test_times_out_alone(contained: SandboxPool) -> None:
    result = contained.run(
        "import time", tests=["time.sleep(30)", "assert True"], test_timeout_s=0.3
    )
    assert result.tests is not None
    assert [test.status for test in result.tests] == [Status.TIMEOUT, Status.OK]
    assert result.status is Status.TIMEOUT


@pytest.mark.parametrize("shortcut", ["import sys; sys.exit(0)", "import os; os._exit(0)"])
def test_exiting_before_the_asserts_does_not_pass(contained: SandboxPool, shortcut: str) -> None:
    result = contained.run(f"def f():\n    return 0\n{shortcut}", tests=["assert f() == 1"])
    assert result.status is Status.FAILED
    assert result.tests is not None and not result.tests[0].passed


def test_a_memory_error_in_a_test_is_a_memory_status(contained: SandboxPool) -> None:
    result = contained.run("x = 1", tests=["bytearray(1 << 31)"])
    assert result.status is Status.MEMORY


def test_concurrent_runs_from_many_threads(contained: SandboxPool) -> None:
    tasks = [SandboxTask(f"print({n} * 2)") for n in range(40)]
    results = contained.run_many(tasks)
    assert [result.stdout for result in results] == [f"{n * 2}\n" for n in range(40)]


def test_an_oversized_program_is_refused_with_a_status(contained: SandboxPool) -> None:
    small = SandboxPool.__new__(SandboxPool)
    small.max_code_bytes = 10
    small.limits = TEST_LIMITS
    result = SandboxPool.run(small, "print('far too long')")
    assert result.status is Status.FAILED
    assert "exceeds" in (result.error or "")


def test_a_dead_zygote_is_replaced_and_its_run_is_a_sandbox_error() -> None:
    with SandboxPool(size=1, limits=TEST_LIMITS) as pool:
        [zygote] = pool.zygote_pids()
        killer = pool.run  # the run below is in flight when the zygote dies
        import threading

        outcome: list[Status] = []
        thread = threading.Thread(
            target=lambda: outcome.append(killer("import time; time.sleep(5)").status)
        )
        thread.start()
        time.sleep(0.3)
        os.kill(zygote, signal.SIGKILL)
        thread.join(10)
        assert outcome == [Status.SANDBOX_ERROR]
        assert pool.run("print('back')").stdout == "back\n"
        assert pool.zygote_pids() != [zygote]


def test_the_pool_refuses_to_run_without_a_required_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    original = LayerReport.from_message

    def without_rlimits(message: dict) -> LayerReport:
        return original({**message, "rlimits": {"active": False, "detail": "simulated"}})

    monkeypatch.setattr(LayerReport, "from_message", staticmethod(without_rlimits))
    with pytest.raises(SandboxUnavailableError, match="rlimits"):
        SandboxPool(size=1, limits=TEST_LIMITS)


def test_every_layer_is_reported(contained: SandboxPool) -> None:
    assert [layer.name for layer in contained.layers.layers] == list(LAYER_CATALOGUE)
    assert contained.layers.missing_required == ()


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="wall_time_s"):
        SandboxLimits(wall_time_s=0)


def test_import_paths_inside_tmp_stay_importable_and_read_only(tmp_path) -> None:
    # a venv or checkout under /tmp: the private /tmp of the sandbox would hide it
    package = tmp_path / "site"
    package.mkdir()
    (package / "helper_in_tmp.py").write_text("VALUE = 41 + 1\n")
    os.chmod(tmp_path, 0o755)
    os.chmod(package, 0o755)
    code = (
        "import helper_in_tmp, os\n"
        "print(helper_in_tmp.VALUE)\n"
        "try:\n"
        "    open(os.path.join(os.path.dirname(helper_in_tmp.__file__), 'x.py'), 'w')\n"
        "    print('writable')\n"
        "except OSError:\n"
        "    print('read-only')\n"
    )
    with SandboxPool(size=1, limits=TEST_LIMITS,
                     import_paths=[str(package)]) as pool:
        result = pool.run(code)
    assert result.status is Status.OK, result.stderr
    assert result.stdout.split() == ["42", "read-only"]
    assert not (package / "x.py").exists()
