"""One definition each of a group, the scored text and "scheduled", used by scoring, the
report and the trainer checks alike (issue 22 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardkit import RewardSet, Sample
from rewardkit.report.analysis import read_scored, summarise
from rewardkit.report.hacking import completion_text as report_text
from rewardkit.scoring.jsonl import score_jsonl
from rewardkit.types import group_key

NUMBER, WORD = "<answer>4</answer>", "<answer>four</answer>"


def _rows() -> list[dict]:
    """Four completions of one prompt in two explicit groups: 1 = two numbers, 2 = two
    words, so each group has no reward variance while the prompt as a whole has."""
    return [{"prompt": "What is 2+2?", "completion": c, "group": g}
            for c, g in ((NUMBER, 1), (WORD, 2), (NUMBER, 1), (WORD, 2))]


def test_score_and_report_see_the_same_groups(tmp_path: Path):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    rs = RewardSet.from_dict({"aggregate": "normalize_then_sum",
                              "rewards": {"number": {"reward": "answer_is_number"}}})
    score_jsonl(rs, src, dst)
    rows, _ = read_scored(dst)
    raw = [r["components"]["number"]["value"] for r in rows]
    assert raw == [1.0, 0.0, 1.0, 0.0]
    # normalised within each explicit group of 2 (no variance): 0 each, not +-1
    assert [r["reward"] for r in rows] == pytest.approx([0.0] * 4)
    summary = summarise(rows)
    assert (summary.groups, summary.group_sizes, summary.zero_variance_groups) == (2, {2: 2}, 2)
    samples = [Sample.from_dict(r) for r in _rows()]
    assert rs.score(samples).totals == pytest.approx([0.0] * 4)


def test_a_group_is_the_prompt_within_its_step_without_an_explicit_group():
    same = [Sample.from_dict({"prompt": [{"role": "user", "content": "q"}], "step": s})
            for s in (1, 1, 2)]
    keys = [group_key(s) for s in same]
    assert keys[0] == keys[1] != keys[2]
    listed = Sample.from_dict({"prompt": "q", "group": [1, "a"]})  # a JSON list column
    assert group_key(listed) == group_key(Sample.from_dict({"prompt": "r", "group": [1, "a"]}))
    assert "group" not in listed.metadata


def test_the_report_shows_the_text_scoring_sees():
    row = {"prompt": "What is 2+2?",
           "completion": [{"role": "user", "content": "What is 2+2?"},
                          {"role": "assistant", "content": [{"type": "text", "text": "4"}]}]}
    assert Sample.from_dict(row).text == "4"
    assert report_text(row) == "4"


@pytest.mark.parametrize(("weights", "scheduled"), [
    ([{"schedule": "constant", "value": 0.5}], False),
    ([1.0, {"schedule": "constant", "value": 1.0}], False),
    ([1.0, 0.5], True),
    ([{"schedule": "linear", "start": 0.0, "end": 1.0, "steps": 10}], True),
])
def test_scheduled_means_the_weight_changes_with_the_step(weights: list, scheduled: bool):
    from rewardkit_trainers import fidelity

    if len(weights) == 1:
        component = {"reward": "soft_format", "weight": weights[0]}
    else:
        component = {"reward": "soft_format", "stages": [
            {"until_step": 10, "weight": weights[0]}, {"weight": weights[1]}]}
    rs = RewardSet.from_dict({"rewards": {"f": component}})
    assert rs.is_scheduled("f") is scheduled
    staircase = [w for w in fidelity.check(rs.config, "easyr1") if "staircase" in w]
    continuous = any(isinstance(w, dict) and w["schedule"] != "constant" for w in weights)
    assert bool(staircase) is continuous


def _sent_reward(config: dict) -> tuple[object, tuple[str, bytes]]:
    from rewardkit.execution.executor import Outcome, pickled_reward

    reward = RewardSet.from_dict({"rewards": {"c": config}}).components["c"].stages[0].reward
    sent = pickled_reward(reward, [Sample("q", "a")], None, None, Outcome(1), "a worker")
    assert sent is not None
    return reward, sent


def test_a_reward_goes_to_workers_and_ray_actors_pickled_one_way_under_one_key():
    """The local worker pool and the Ray executor send a reward through one prologue
    (issue 38 item 5): they keyed it ``id(class):hash`` and ``module.qualname:hash``."""
    import pickle

    from rewardkit.execution import executor, local, ray

    assert local.pickled_reward is ray.pickled_reward is executor.pickled_reward
    config = {"reward": "overlong_penalty", "params": {"max_length": 10, "buffer": 2}}
    reward, (key, blob) = _sent_reward(config)
    assert key.startswith(f"{type(reward).__module__}.{type(reward).__qualname__}:")
    copy = pickle.loads(blob)
    assert type(copy) is type(reward) and copy.params == reward.params
    assert _sent_reward(config)[1] == (key, blob)  # another RewardSet, the same config
    other = {"reward": "overlong_penalty", "params": {"max_length": 11, "buffer": 2}}
    assert _sent_reward(other)[1][0] != key


def test_a_reward_that_does_not_pickle_fails_its_samples_naming_the_receiver():
    from rewardkit.execution.executor import Outcome, pickled_reward

    out = Outcome(3)
    assert pickled_reward(lambda s: 1.0, [Sample("q", "a")] * 3, [0, 2], None, out,
                          "a Ray actor") is None
    failed = [out.score(i) for i in (0, 2)]
    assert all("cannot be sent to a Ray actor" in (s.reason or "") for s in failed)


#: groups equal as the scoring compares them (Python values: a JSON column read as 1 in
#: one row and 1.0 in another, a flag as True) and keys in any order
_EQUAL_GROUPS = [1, 1.0, True, {"id": 3, "split": "a"}, {"split": "a", "id": 3}, 1]


def test_the_trainers_impute_within_the_groups_the_scoring_normalises():
    """One group rule (issue 38 item 5): ms-swift's and EasyR1's imputation of a failed
    row grouped rows by their JSON text, so groups 1, 1.0 and True the scoring
    normalises together were three groups there, and the failed row took the mean of
    its own JSON spelling's rows."""
    trainers = pytest.importorskip("rewardkit_trainers.scoring")
    from rewardkit.reward_set import group_indices

    samples = [Sample("q", str(i), group=g) for i, g in enumerate(_EQUAL_GROUPS)]
    core = group_indices(samples)
    assert core == [[0, 1, 2, 5], [3, 4]]
    keys = [group_key(s) for s in samples]
    assert trainers.group_members(keys) == core
    imputed = trainers.neutralise_failed_rows([1.0, 0.0, 0.0, 1.0, 1.0, None], keys, {5})
    assert imputed[5] == pytest.approx(1 / 3)


