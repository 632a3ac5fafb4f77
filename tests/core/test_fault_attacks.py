"""Attacks on the fault model (docs/fault-model.md, "Attacks"): each test is one attack,
through the public API or the CLI, and the promise that holds against it."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardkit import RewardSet, Sample, Score, Status

HERE = Path(__file__).parent
FAULTY_CLI = str(HERE / "faulty_cli.py")


def cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``rewardkit`` with the misbehaving test rewards registered."""
    return subprocess.run([sys.executable, FAULTY_CLI, *args], capture_output=True,
                          text=True, timeout=timeout, input=stdin, env=env)


def strict_json(text: str) -> object:
    """Parse standard JSON only: NaN / Infinity tokens fail."""
    def refuse(name: str) -> object:
        raise ValueError(f"non-standard JSON token {name}")
    return json.loads(text, parse_constant=refuse)


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """SIGINT as a terminal's Ctrl-C meets it: Python's KeyboardInterrupt here, the
    default action in the processes started meanwhile. A test run started in the
    background by a non-interactive shell (CI's ``.ci/run``) inherits SIGINT ignored,
    and a Python started so ignores it too: no Ctrl-C could be tested then."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, previous)


# -- 1. a burst of bad rows ---------------------------------------------------------------
def test_burst_of_hanging_rows_costs_only_those_rows():
    rs = RewardSet.from_dict({"workers": 2,
                              "rewards": {"h": {"reward": "hangs", "timeout": 1}}})
    batch = [{"completion": "hang" if i < 16 else f"fine {i}"} for i in range(64)]
    res = rs.score(batch)
    statuses = [s.status for s in res.scores("h")]
    assert statuses[:16] == [Status.TIMEOUT] * 16
    assert res.values("h")[16:] == [1.0] * 48
    assert res.totals[16:] == [1.0] * 48


def test_burst_of_rows_that_kill_their_worker_costs_only_those_rows():
    rs = RewardSet.from_dict({"workers": 2, "rewards": {"d": {"reward": "dies"}}})
    batch = [{"completion": "die" if i < 16 else f"fine {i}"} for i in range(64)]
    res = rs.score(batch)
    assert all(s.status is Status.ERROR and "exited with code 3" in s.reason
               for s in res.scores("d")[:16])
    assert res.values("d")[16:] == [1.0] * 48


def test_one_worker_tries_a_burst_of_rows_that_kill_it_spread_over_the_batch():
    # one worker gets the strided chunks joined into messages of up to 256 rows, tried in
    # the strided order: 17 adjacent rows that kill it are not the first 17 tried, so the
    # breaker (16 failures, 90% of those tried) does not give up on the batch
    rs = RewardSet.from_dict({"workers": 1, "rewards": {"d": {"reward": "dies"}}})
    batch = [{"completion": "die" if i < 17 else f"fine {i}"} for i in range(340)]
    res = rs.score(batch)
    assert all(s.status is Status.ERROR and "exited with code 3" in s.reason
               for s in res.scores("d")[:17])
    assert res.values("d")[17:] == [1.0] * 323


def test_scattered_hangs_with_many_workers_cost_only_those_rows():
    rs = RewardSet.from_dict({"workers": 8,
                              "rewards": {"h": {"reward": "hangs", "timeout": 1}}})
    hanging = set(range(0, 16, 2))  # the first item of each worker's first chunk, once
    batch = [{"completion": "hang" if i in hanging else f"fine {i}"} for i in range(64)]
    res = rs.score(batch)
    for i, score in enumerate(res.scores("h")):
        assert (score.status is Status.TIMEOUT) == (i in hanging), (i, score)
    assert sum(v == 1.0 for v in res.values("h")) == 56


def test_reward_failing_on_every_input_is_stopped_and_says_so():
    rs = RewardSet.from_dict({"rewards": {"x": {"reward": "always_dies"}}})
    res = rs.score([{"completion": str(i)} for i in range(200)])
    reasons = [s.reason for s in res.scores("x")]
    assert all(s.status is Status.ERROR for s in res.scores("x"))
    given_up = [r for r in reasons if r.startswith("not run: the reward failed on")]
    assert given_up and "samples tried in this call" in given_up[0]
    assert len(reasons) - len(given_up) <= 16 + 2  # the tries before the breaker


# -- 2. huge finite values ----------------------------------------------------------------
@pytest.mark.parametrize("aggregate", ["weighted_sum", "normalize_then_sum"])
def test_huge_reward_values_are_errors_never_inf_or_an_exception(aggregate):
    rs = RewardSet.from_dict({"aggregate": aggregate,
                              "rewards": {"h": {"reward": "huge", "weight": 1000}}})
    batch = [{"prompt": "p", "completion": "huge" if i in (1, 2) else "x"} for i in range(6)]
    res = rs.score(batch)
    huge = res[1].scores["h"]
    assert huge.status is Status.ERROR and "beyond the value bound" in huge.reason
    assert all(t is None or math.isfinite(t) for t in res.totals)
    assert res.totals[1] is None and res.totals[0] is not None
    strict_json(json.dumps(res.metrics, allow_nan=False).replace("NaN", "null"))
    assert all(math.isfinite(v) for v in res.flat_metrics().values())


def test_an_integer_past_the_float_range_is_that_rows_error_not_the_runs_end(tmp_path):
    """A grader that evaluates the model's expression may return an int such as 10**400
    (a JSON row can hold one too: ``metadata_value`` returns it as given). Its error text
    formatted it as a float (``{value:.6g}``): OverflowError out of RewardSet.score, so
    one row ended the whole call (and ``rewardkit score``, with a traceback); a Score
    holding it did the same. Now that row is an error naming the bound."""
    from rewardkit.types import coerce_value

    for value in (10**400, -(10**5000), Score(10**400)):
        score = coerce_value(value)
        assert score.status is Status.ERROR and "beyond the value bound" in score.reason
        assert "digits" in score.reason
    assert "1e+20" in coerce_value(10**20).reason  # within the float range: its value
    rs = RewardSet.from_dict({"rewards": {"v": {"reward": "metadata_value"}}})
    res = rs.score([{"completion": "x", "metadata": {"value": v}} for v in (1, 10**400, 2)])
    assert res.values("v") == [1.0, None, 2.0]
    assert res.outcomes["v"].score(1).status is Status.ERROR
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  v: {reward: metadata_value}\n")
    src = tmp_path / "in.jsonl"
    src.write_text("".join('{"completion": "x", "metadata": {"value": ' + v + "}}\n"
                           for v in ("1", "9" * 400, "2")))
    out = tmp_path / "out.jsonl"
    proc = cli("score", str(cfg), str(src), "--out", str(out))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    rows = [strict_json(line) for line in out.read_text().splitlines()]
    assert [r["reward"] for r in rows] == [1.0, None, 2.0]  # type: ignore[index]


def test_a_reason_of_megabytes_is_cut_where_the_verdict_is_taken():
    """A reward whose reason holds a whole input (a 5 MB completion echoed, a parser's
    dump) kept it whole in every row: 1,024 rows a batch of 5 MB reasons held 5 GB and
    wrote them all out. A reward's reason is cut at MAX_REASON_CHARS where its verdict is
    taken (inline, group and process mode alike), saying how much was cut; an exception's
    text was already cut at 500 characters."""
    from rewardkit.types import MAX_REASON_CHARS, coerce_value

    for verdict in (Score(0.5, Status.OK, "r" * 5_000_000), Score.skip("s" * 5_000_000),
                    Score.error("e" * 5_000_000)):
        score = coerce_value(verdict)
        assert len(score.reason) <= MAX_REASON_CHARS + 60, len(score.reason)
        assert score.reason.endswith(f"({5_000_000 - MAX_REASON_CHARS:,} characters cut)")
        assert (score.status, score.value) == (verdict.status, verdict.value)
    short = Score(0.5, Status.OK, "r" * MAX_REASON_CHARS)
    assert coerce_value(short) is short  # a reason within the bound is untouched


def test_huge_values_through_the_cli_give_standard_json(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  h: {reward: huge}\n")
    src = write_jsonl(tmp_path / "in.jsonl",
                      [{"prompt": "p", "completion": c} for c in ("huge", "x", "huge")])
    out = tmp_path / "out.jsonl"
    proc = cli("score", str(cfg), str(src), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    strict_json(proc.stdout)
    rows = [strict_json(line) for line in out.read_text().splitlines()]
    assert [r["reward"] for r in rows] == [None, 1.0, None]  # type: ignore[index]


# -- 3. BaseException from a reward -------------------------------------------------------
def test_sys_exit_in_an_inline_reward_is_that_rows_error():
    rs = RewardSet.from_dict({"rewards": {"e": {"reward": "exits"}}})
    res = rs.score([{"completion": "exit"}, {"completion": "fine"}])
    assert res[0].scores["e"].status is Status.ERROR
    assert "SystemExit" in res[0].scores["e"].reason
    assert res.values("e")[1] == 1.0


def test_sys_exit_in_an_inline_reward_through_the_cli(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  e: {reward: exits}\n")
    src = write_jsonl(tmp_path / "in.jsonl", [{"completion": "exit"}, {"completion": "ok"}])
    out = tmp_path / "out.jsonl"
    proc = cli("score", str(cfg), str(src), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["components"]["e"]["status"] == "error"
    assert rows[1]["reward"] == 1.0


def test_sys_exit_in_an_async_reward_is_that_rows_error_within_the_timeout():
    rs = RewardSet.from_dict({"rewards": {"a": {"reward": "async_exits", "timeout": 2}}})
    box: dict[str, object] = {}
    t = threading.Thread(target=lambda: box.update(
        res=rs.score([{"completion": "exit"}, {"completion": "fine"}])), daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "score() hung"
    res = box["res"]
    assert res[0].scores["a"].status is Status.ERROR  # type: ignore[index]
    assert "SystemExit" in res[0].scores["a"].reason  # type: ignore[index]
    assert res.values("a")[1] == 1.0  # type: ignore[attr-defined]


def test_cancelled_error_from_an_async_reward_costs_only_its_row():
    rs = RewardSet.from_dict({"rewards": {"a": {"reward": "async_exits"}}})
    res = rs.score([{"completion": "fine"}, {"completion": "cancel"}, {"completion": "ok"}])
    assert res.values("a") == [1.0, None, 1.0]
    assert "CancelledError" in res[1].scores["a"].reason


def test_sys_exit_in_a_process_reward_is_that_rows_error():
    rs = RewardSet.from_dict({"rewards": {"p": {"reward": "process_exits"}}})
    res = rs.score([{"completion": "exit"}, {"completion": "fine"}])
    assert res[0].scores["p"].status is Status.ERROR
    assert "SystemExit" in res[0].scores["p"].reason
    assert res.values("p")[1] == 1.0


# -- 4. blocking code in an async reward ----------------------------------------------------
def test_blocking_code_in_an_async_reward_respects_the_timeout():
    rs = RewardSet.from_dict({"rewards": {"a": {"reward": "async_blocks", "timeout": 1}}})
    start = time.monotonic()
    res = rs.score([{"completion": "fine"}, {"completion": "block"}, {"completion": "ok"}])
    assert time.monotonic() - start < 8  # the 1 s timeout, not the 20 s sleep
    assert res[1].scores["a"].status is Status.TIMEOUT
    assert res.values("a")[0] == 1.0 and res.values("a")[2] == 1.0
    again = rs.score([{"completion": "fine"}])  # a fresh event loop serves the next call
    assert again.values("a") == [1.0]


# -- 5. non-finite or absurd config numbers ----------------------------------------------
@pytest.mark.parametrize(
    ("yaml_text", "key_path"),
    [
        ("rewards:\n  f: {reward: soft_format, weight: .nan}\n", "rewards.f.weight"),
        ("rewards:\n  f: {reward: soft_format, weight: .inf}\n", "rewards.f.weight"),
        ("rewards:\n  f: {reward: soft_format, weight: 1e400}\n", "rewards.f.weight"),
        ("rewards:\n  f: {reward: soft_format, weight: 1e300}\n", "rewards.f.weight"),
        ("rewards:\n  f:\n    reward: soft_format\n    weight: {schedule: linear, start: 0,"
         " end: .nan, steps: 10}\n", "rewards.f.weight.end"),
        ("limits: {oversize_value: .nan}\nrewards:\n  f: {reward: soft_format}\n",
         "limits.oversize_value"),
        ("rewards:\n  f: {reward: soft_format, timeout: 1e9}\n", "rewards.f.timeout"),
        ("rewards:\n  f: {reward: soft_format, timeout: .inf}\n", "rewards.f.timeout"),
        ("workers: 100000\nrewards:\n  f: {reward: soft_format}\n", "workers"),
        ("rewards:\n  o:\n    reward: overlong_penalty\n    params: {max_length: 10,"
         " buffer: 5, penalty: .nan}\n", "rewards.o.params.penalty"),
    ],
)
def test_non_finite_or_absurd_config_numbers_are_refused_with_the_key_path(
        tmp_path, yaml_text, key_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml_text)
    proc = cli("validate", str(cfg))
    assert proc.returncode == 2, proc.stdout
    assert f"{key_path}:" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- 6. stale answers after an interrupted call --------------------------------------------
def test_interrupted_call_leaks_no_answer_into_the_next_call(ctrl_c):
    rs = RewardSet.from_dict({"workers": 2, "rewards": {"e": {"reward": "echo_after"}}})
    rs.score([{"completion": "warm", "v": 0}] * 2)
    ctrl_c = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    ctrl_c.start()
    with pytest.raises(KeyboardInterrupt):  # both workers busy with chunks of 2 items
        rs.score([{"completion": "slow", "v": 1001, "sleep": 2}] * 16)
    ctrl_c.join()
    assert rs.score([{"completion": "a", "v": 1}]).values("e") == [1.0]
    res = rs.score([{"completion": str(i), "v": i} for i in range(16)])
    assert res.values("e") == [float(i) for i in range(16)]


# -- 7. orphans ---------------------------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize(("sig", "whole_group"), [
    (signal.SIGKILL, False), (signal.SIGTERM, False),
    (signal.SIGKILL, True),  # a scheduler killing the job's process group, reaper included
])
def test_workers_die_with_their_parent_however_it_dies(tmp_path, sig, whole_group):
    pidfile = tmp_path / "worker.pid"
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import faulty_rewards\n"
        "from rewardkit import RewardSet, registry\n"
        "for cls in faulty_rewards.ALL:\n"
        "    registry.register(cls, 'tests')\n"
        "rs = RewardSet.from_dict({'workers': 1, 'rewards': {'r': {'reward': "
        "'catastrophic_regex', 'timeout': 600}}})\n"
        f"rs.score([{{'completion': 'x', 'pidfile': {str(pidfile)!r}}}])\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, start_new_session=whole_group)
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    worker = int(pidfile.read_text())
    time.sleep(0.5)  # the worker is now inside the regex, holding its GIL
    assert _alive(worker)
    if whole_group:
        os.killpg(parent.pid, sig)
    else:
        parent.send_signal(sig)
    parent.communicate(timeout=20)  # nobody holds the caller's pipes
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = _alive(worker)
    if alive:
        os.kill(worker, signal.SIGKILL)
    assert not alive, "the worker outlived its parent"


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(c) for c in fh.read().split()]
    except OSError:
        return []


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.parametrize("reaper_first", [False, True])
def test_idle_workers_of_the_shared_pool_die_with_their_parent(tmp_path, reaper_first):
    """The process-wide pool keeps its workers between calls (a trainer's scoring process,
    a pytest worker): idle, they wait on their pipe. Kill the parent (SIGKILL: no atexit,
    no pool close) while they idle, also after the reaper process was killed first (a
    scheduler's kill -9 of everything in any order): each worker still exits by itself
    within seconds (its pipe closes; it watches its parent), never left an orphan."""
    ready = tmp_path / "ready"
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, time, pathlib\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import faulty_rewards\n"
        "from rewardkit import RewardSet, registry\n"
        "for cls in faulty_rewards.ALL:\n"
        "    registry.register(cls, 'tests')\n"
        "rs = RewardSet.from_dict({'workers': 2, 'rewards': {'r': {'reward': 'dies'}}})\n"
        "assert rs.score([{'completion': f'fine {i}'} for i in range(4)]).totals == [1.0] * 4\n"
        f"pathlib.Path({str(ready)!r}).write_text('ok')\n"
        "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert parent.poll() is None, parent.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "the parent never scored"
            time.sleep(0.1)
        children = _children(parent.pid)
        workers = [c for c in children if "rewardkit.execution.worker" in _cmdline(c)]
        reapers = [c for c in children if c not in workers and "-c" in _cmdline(c)]
        assert len(workers) == 2 and all(_alive(w) for w in workers), children
        if reaper_first:
            assert len(reapers) == 1, children
            os.kill(reapers[0], signal.SIGKILL)
            time.sleep(0.5)
            assert all(_alive(w) for w in workers)  # the reaper's death kills nothing
        parent.kill()
        parent.communicate(timeout=20)
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [w for w in workers if _alive(w)]
        assert not left, f"idle workers {left} outlived their parent by 10 s"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.communicate(timeout=20)
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


# -- 8. valid JSON lines that crashed the run -----------------------------------------------
def test_hostile_but_valid_json_lines_are_scored_or_reported_by_line(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  g: {reward: good}\n  p: {reward: worker_pid, weight: 0}\n")
    deep = "[" * 995 + "]" * 995
    meta = '{"a":' * 500 + "1" + "}" * 500
    lines = [
        json.dumps({"completion": "fine"}),
        '{"completion": "x \\ud83d"}',
        '{"completion": "deep", "m": ' + deep + "}",
        '{"completion": "meta", "m": ' + meta + "}",
        json.dumps({"completion": "last"}),
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    proc = cli("score", str(cfg), str(src), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{src}:3: skipped: nested more than" in proc.stderr
    assert f"{src}:4: skipped: nested more than" in proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["completion"] for r in rows] == ["fine", "x \ud83d", "last"]
    assert rows[1]["reward"] == 3.0
    assert not list(tmp_path.glob("*.partial"))


def test_a_line_with_an_integer_too_long_to_read_says_so_in_the_files_terms():
    """A 5,000-digit integer in a scored line (both engines' reader): the skip reason was
    Python's own ("Exceeds the limit (4300 digits) for integer string conversion ...; use
    sys.set_int_max_str_digits() to increase the limit"), advice no user of the CLI can
    take. It now says what the serve and config readers say: the number is too long."""
    from rewardkit.scoring.rows import parse_line

    for raw in (b'{"completion": "4", "group": ' + b"9" * 5000 + b"}",
                b'{"completion": "4", "m": [1, -' + b"7" * 4301 + b"]}"):
        row, why = parse_line(raw, 2)
        assert row is None
        assert "too long to read" in why and "over 4,300 digits" in why, why
        assert "sys." not in why, why
    row, why = parse_line(b'{"completion": "4", "group": ' + b"9" * 4300 + b"}", 2)
    assert why == "" and row is not None  # at the limit: read


def test_sample_that_cannot_be_pickled_is_its_rows_error_in_process_mode():
    nested: dict[str, object] = {}
    inner = nested
    for _ in range(5000):
        inner["a"] = {}
        inner = inner["a"]  # type: ignore[assignment]
    with pytest.raises(RecursionError):
        import pickle

        pickle.dumps(nested)
    rs = RewardSet.from_dict({"rewards": {"p": {"reward": "worker_pid"}}})
    res = rs.score([Sample(completion="fine"), Sample(completion="deep", metadata=nested),
                    Sample(completion="also fine")])
    assert res[1].scores["p"].status is Status.ERROR
    assert "cannot be sent to a worker process" in res[1].scores["p"].reason
    assert res.values("p")[0] is not None and res.values("p")[2] is not None


# -- 9. groups split across batches ---------------------------------------------------------
def test_groups_are_scored_whole_wherever_their_rows_are(tmp_path):
    import random

    cfg = tmp_path / "c.yaml"
    cfg.write_text("aggregate: normalize_then_sum\nrewards:\n  g: {reward: good}\n")
    rows = [{"prompt": f"prompt {p}", "completion": "x" * ((p * 7 + k * 3) % 11), "k": k}
            for p in range(50) for k in range(4)]
    random.Random(0).shuffle(rows)
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    small = tmp_path / "small.jsonl"
    proc = cli("score", str(cfg), str(src), "--out", str(small), "--batch-size", "8")
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(line) for line in small.read_text().splitlines()]
    assert [(r["prompt"], r["k"]) for r in got] == [(r["prompt"], r["k"]) for r in rows]
    one_batch = RewardSet.from_file(cfg).score(rows).totals
    assert [r["reward"] for r in got] == pytest.approx(one_batch)


# -- 10. YAML alias bombs -------------------------------------------------------------------
BOMB = "\n".join(
    ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)])


@pytest.mark.parametrize("where", ["params", "when"])
def test_yaml_alias_bomb_is_refused_quickly(tmp_path, where):
    cfg = tmp_path / "bomb.yaml"
    if where == "params":
        body = "rewards:\n  k:\n    reward: keyword_coverage\n    params: {keywords: *a9}\n"
    else:
        body = "rewards:\n  f:\n    reward: soft_format\n    when: {task: *a9}\n"
    cfg.write_text("x:\n" + "\n".join("  " + line for line in BOMB.splitlines()) + "\n"
                   + body.replace("*a9", "*a9"))
    start = time.monotonic()
    proc = cli("validate", str(cfg), timeout=60)
    assert proc.returncode == 2
    assert "expands to more than" in proc.stderr
    assert time.monotonic() - start < 10  # interpreter start on a busy machine; parse < 1 s


def test_yaml_loading_refuses_an_alias_bomb_in_well_under_a_second(tmp_path):
    from rewardkit import ConfigError, load_config

    cfg = tmp_path / "bomb.yaml"
    cfg.write_text("x:\n" + "\n".join("  " + line for line in BOMB.splitlines())
                   + "\nrewards:\n  f:\n    reward: soft_format\n    when: {task: *a9}\n")
    start = time.process_time()  # CPU: the cost, whatever the machine's load
    with pytest.raises(ConfigError, match="expands to more than"):
        load_config(cfg)
    assert time.process_time() - start < 0.5


# -- 11. the .partial output file -------------------------------------------------------------
def test_interrupted_scoring_removes_its_partial_output(tmp_path, ctrl_c):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  e: {reward: echo_after}\n")
    src = write_jsonl(tmp_path / "in.jsonl",
                      [{"completion": str(i), "v": i, "sleep": 30} for i in range(4)])
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, FAULTY_CLI, "score", str(cfg), str(src),
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("*.partial")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(tmp_path.glob("*.partial"))
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert not list(tmp_path.glob("*.partial")) and not out.exists()


def test_a_planted_partial_symlink_is_not_followed(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  g: {reward: good}\n")
    src = write_jsonl(tmp_path / "in.jsonl", [{"completion": "abc"}])
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.partial").symlink_to(victim)
    (tmp_path / ".out.jsonl.partial").symlink_to(victim)
    assert cli("score", str(cfg), str(src), "--out", str(out)).returncode == 0
    assert victim.read_text() == "precious"
    assert json.loads(out.read_text())["reward"] == 3.0


def test_an_input_named_like_the_partial_file_is_never_truncated(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  g: {reward: good}\n")
    out = tmp_path / "out.jsonl"
    src = write_jsonl(tmp_path / "out.jsonl.partial", [{"completion": "abc"}] * 3)
    before = src.read_bytes()
    proc = cli("score", str(cfg), str(src), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    assert src.read_bytes() == before
    assert json.loads(proc.stdout)["scored"] == 3
    assert len(out.read_text().splitlines()) == 3


def test_output_onto_the_input_is_refused(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  g: {reward: good}\n")
    src = write_jsonl(tmp_path / "in.jsonl", [{"completion": "abc"}])
    before = src.read_bytes()
    proc = cli("score", str(cfg), str(src), "--out", str(src))
    assert proc.returncode == 2 and "is the input file" in proc.stderr
    assert src.read_bytes() == before


# -- 12. duplicate keys -----------------------------------------------------------------------
def test_duplicate_component_names_are_an_error_naming_both_lines(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  fmt: {reward: soft_format}\n  words: {reward: good}\n"
                   "  fmt: {reward: strict_format}\n")
    proc = cli("validate", str(cfg))
    assert proc.returncode == 2
    assert "duplicate key 'fmt' at line 4 (first at line 2)" in proc.stderr


# -- 13. thousands of components ---------------------------------------------------------------
def test_any_number_of_components_that_validates_also_scores():
    rs = RewardSet.from_dict({"rewards": {f"c{i}": {"reward": "good", "weight": 0.5}
                                          for i in range(5000)}})
    res = rs.score([{"completion": "abc"}, {"completion": "a"}])
    assert res.totals == [7500.0, 2500.0]


# -- 14. smaller ones -------------------------------------------------------------------------
def test_a_bare_carriage_return_does_not_split_a_line(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  g: {reward: good}\n")
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"completion": "ab",\r "id": 1}\n{"completion": "abc", "id": 2}\n'
                    b"{broken\n")
    out = tmp_path / "out.jsonl"
    proc = cli("score", str(cfg), str(src), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["reward"]) for r in rows] == [(1, 2.0), (2, 3.0)]
    assert f"{src}:3: skipped: invalid JSON" in proc.stderr


def test_invalid_utf8_is_reported_per_line_not_replaced(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  g: {reward: good}\n")
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"completion": "ok"}\n{"completion": "bad \xff byte"}\n'
                    b'{"completion": "fine"}\n')
    out = tmp_path / "out.jsonl"
    proc = cli("score", str(cfg), str(src), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"{src}:2: skipped: invalid UTF-8" in proc.stderr
    assert [json.loads(x)["completion"] for x in out.read_text().splitlines()] == ["ok", "fine"]


def test_standard_input_and_pipes_are_accepted(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  g: {reward: good}\n")
    text = json.dumps({"completion": "abc"}) + "\n" + json.dumps({"completion": "a"}) + "\n"
    out = tmp_path / "out.jsonl"
    proc = cli("score", str(cfg), "-", "--out", str(out), stdin=text)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(x)["reward"] for x in out.read_text().splitlines()] == [3.0, 1.0]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "w") as fh:
            fh.write(text)

    writer = threading.Thread(target=feed)
    writer.start()
    out2 = tmp_path / "out2.jsonl"
    proc = cli("score", str(cfg), str(fifo), "--out", str(out2))
    writer.join(10)
    assert proc.returncode == 0, proc.stderr
    assert out2.read_text() == out.read_text()


def test_groups_from_a_pipe_are_scored_whole(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("aggregate: normalize_then_sum\nrewards:\n  g: {reward: good}\n")
    rows = [{"prompt": p, "completion": c} for p, c in
            (("a", "x"), ("b", "xx"), ("a", "xxx"), ("b", "x"))]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    out = tmp_path / "out.jsonl"
    proc = cli("score", str(cfg), "-", "--out", str(out), "--batch-size", "1", stdin=text)
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(x)["reward"] for x in out.read_text().splitlines()]
    assert got[0] == pytest.approx(-got[2]) and got[0] < 0
    assert got[1] == pytest.approx(-got[3]) and got[1] > 0


def test_output_to_a_folder_fails_before_scoring(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  e: {reward: echo_after}\n")
    src = write_jsonl(tmp_path / "in.jsonl", [{"completion": "a", "v": 1, "sleep": 30}])
    start = time.monotonic()
    proc = cli("score", str(cfg), str(src), "--out", str(tmp_path))
    assert time.monotonic() - start < 25
    assert proc.returncode == 2
    assert "is a folder" in proc.stderr


def test_unknown_reward_names_the_plugin_that_failed_to_import(tmp_path):
    site = tmp_path / "site"
    dist = site / "rewardkit_broken-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rewardkit-broken\n"
                                   "Version: 0.1\n")
    (dist / "entry_points.txt").write_text("[rewardkit]\nbroken = rewardkit_broken\n")
    (site / "rewardkit_broken.py").write_text("import a_module_that_is_not_installed\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  b: {reward: broken_reward}\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "validate", str(cfg)],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2
    assert "unknown reward 'broken_reward'" in proc.stderr
    assert "a_module_that_is_not_installed" in proc.stderr


def test_reward_defined_in_a_script_runs_with_a_timeout(tmp_path):
    script = tmp_path / "my_script.py"
    script.write_text(
        "from rewardkit import RewardSet, Sample, registry, reward\n\n"
        "@reward\n"
        "def brevity(sample: Sample) -> float:\n"
        "    return 1.0 if len(sample.text) < 5 else 0.0\n\n"
        "if __name__ == '__main__':\n"
        "    registry.register(brevity)\n"
        "    rs = RewardSet.from_dict({'rewards': {'b': {'reward': 'brevity',"
        " 'timeout': 10}}})\n"
        "    res = rs.score([{'completion': 'ok'}, {'completion': 'far too long'}])\n"
        "    print(res.values('b'), [s.reason for s in res.scores('b')])\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("[1.0, 0.0]"), proc.stdout


# -- 15. memory grows with the file ----------------------------------------------------------
def _peak_rss_mb_of_score(tmp_path: Path, rows: int) -> float:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  fmt: {reward: soft_format}\n  w: {reward: word_count_range}\n")
    src = tmp_path / f"in{rows}.jsonl"
    with src.open("w") as fh:
        for i in range(rows):
            fh.write(f'{{"prompt": "q{i // 4}", "completion": "<answer>{i % 7}</answer>"}}\n')
    proc = subprocess.Popen([sys.executable, "-m", "rewardkit.cli", "score", str(cfg),
                             str(src), "--out", str(tmp_path / "out.jsonl"), "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0
    src.unlink()
    return usage.ru_maxrss / 1024


@pytest.mark.slow
def test_score_memory_does_not_grow_with_the_file(tmp_path):
    small = _peak_rss_mb_of_score(tmp_path, 20_000)
    large = _peak_rss_mb_of_score(tmp_path, 200_000)
    # the summary once kept 0.3-0.5 KB per row: 55-90 MB more for the larger file
    assert large - small < 20, (small, large)


# -- 16. a worker's child outlives its timeout --------------------------------------------
def _orphan_sleeps() -> list[int]:
    """Live processes running ``faulty_rewards.outlives_its_timeout``'s ``sleep``."""
    import faulty_rewards

    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmdline[:2] == [b"sleep", faulty_rewards.ORPHAN_SLEEP.encode()] and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_child_process_outliving_its_timeout_leaks_no_fd_thread_or_process():
    rs = RewardSet.from_dict({"workers": 2, "rewards": {
        "s": {"reward": "outlives_its_timeout", "timeout": 0.5}}})
    rs.score([{"completion": "warm up"}] * 4)  # the pool is up: what it holds when idle
    fds, threads = len(os.listdir("/proc/self/fd")), threading.active_count()
    for _ in range(3):  # 24 timeouts; the killed workers' `sleep`s hold their stdout
        batch = [{"completion": "slow" if i % 2 == 0 else f"fine {i}"} for i in range(16)]
        res = rs.score(batch)
        assert [str(s.status) for s in res.scores("s")] == ["timeout", "ok"] * 8
    deadline = time.monotonic() + 5
    while _orphan_sleeps() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _orphan_sleeps() == []  # the worker's whole process group was killed
    # no growth over 24 timeouts (a leak adds one of each per timeout); fewer is fine: other
    # tests' pools, collected meanwhile in this process, close theirs
    assert len(os.listdir("/proc/self/fd")) <= fds
    assert threading.active_count() <= threads


# -- 17. a plugin that exits at import --------------------------------------------------------
def _plugin_site(tmp_path: Path, name: str, source: str) -> dict[str, str]:
    """An environment in which an installed plugin ``name`` is the module ``source``."""
    site = tmp_path / "site"
    dist = site / f"rewardkit_{name}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: rewardkit-{name}\n"
                                   "Version: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[rewardkit]\n{name} = rewardkit_{name}\n")
    (site / f"rewardkit_{name}.py").write_text(source)
    return {**os.environ, "PYTHONPATH": str(site)}


@pytest.mark.parametrize("source", [
    "import argparse\nargparse.ArgumentParser().parse_args()\n",  # a script's parser
    "import sys\nsys.exit(0)\n",
    "import sys\nfrom rewardkit import hookimpl\n\n@hookimpl\n"
    "def register_rewards(register):\n    sys.exit(3)\n",  # exits in its hook
])
def test_a_plugin_that_exits_at_import_is_a_failed_plugin(tmp_path, source):
    env = _plugin_site(tmp_path, "exits", source)
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "plugins", "--json"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    listed = {p["name"]: p for p in json.loads(proc.stdout)}
    assert "SystemExit(" in listed["exits"]["error"], listed["exits"]
    assert all(p["error"] == "" for n, p in listed.items() if n != "exits")  # the others load
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  f: {reward: soft_format}\n")
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "validate", str(cfg)],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr


