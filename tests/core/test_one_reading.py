"""One reading of the graded text and of the prompt, for every reward that reads an answer
or the prompt (issue 38 items 1 and 2).

The graded text is what follows the reasoning (:func:`rewardkit.graded_text`); the prompt
as text is :func:`rewardkit.prompt_text`. A reward that reads its own way pays a guess
written inside the reasoning, or refuses a copied prompt in one shape and pays it in
another: these tests score the same output through every such reward and ask for the
verdict the one reading gives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from rewardkit import Sample, Status, get_reward, graded_text, prompt_text

pytest.importorskip("rewardkit_ifeval")
pytest.importorskip("rewardkit_gym")
pytest.importorskip("rewardkit_gui")
pytest.importorskip("rewardkit_translation")
pytest.importorskip("rewardkit_textmetrics")
pytest.importorskip("rewardkit_code")

#: reasoning whose commas break "no commas" if it were checked as the answer
REASONING = "first, think; then, answer"


@dataclass(frozen=True)
class Reader:
    """A reward that reads an answer: a row, the honest answer it pays in full and a
    wrong answer in the same form."""

    reward: str
    right: str
    wrong: str
    row: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    def score(self, completion: str) -> Any:
        sample = Sample.from_dict({**self.row, "completion": completion})
        return get_reward(self.reward)(self.params).score(sample)


SPELL = {"prompt": "Spell this word backward (example: sun -> nus): unsexlike",
         "reference": "ekilxesnu", "gym_dataset": "spell_backward",
         "gym_entry": '{"source_dataset": "spell_backward", "source_index": 0, "word": '
                      '"unsexlike", "word_len": 9, "difficulty": {"word_len": [3, 10]}}'}
UP_UP_LEFT = "<answer>[{'action': 'UP'}, {'action': 'UP'}, {'action': 'LEFT'}]</answer>"

READERS = [
    Reader("math_answer", "<answer>42</answer>", "<answer>41</answer>",
           {"prompt": "What is 6 times 7?", "reference": "42"}),
    Reader("exact_answer", "<answer>42</answer>", "<answer>41</answer>",
           {"prompt": "What is 6 times 7?", "reference": "42"}),
    Reader("multiple_choice", "<answer>B</answer>", "<answer>A</answer>",
           {"prompt": "Which is a primary colour?\nA) green\nB) red\nC) purple",
            "reference": "B"}),
    Reader("qa_match", "The sky is blue", "The sky is green",
           {"prompt": "What colour is the sky?", "reference": "The sky is blue"}),
    Reader("instruction_following", "the sky is blue on a clear summer day",
           "the sky, is blue",
           {"prompt": "Describe the sky without commas.",
            "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}),
    Reader("gym_answer", "<answer>ekilxesnu</answer>", "<answer>tca</answer>", SPELL),
    Reader("gui_navigation", UP_UP_LEFT, "<answer>[{'action': 'DOWN'}]</answer>",
           {"reference": {"action": ["UP", "UP", "LEFT"]}}, {"mode": "strict"}),
    Reader("translation_verdict", "my ratings is [5, 5, 5, 5, 1, 5]",
           "my ratings is [5, 5, 5, 5, 5, 5]", {"reference": [5, 5, 5, 5, 2, 5]}),
    Reader("chrf", "Die Katze sitzt auf der Matte.", "Quo vadis Domine, pax vobis.",
           {"reference": "Die Katze sitzt auf der Matte."}),
    Reader("string_match", "Paris", "Lyon", {"reference": "Paris"}),
    Reader("code_execution", "\n```python\ndef square(x):\n    return x * x\n```\n",
           "\n```python\ndef square(x):\n    return x + x\n```\n",
           {"reference": ["assert square(3) == 9"]}),
]
IDS = [r.reward for r in READERS]


def test_the_reported_drift_reasoning_with_commas_is_not_the_answer():
    completion = f"<think>{REASONING}</think>The sky is blue"
    row = {"prompt": "What colour is the sky?", "reference": "The sky is blue",
           "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}],
           "completion": completion}
    sample = Sample.from_dict(row)
    assert get_reward("qa_match")({}).score(sample).value == 1.0
    assert get_reward("instruction_following")({"min_words": 0}).score(sample).value == 1.0


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_each_reader_pays_the_honest_answer_alone_and_not_the_wrong_one(reader: Reader):
    assert reader.score(reader.right).value == 1.0
    assert reader.score(reader.wrong).value < 0.5  # 0, or a metric's partial credit


@pytest.mark.parametrize("reader", READERS, ids=IDS)
@pytest.mark.parametrize("shape", [
    "<think>{reasoning}</think>{right}",
    "<think>{reasoning} {wrong}</think>\n\n{right}",
    "<think>{wrong}</think><think>{reasoning}</think>\n{right}",
    "<think>{right}</think>",
    "<think>{right}</think>\n{wrong}",
    "<think>{reasoning} {right}",
    "<think></think><think>{right}",
    "{right}",
], ids=["reasoning", "wrong-in-reasoning", "two-blocks", "right-only-in-reasoning",
        "right-in-reasoning-wrong-after", "unclosed", "empty-then-unclosed", "no-reasoning"])
def test_every_reader_grades_what_follows_the_reasoning(reader: Reader, shape: str):
    completion = shape.format(reasoning=REASONING, right=reader.right, wrong=reader.wrong)
    graded = graded_text(completion)
    expected = 0.0 if graded is None else reader.score(graded).value
    got = reader.score(completion)
    assert got.status is Status.OK, got
    assert got.value == expected, (completion, graded, got)


def test_the_graded_text_is_what_follows_the_reasoning():
    assert graded_text(f"<think>{REASONING}</think>\n\nThe sky is blue") == "The sky is blue"
    assert graded_text("The sky is blue") == "The sky is blue"
    assert graded_text("<think>The sky is blue") is None
    assert graded_text("<reasoning>x</reasoning>4", "reasoning") == "4"
    assert graded_text("4", "reasoning") is None  # a named tag is reasoning that must close


# --- the prompt as text ---------------------------------------------------------------

QUESTION = "Write a short note about the lamp on the desk by the window please."


def _prompts(text: str) -> dict[str, Any]:
    return {"string": text,
            "message": [{"role": "user", "content": text}],
            "content parts": [{"role": "user", "content": [{"type": "text", "text": text}]}],
            "system first": [{"role": "system", "content": "You are helpful."},
                             {"role": "user", "content": [{"type": "text", "text": text}]}]}


@pytest.mark.parametrize("shape", list(_prompts("q")), ids=list(_prompts("q")))
def test_content_parts_are_read_as_their_text(shape: str):
    prompt = _prompts(QUESTION)[shape]
    assert prompt_text(prompt, turns="last_user") == QUESTION
    assert prompt_text(prompt, turns="user") == QUESTION
    assert prompt_text(prompt).endswith(QUESTION)
    assert "{'type'" not in prompt_text(prompt, roles=True)


def test_the_turn_variants_read_the_turns_they_name():
    chat = [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"},
            {"role": "assistant", "content": "A"},
            {"role": "user", "content": [{"type": "text", "text": "U2"}]}]
    assert prompt_text(chat) == "S\nU1\nA\nU2"
    assert prompt_text(chat, turns="user") == "U1\nU2"
    assert prompt_text(chat, turns="last_user") == "U2"
    assert prompt_text(chat, roles=True) == "system: S\nuser: U1\nassistant: A\nuser: U2"
    assert prompt_text(None) == ""


@pytest.mark.parametrize("shape", list(_prompts("q")), ids=list(_prompts("q")))
def test_an_answer_that_copies_the_prompt_is_refused_in_every_prompt_shape(shape: str):
    """The echo guards of instruction_following, gym_answer and the text metrics compare
    against the prompt's text, not its Python repr (nor nothing, for content parts)."""
    echo = Sample.from_dict({"prompt": _prompts(QUESTION)[shape], "completion": QUESTION,
                             "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]})
    assert get_reward("instruction_following")({}).score(echo).value == 0.0
    question = SPELL["prompt"]
    copied = Sample.from_dict({**SPELL, "prompt": _prompts(question)[shape],
                               "completion": f"<answer>{question}</answer>"})
    assert get_reward("gym_answer")({}).score(copied).reason == \
        "the question copied into the answer"
    translated = Sample.from_dict({"prompt": _prompts(QUESTION)[shape], "completion": QUESTION,
                                   "reference": "Une courte note sur la lampe du bureau."})
    assert get_reward("chrf")({}).score(translated).reason == "the prompt copied into the answer"


@pytest.mark.parametrize("shape", list(_prompts("q")), ids=list(_prompts("q")))
def test_math_and_choice_read_the_same_prompt_in_every_shape(shape: str):
    options = "Which is a primary colour?\nA) green\nB) red\nC) purple"
    choice = Sample.from_dict({"prompt": _prompts(options)[shape], "reference": "B",
                               "completion": "<answer>red</answer>"})
    assert get_reward("multiple_choice")({}).score(choice).value == 1.0
    # a number copied from the prompt is no answer of the model's own
    copied = Sample.from_dict({"prompt": _prompts("Is 7 the answer? What is 6 times 7?")[shape],
                               "reference": "42", "completion": "The answer is 7."})
    flat = Sample.from_dict({"prompt": "Is 7 the answer? What is 6 times 7?",
                             "reference": "42", "completion": "The answer is 7."})
    math = get_reward("math_answer")({})
    assert math.score(copied).reason == math.score(flat).reason


def test_the_plugin_guide_shows_both_readers_as_they_run():
    import doctest
    import re
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "plugin-authors.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", guide, re.DOTALL)
              if "import graded_text" in b or "import prompt_text" in b]
    assert len(blocks) == 2
    runner = doctest.DocTestRunner()
    for i, block in enumerate(blocks):
        runner.run(doctest.DocTestParser().get_doctest(block, {}, f"guide-{i}",
                                                       "docs/plugin-authors.md", 0))
    assert runner.summarize(verbose=False).failed == 0