#: rows whose groups the scoring must tell apart or join exactly as ``==`` does: 1, 1.0
#: and True one group far apart in the file; 7 and "7" two; the list [1] and the string
#: "[1]" two (a list group used to be keyed by its JSON text, the same as the string)
_SPELLED_GROUPS = [1, 7, [1], 1.0, "7", "[1]", True, 7, [1], "[1]", "7", 1]


def test_the_file_scoring_groups_rows_as_the_in_memory_scoring_does(tmp_path: Path):
    """score_jsonl's group index (whole groups gathered from anywhere in the file) keyed
    a group by its JSON text: 1 / 1.0 / True were three groups there and one in
    RewardSet.score, 7 and "7" one there and two in RewardSet.score."""
    from rewardkit.scoring.shards import row_key
    from rewardkit.types import group_key_text

    rows = [{"prompt": "q", "completion": NUMBER if i % 3 else WORD, "group": g}
            for i, g in enumerate(_SPELLED_GROUPS)]
    samples = [Sample.from_dict(r) for r in rows]
    keys = [group_key(s) for s in samples]
    assert keys[2] != keys[5] and keys[1] != keys[4] and keys[0] == keys[3] == keys[6]
    texts = [group_key_text(k) for k in keys]
    assert [texts.index(t) for t in texts] == [keys.index(k) for k in keys]
    assert [row_key(r) for r in rows] == texts
    rs = RewardSet.from_dict({"aggregate": "normalize_then_sum",
                              "rewards": {"number": {"reward": "answer_is_number"}}})
    expected = rs.score(samples).totals
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    score_jsonl(rs, src, dst, batch_size=2)
    scored, _ = read_scored(dst)
    assert [r["reward"] for r in scored] == pytest.approx(expected)
    assert len(set(expected)) > 1  # the groups have reward variance: a real check


_CHAT = [{"role": "user", "content": "What is 2+2?"}]