# -- 18. numbers too long to read, nesting too deep to read ---------------------------------
@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("c.yaml", "rewards:\n  f: {reward: soft_format, weight: " + "9" * 5000 + "}\n",
         "line 2: an integer of 5000 digits"),
        ("c.toml", "[rewards.f]\nreward = 'soft_format'\nweight = " + "9" * 5000 + "\n",
         "line 3: an integer of 5000 digits"),
        ("c.toml", "[rewards.f]\nreward = 'soft_format'\nweight = " + "9_" * 4400 + "9\n",
         "line 3: an integer of 4401 digits"),
        ("c.yaml", "rewards:\n  f: {reward: soft_format}\nx: " + "[" * 20_000 + "\n",
         "nested too deeply"),
        ("c.toml", "x = " + "[" * 20_000 + "\n", "nested too deeply"),
        ("c.yaml", "rewards:\n  f: {reward: soft_format}\nx: " + "{a: " * 20_000 + "\n",
         "nested too deeply"),
    ],
)
def test_huge_numbers_and_deep_nesting_in_a_config_are_refused_not_a_traceback(
        tmp_path, name, text, says):
    cfg = tmp_path / name
    cfg.write_text(text)
    proc = cli("validate", str(cfg))
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert says in proc.stderr, proc.stderr