@pytest.mark.parametrize("shape", list(_prompts("q")), ids=list(_prompts("q")))
def test_the_trainer_data_carry_the_prompt_text_in_every_shape(shape: str, tmp_path):
    """EasyR1's ``problem``, verl's ``extra_info.prompt`` and verl's chat messages hold
    the user's text, not a Python repr or the JSON of its content parts."""
    pq = pytest.importorskip("pyarrow.parquet")
    from rewardkit_trainers.config import DatasetSpec
    from rewardkit_trainers.launch.data import to_easyr1_parquet, to_verl_parquet

    rows = [{"prompt": _prompts(QUESTION)[shape], "reference": "4"}]
    spec = DatasetSpec(train="rows.jsonl")
    easyr1 = pq.read_table(to_easyr1_parquet(rows, spec, tmp_path / "e.parquet")).to_pylist()
    verl = pq.read_table(to_verl_parquet(rows, spec, tmp_path / "v.parquet")).to_pylist()
    assert easyr1[0]["problem"] == QUESTION
    assert verl[0]["extra_info"]["prompt"] == QUESTION
    assert verl[0]["prompt"][-1] == {"role": "user", "content": QUESTION}


def test_the_probes_echo_the_user_turns_of_a_chat_prompt():
    """The judge probes and the exploit probes build the echoed-prompt hack from the same
    text: the user turns, content parts read as text (not the last assistant turn)."""
    from rewardkit.testing.judge_probes import ProbeRow, probes

    chat = [{"role": "system", "content": "S"},
            {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]},
            {"role": "assistant", "content": "A"}, {"role": "user", "content": "Sure?"}]
    echo = next(p for p in probes() if p.name == "echo_prompt")
    built = echo.build(ProbeRow(1, chat, "4", None, {}))
    assert isinstance(built, list) and built[0] == "What is 2+2?\nSure?"