def test_a_string_prompt_spelling_a_chat_prompt_is_its_own_group(tmp_path: Path):
    """A chat prompt's group was keyed by its JSON text, so a string prompt equal to that
    text joined the chat prompt's group (in memory, in the file's group index and at the
    shard boundaries alike): a policy's prompt can spell another's key."""
    from rewardkit.reward_set import group_indices
    from rewardkit.scoring.shards import row_key
    from rewardkit.types import group_key_text

    spelled = json.dumps(_CHAT, sort_keys=True)
    rows = [{"prompt": p, "completion": c}
            for p, c in ((_CHAT, NUMBER), (spelled, WORD), (_CHAT, WORD), (spelled, NUMBER),
                         (_CHAT, NUMBER), (spelled, NUMBER))]
    samples = [Sample.from_dict(r) for r in rows]
    assert group_indices(samples) == [[0, 2, 4], [1, 3, 5]]
    keys = [group_key(s) for s in samples]
    assert len({group_key_text(k) for k in keys}) == 2
    assert row_key(rows[0]) != row_key(rows[1])
    stepped = [Sample.from_dict({**r, "step": 3}) for r in rows[:2]]
    assert group_key(stepped[0]) != group_key(stepped[1])
    assert group_key_text(group_key(stepped[0])) != group_key_text(group_key(stepped[1]))
    # equal chat prompts are one group however their keys are ordered or spelled
    other = Sample.from_dict({"prompt": [{"content": "What is 2+2?", "role": "user"}],
                              "completion": "x"})
    assert group_key(other) == keys[0]
    assert group_key_text(group_key(other)) == group_key_text(keys[0])
    rs = RewardSet.from_dict({"aggregate": "normalize_then_sum",
                              "rewards": {"number": {"reward": "answer_is_number"}}})
    expected = rs.score(samples).totals
    assert expected[5] > 0 > expected[1]  # two groups of three, each with variance
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    score_jsonl(rs, src, dst, batch_size=2)
    scored, _ = read_scored(dst)
    assert [r["reward"] for r in scored] == pytest.approx(expected)


def test_a_resume_manifest_of_the_old_group_rule_is_refused_by_name(tmp_path: Path):
    """The Ray engine's shards end where the group key changes, so a run begun under the
    old key (a chat prompt keyed by its JSON text, manifest version 1) may have cut other
    shards than a resume would: resuming it is refused with a clear message, never mixed."""
    from rewardkit.scoring.manifest import Checkpoint, ResumeError, fingerprint

    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"prompt": _CHAT, "completion": NUMBER}) + "\n")
    config = RewardSet.from_dict({"rewards": {"number": {"reward": "answer_is_number"}}}).config
    expected = fingerprint(config, src, 1024, 0)
    manifest, partial = tmp_path / "out.jsonl.progress", tmp_path / "out.jsonl.partial"
    entry = {"shard": 0, "rows": 1, "end_offset": 10, "bad": [], "latencies": {}}
    manifest.write_text(json.dumps({**expected, "version": 1}) + "\n" + json.dumps(entry) + "\n")
    partial.write_bytes(b"x" * 10)
    with (manifest.open("r+b") as log, partial.open("r+b") as out,
          pytest.raises(ResumeError) as caught):
        Checkpoint(log, out, manifest, partial).begin(expected, fresh=False)
    message = str(caught.value)
    assert "manifest version 1" in message and "group" in message
    assert "to score from the start" in message
    assert partial.read_bytes() == b"x" * 10  # nothing of the earlier run is touched


def test_rows_whose_group_is_nan_are_one_group_in_memory_as_in_the_file_index():
    """NaN is not equal to itself, so rows given the group NaN (Python's json reads a NaN
    column) were as many groups as rows in memory while the file's group index, keyed by
    text, made them one: in memory and on disk they are one group now, nested NaN too."""
    from rewardkit.reward_set import group_indices
    from rewardkit.types import group_key_text

    for group in (float("nan"), [float("nan"), 1]):
        samples = [Sample.from_dict({"prompt": "p", "completion": c,
                                     "group": json.loads(json.dumps(group))})
                   for c in (NUMBER, WORD, NUMBER)]
        keys = [group_key(s) for s in samples]
        assert len({group_key_text(k) for k in keys}) == 1
        assert group_indices(samples) == [[0, 1, 2]], group
    rs = RewardSet.from_dict({"aggregate": "normalize_then_sum",
                              "rewards": {"number": {"reward": "answer_is_number"}}})
    rows = [{"prompt": "p", "completion": c, "group": float("nan")}
            for c in (NUMBER, WORD, NUMBER, WORD)]
    totals = rs.score([Sample.from_dict(r) for r in rows]).totals
    assert totals[0] > 0 > totals[1]  # one group of four, with variance