# -- 19. one huge line -------------------------------------------------------------------------
def test_a_line_over_the_byte_cap_is_refused_while_it_is_read(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  fmt: {reward: soft_format}\n")
    src = tmp_path / "in.jsonl"
    with src.open("wb") as fh:
        fh.write(b'{"completion": "<answer>1</answer>"}\n')
        fh.write(b'{"completion": "' + b"x" * 100_000_000 + b'"}\n')  # 100 MB, one line
        fh.write(b'{"completion": "<answer>2</answer>"}\n')
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "rewardkit.cli", "score", str(cfg),
                             str(src), "--out", str(out), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr.decode()[-2000:]
    summary = json.loads(stdout)
    assert summary["scored"] == 2
    assert summary["bad_lines"] == [
        [2, "line longer than 16,000,000 bytes (limits.max_line_bytes): not read"]]
    assert [json.loads(line)["completion"] for line in out.read_text().splitlines()] == [
        "<answer>1</answer>", "<answer>2</answer>"]
    src.unlink()


def test_score_memory_is_bounded_by_the_line_cap_not_the_line(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("limits: {max_line_bytes: 1000000}\nrewards:\n  fmt: {reward: soft_format}\n")
    src = tmp_path / "in.jsonl"
    with src.open("wb") as fh:
        fh.write(b'{"completion": "')
        for _ in range(100):
            fh.write(b"x" * 1_000_000)  # one line of 100 MB
        fh.write(b'"}\n')
    # the peak RSS of `rewardkit score` alone, measured by a small parent (a child forked
    # from this test process would count this process's memory too)
    measure = ("import os, subprocess, sys\n"
               "proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
               "_, status, usage = os.wait4(proc.pid, 0)\n"
               "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n")
    proc = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m",
                           "rewardkit.cli", "score", str(cfg), str(src), "--out",
                           str(tmp_path / "out.jsonl"), "--json"],
                          capture_output=True, text=True, timeout=120)
    code, peak_kb = map(int, proc.stdout.split())
    assert code == 0, proc.stderr
    src.unlink()
    # reading the 100 MB line whole once peaked at 4.2 times its size
    assert peak_kb / 1024 < 100, peak_kb / 1024


