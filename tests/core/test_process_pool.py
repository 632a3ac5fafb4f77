"""The worker pool's batch protocol: chunks sent as columns, results through shared
memory and batched messages, two chunks held per worker. Same verdicts as inline; a
dead worker costs only its row, and the rows it had finished are kept, not run again."""

from __future__ import annotations

from pathlib import Path

from rewardkit import RewardSet, Sample, Status

KINDS = ["float", "int", "details", "reason", "none", "nan", "huge", "skip", "text", "raise"]


def _mixed(n: int) -> list[Sample]:
    return [Sample(prompt=f"q{i // 4}", completion=f"{KINDS[i % len(KINDS)]} row {i} " * 40,
                   reference=str(i), metadata={"row": i}) for i in range(n)]


def _scores(mode: str, samples: list[Sample], workers: int = 2) -> list:
    rs = RewardSet.from_dict({"workers": workers, "rewards": {
        "m": {"reward": "mixed_verdicts", "mode": mode}}})
    return rs.score(samples).scores("m")


def test_every_kind_of_verdict_is_the_same_in_a_worker_as_inline() -> None:
    samples = _mixed(1000)  # 2 workers: 31 strided chunks of 32 rows, mixed verdicts
    inline, process = _scores("inline", samples), _scores("process", samples)
    # inline keeps a raised exception as a Score subclass: compare what they say
    assert [s.to_dict() for s in process] == [s.to_dict() for s in inline]
    statuses = {str(s.status) for s in process}
    assert statuses == {"ok", "skipped", "error"}
    assert process[2].details == {"via": "tag", "extracted": "42"}
    assert "ValueError: bad row" in process[9].reason


def test_chunks_of_answers_with_details_arrive_whole() -> None:
    # one worker, chunks of 256 rows whose every verdict has details: the answers go
    # in more than one message per chunk
    samples = [Sample(completion=f"details {i}") for i in range(4096)]
    scores = _scores("process", samples, workers=1)
    assert all(s.status is Status.OK and s.details == {"via": "tag", "extracted": "42"}
               for s in scores)


def test_details_that_do_not_pickle_arrive_as_their_repr() -> None:
    samples = [Sample(completion="unpicklable"), Sample(completion="float")]
    first, second = _scores("process", samples)
    assert first.value == 1.0 and first.status is Status.OK
    assert isinstance(first.details["handle"], str) and "lock" in first.details["handle"]
    assert second.value == 0.5


def test_a_worker_killed_mid_chunk_costs_its_row_and_keeps_the_rows_it_finished(
        tmp_path: Path) -> None:
    log = tmp_path / "scored.log"
    samples = [Sample(prompt=f"row{i}", completion="die" if i == 77 else "x" * i,
                      metadata={"log": str(log)}) for i in range(200)]
    rs = RewardSet.from_dict({"workers": 1, "rewards": {"r": {"reward": "logs_and_dies"}}})
    result = rs.score(samples)
    scores = result.scores("r")
    assert scores[77].status is Status.ERROR and "exited with code 3" in scores[77].reason
    assert [s.value for i, s in enumerate(scores) if i != 77] == [
        float(i) for i in range(200) if i != 77]
    # every row was scored exactly once: the finished rows of the dead worker's chunks
    # were kept (shared memory), the unstarted ones went to its replacement
    lines = log.read_text().split()
    assert sorted(lines) == sorted(f"row{i}" for i in range(200))


def test_details_cross_the_pipe_as_a_pickle_round_trip_gives_them() -> None:
    # lists of plain values (instruction_following's [[id, followed], ...]) go as they are,
    # with no trial round trip; anything else still takes it (a lock inside a list: its
    # repr; a list holding itself pickles, so it goes too)
    import pickle
    import threading

    from rewardkit import Score
    from rewardkit.execution.protocol import to_score, wire_score

    looped: list = [1]
    looped.append(looped)
    for details, plain in (
            ({"followed": [["a:b", True], ["c:d", False]], "n": 1}, True),
            ({"pairs": (("x", 1.5), [None, 2])}, True),
            ({"deep": [[[1]]]}, False),
            ({"handle": [threading.Lock()]}, False),
            ({"loop": looped}, False)):
        wire = wire_score(Score.ok(1.0, **details))
        back = to_score(pickle.loads(pickle.dumps(wire)))
        if "handle" in details:
            assert isinstance(back.details["handle"], str) and "lock" in back.details["handle"]
            continue
        assert (wire[3] is not None) and set(back.details) == set(details)
        if plain:
            assert back.details == details
