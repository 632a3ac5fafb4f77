"""``executor: ray``: process-mode and sandboxed rewards scored by Ray actors on a real
three-node cluster give the values and statuses of local scoring, with the fault model
intact."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pytest
import ray
from ray_rewards import ALL

from rewardkit import RewardSet, Sample, registry
from rewardkit.config import RaySettings
from rewardkit.execution import ray as ray_executor
from rewardkit.execution import timeouts
from rewardkit.execution.dispatch import ray_wanted
from rewardkit.execution.ray import MAX_CHUNK, shared_executor


@pytest.fixture(autouse=True)
def _rewards(ray_cluster: object) -> Iterator[None]:
    for cls in ALL:
        registry.register(cls, "tests")
    yield
    for cls in ALL:
        registry.unregister(cls.name)
    # each test's actors hold the cluster's CPUs: free them for the next test
    ray_executor._close_executors()


def rows(texts: list[str], per_prompt: int = 1) -> list[dict]:
    return [{"prompt": f"p{i // per_prompt}", "completion": t} for i, t in enumerate(texts)]


def verdicts(result, name: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    return [(None if s.value is None or math.isnan(s.value) else round(s.value, 9),
             str(s.status)) for s in result.scores(name)]


def both(config: dict, samples: list[dict]):  # type: ignore[no-untyped-def]
    local = RewardSet.from_dict({**config, "executor": "local"}).score(samples)
    on_ray = RewardSet.from_dict({**config, "executor": "ray"}).score(samples)
    return local, on_ray


def test_process_reward_faults_give_the_same_values_and_statuses_as_locally() -> None:
    texts = [f"answer {'x' * i}" for i in range(40)]
    texts[5], texts[17], texts[23], texts[31] = "hang", "crash", "raise", "nan"
    config = {"workers": 1, "rewards": {"len": {"reward": "ray_faulty_length", "timeout": 2}}}
    local, on_ray = both(config, rows(texts))
    assert verdicts(on_ray, "len") == verdicts(local, "len")
    statuses = [s for _, s in verdicts(on_ray, "len")]
    assert statuses[5] == "timeout" and statuses[17] == "error" and statuses[23] == "error"
    assert statuses.count("ok") == 36
    assert on_ray.totals == local.totals


def test_actors_are_spread_over_the_nodes() -> None:
    executor = shared_executor(RaySettings())
    assert executor.size == 3  # one per CPU of the cluster
    nodes = {node for _, node in ray.get([a.where.remote() for a in executor.actors()])}
    assert len(nodes) == 3


def test_group_reward_sees_whole_groups_on_ray() -> None:
    texts = [f"c{'y' * ((i * 7) % 11)}" for i in range(48)]
    config = {"rewards": {"rank": {"reward": "ray_group_rank"}}}
    local, on_ray = both(config, rows(texts, per_prompt=8))
    assert verdicts(on_ray, "rank") == verdicts(local, "rank")
    assert all(s == "ok" for _, s in verdicts(on_ray, "rank"))


def test_a_dead_actor_costs_only_the_rows_of_its_chunk() -> None:
    texts = [f"row {i}" for i in range(200)]
    texts[77] = "die"
    rs = RewardSet.from_dict({"executor": "ray", "ray": {"actors": 2},
                              "rewards": {"k": {"reward": "ray_kills_its_process"}}})
    result = rs.score(rows(texts))
    scores = result.scores("k")
    failed = [i for i, s in enumerate(scores) if s.status != "ok"]
    assert 77 in failed
    assert 0 < len(failed) <= MAX_CHUNK
    assert all("Ray actor died" in scores[i].reason for i in failed)
    assert all(scores[i].value == float(len(texts[i]))
               for i in range(200) if i not in failed)
    # the actor was replaced: the next batch scores in full
    again = rs.score(rows([f"after {i}" for i in range(20)]))
    assert all(s.status == "ok" for s in again.scores("k"))


def test_an_actor_that_stops_answering_is_killed_and_only_its_chunk_times_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeouts, "CHUNK_SLACK", 1.0)
    rs = RewardSet.from_dict({"executor": "ray", "ray": {"actors": 2, "max_in_flight": 1},
                              "rewards": {"k": {"reward": "ray_kills_its_process",
                                                "timeout": 1}}})
    rs.score(rows([f"warm {i}" for i in range(16)]))  # both actors have the reward loaded
    texts = [f"row {i}" for i in range(40)]
    texts[10] = "block"  # stops the actor's process: no in-actor timeout can fire
    samples = rows(texts)
    # the rows sent with row 10: 8 chunks of 5, each with a deadline of 6 s
    blocked = next(c.indices for c in ray_executor._chunks(
        [Sample.from_dict(r) for r in samples], None, None, 2) if 10 in c.indices)
    t0 = time.monotonic()
    result = rs.score(samples)
    elapsed = time.monotonic() - t0
    scores = result.scores("k")
    # only that chunk: the other actor's chunks, answered while the driver asked the
    # stopped actor how far it got, are not taken for late
    assert [i for i, s in enumerate(scores) if s.status != "ok"] == blocked
    assert all(scores[i].status == "timeout" and "actor killed" in scores[i].reason
               for i in blocked)
    # the stopped actor was killed (at its deadline, plus the probe's wait), not
    # waited for: it would never answer
    assert elapsed < 30


def test_a_chunk_answered_while_the_driver_asked_a_stopped_actor_is_not_taken_for_late(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # at a stopped actor's deadline the driver waits PROBE_TIMEOUT for it to say how far
    # it got; the other actor's chunk, answered meanwhile, went past its own deadline
    # unread: that actor was killed too, its rows timed out, and the call waited for two
    # fresh actors (what the stopped-actor test above hit under load). A probe longer
    # than a chunk's deadline (2 rows: 0.5 s of work, 2.5 s allowed) makes it certain.
    monkeypatch.setattr(timeouts, "CHUNK_SLACK", 0.5)
    monkeypatch.setattr(ray_executor, "PROBE_TIMEOUT", 15.0)
    rs = RewardSet.from_dict({"executor": "ray", "ray": {"actors": 2, "max_in_flight": 1},
                              "rewards": {"k": {"reward": "ray_kills_its_process",
                                                "timeout": 1}}})
    rs.score(rows([f"warm {i}" for i in range(16)]))
    texts = ["slow"] * 16
    texts[1] = "block"  # the first chunk (2 rows), sent to the first actor
    samples = rows(texts)
    blocked = next(c.indices for c in ray_executor._chunks(
        [Sample.from_dict(r) for r in samples], None, None, 2) if 1 in c.indices)
    scores = rs.score(samples).scores("k")
    others = [(i, s.status, s.reason) for i, s in enumerate(scores)
              if s.status != "ok" and i not in blocked]
    assert not others, others[:3]
    assert all(scores[i].status == "timeout" for i in blocked)


def test_auto_executor_uses_ray_when_connected_to_a_cluster() -> None:
    assert ray.is_initialized()
    assert ray_wanted("auto") and ray_wanted("ray") and not ray_wanted("local")
    rs = RewardSet.from_dict({"executor": "auto",
                              "rewards": {"len": {"reward": "ray_faulty_length"}}})
    executor = shared_executor(RaySettings())
    before = {id(a) for a in executor.actors()}
    result = rs.score(rows(["a", "bb", "crash"]))
    assert [s for _, s in verdicts(result, "len")] == ["ok", "ok", "error"]
    assert {id(a) for a in executor.actors()} == before


def test_workers_reloading_a_slow_reward_cost_no_good_row_as_in_the_local_pool() -> None:
    # issue 28 item 10: each hang kills the actor's worker and its replacement imports the
    # reward's module again (4 s); the chunk deadline counted that time, so the actor was
    # killed and its good rows timed out, where the local pool starts a row's clock once
    # its worker is ready
    from slow_import_rewards import SlowImportLength

    registry.register(SlowImportLength, "tests")
    try:
        texts = [f"answer {'z' * i}" for i in range(64)]
        hangs = [1, 4, 7, 10, 13]  # all in the first chunk (16 rows on one actor)
        for i in hangs:
            texts[i] = "hang"
        config = {"workers": 1, "ray": {"actors": 1},
                  "rewards": {"len": {"reward": SlowImportLength.name, "timeout": 0.5}}}
        on_ray_set = RewardSet.from_dict({**config, "executor": "ray"})
        on_ray_set.score(rows(["warm"]))  # the actor and its worker have loaded the reward
        on_ray = on_ray_set.score(rows(texts))
        local = RewardSet.from_dict({**config, "executor": "local"}).score(rows(texts))
    finally:
        registry.unregister(SlowImportLength.name)
    assert [i for i, (_, s) in enumerate(verdicts(local, "len")) if s != "ok"] == hangs
    assert verdicts(on_ray, "len") == verdicts(local, "len")