# -- 20. a plugin whose import hangs ---------------------------------------------------------
_HANGS_AT_IMPORT = "import time\nwhile True:\n    time.sleep(60)\n"


@pytest.mark.parametrize("command", [["plugins", "--json"], ["rewards", "--json"],
                                     ["validate", "CFG"],
                                     ["score", "CFG", "ROWS", "--out", "-"]])
def test_a_plugin_whose_import_hangs_is_a_failed_plugin_named_not_a_hang(tmp_path, command):
    """A plugin whose import never ends (a model download, a server it waits for) hung
    every command, with no message: the plugins are imported before any command runs.
    Its import is now given REWARDKIT_PLUGIN_IMPORT_TIMEOUT seconds; past that the plugin
    is a failed plugin named with its entry point, the command goes on without it."""
    env = _plugin_site(tmp_path, "hangs", _HANGS_AT_IMPORT)
    env["REWARDKIT_PLUGIN_IMPORT_TIMEOUT"] = "2"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  f: {reward: soft_format}\n")
    rows = write_jsonl(tmp_path / "in.jsonl", [{"completion": "<answer>1</answer>"}])
    args = [str(cfg) if a == "CFG" else str(rows) if a == "ROWS" else a for a in command]
    try:
        proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", *args],
                              capture_output=True, text=True, timeout=45, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"rewardkit {' '.join(command)} hung on a plugin whose import hangs")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    said = ("plugin hangs (rewardkit-hangs): its import did not finish within 2 s "
            "(entry point hangs = rewardkit_hangs)")
    assert said in proc.stderr, proc.stderr
    if command[0] == "plugins":
        listed = {p["name"]: p for p in json.loads(proc.stdout)}
        assert "did not finish within 2 s" in listed["hangs"]["error"]
        assert all(p["error"] == "" for n, p in listed.items() if n != "hangs")


def test_a_reward_of_a_plugin_whose_import_hangs_is_unknown_naming_the_plugin(tmp_path):
    env = _plugin_site(tmp_path, "hangs", _HANGS_AT_IMPORT)
    env["REWARDKIT_PLUGIN_IMPORT_TIMEOUT"] = "1"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rewards:\n  h: {reward: hanging_reward}\n")
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "validate", str(cfg)],
                          capture_output=True, text=True, timeout=45, env=env)
    assert proc.returncode == 2
    assert "unknown reward 'hanging_reward'" in proc.stderr
    assert "hangs (rewardkit-hangs): its import did not finish within 1 s" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- 21. details of megabytes ------------------------------------------------------------------
_SCORES_BIG_DETAILS = """
import json, sys
sys.path.insert(0, sys.argv[1])
import faulty_rewards
from rewardkit import RewardSet, registry
for cls in faulty_rewards.ALL:
    registry.register(cls, "tests")
rs = RewardSet.from_dict({"rewards": {"inline": {"reward": "big_details"},
                                      "process": {"reward": "process_big_details"}}})
result = rs.score([{"completion": c} for c in ("dump", "pairs", "small")])
print(json.dumps({"bytes": len(json.dumps(result.to_rows())), "rows": result.to_rows()}))
"""


def test_details_of_megabytes_are_cut_where_the_verdict_is_taken():
    """A reward whose details hold a whole input (5 MB of text, 200,000 [id, followed]
    pairs) kept them whole: every scored row held them (a 1,024-row batch gigabytes) and
    wrote them out (``ScoreResult.to_rows``, ``rewardkit test --json``). They are cut at
    MAX_DETAILS_CHARS where the verdict is taken, inline and process mode alike, saying
    what was cut; details within the bound are kept as they are. A process-mode ``ok``
    Score with a float value crossed to the parent without the reason's cut (row 48):
    its 5 MB reason is cut there too."""
    from rewardkit.types import MAX_DETAILS_CHARS, MAX_REASON_CHARS

    proc = subprocess.run([sys.executable, "-c", _SCORES_BIG_DETAILS, str(HERE)],
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    # before: 37,978,566 bytes
    assert got["bytes"] < 4 * MAX_DETAILS_CHARS + 2 * MAX_REASON_CHARS + 5_000, got["bytes"]
    dump, pairs, small = (row["components"] for row in got["rows"])
    for mode in ("inline", "process"):
        assert small[mode]["details"] == {"kind": "small",
                                          "followed": [["a", True], ["b", False]]}
        assert dump[mode]["reason"].endswith(
            f"... ({5_000_000 - MAX_REASON_CHARS:,} characters cut)"), mode
        for row, key in ((dump, "dump"), (pairs, "followed")):
            score = row[mode]
            assert (score["value"], score["status"]) == (1.0, "ok")
            details = score["details"]
            assert details["kind"] == key if key == "dump" else details["kind"] == "pairs"
            assert "characters cut" in details[key], details[key][-80:]
            assert details["details_cut"].startswith("details of "), details
            assert len(json.dumps(details)) <= MAX_DETAILS_CHARS + 300


# -- 22. pools of several sizes ----------------------------------------------------------------
_SCORES_WITH_THREE_POOL_SIZES = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import faulty_rewards
from rewardkit import RewardSet, registry
for cls in faulty_rewards.ALL:
    registry.register(cls, "tests")

def workers():
    with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as fh:
        children = [int(c) for c in fh.read().split()]
    found = []
    for pid in children:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"rewardkit.execution.worker" in fh.read():
                    found.append(pid)
        except OSError:
            pass
    return sorted(found)

seen = []
for size in (1, 2, 4, 1, 4, 2):
    rs = RewardSet.from_dict({"workers": size, "rewards": {"p": {"reward": "worker_pid"}}})
    pids = rs.score([{"completion": f"row {i}"} for i in range(16)]).values("p")
    seen.append({"size": size, "used": sorted({int(p) for p in pids}), "idle": workers()})
print(json.dumps(seen))
"""


def test_pools_of_several_sizes_keep_no_more_idle_workers_than_the_largest():
    """Each requested pool size kept its own workers for the process's life: scoring with
    workers 1, then 2, then 4 left 7 idle workers. A pool now takes over the idle workers
    of the others before it starts any: 1, 2, 4 leave 4, and going back to a size
    already seen starts none."""
    proc = subprocess.run([sys.executable, "-c", _SCORES_WITH_THREE_POOL_SIZES, str(HERE)],
                          capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr
    steps = json.loads(proc.stdout)
    assert [len(s["idle"]) for s in steps] == [1, 2, 4, 4, 4, 4], steps  # before: 1, 3, 7...
    for step in steps:
        assert len(step["used"]) <= step["size"]
        assert set(step["used"]) <= set(step["idle"]), step  # scored by the live workers
    # the last three steps use only workers the first three started
    assert {p for s in steps[3:] for p in s["idle"]} <= set(steps[2]["idle"]), steps
