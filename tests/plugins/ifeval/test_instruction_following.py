"""instruction_following (rewardkit-ifeval): modes, credit, details, and offline data.

The golden cases (tests/cases/ifeval) hold the verdicts on answers; these tests hold what
the cases cannot: the parameters' effect on one answer, the per-instruction details,
that no NLTK data is fetched, and that a random fallback of a checker is the same on
every run. Agreement with Google's reference is benchmarks/bench_ifeval.py's."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rewardkit import Sample, get_reward

pytest.importorskip("rewardkit_ifeval")

PROMPT = "Write a short product blurb for a lamp, with no commas, in lowercase."
ROW = {"instruction_id_list": ["punctuation:no_comma", "change_case:english_lowercase",
                               "detectable_format:title"],
       "kwargs": [{}, {}, {}]}


def score(completion: str, **params):
    reward = get_reward("instruction_following")(params)
    return reward.score(Sample.from_dict({"prompt": PROMPT, "completion": completion, **ROW}))


def test_all_or_nothing_pays_only_when_every_instruction_is_followed():
    result = score("<<glow>>\na warm little lamp for long winter evenings at home")
    assert result.value == 1.0
    assert score("a warm little lamp for long winter evenings at home").value == 0.0


def test_fraction_credit_is_the_share_followed_and_details_say_which():
    result = score("a warm little lamp for long winter evenings at home", credit="fraction")
    assert result.value == pytest.approx(2 / 3)
    assert result.details["followed"] == [["punctuation:no_comma", True],
                                          ["change_case:english_lowercase", True],
                                          ["detectable_format:title", False]]
    assert result.details["followed_count"] == 2


def test_loose_mode_forgives_a_first_line_and_markdown_stars():
    text = "Sure, here it is:\n<<glow>>\na **warm** little lamp for long winter evenings"
    assert score(text).value == 0.0
    assert score(text, mode="loose").value == 1.0


def test_reasoning_is_left_out_and_an_unclosed_one_pays_nothing():
    answer = "<<glow>>\na warm little lamp for long winter evenings at home"
    assert score("<think>Hmm, OK, no commas.</think>" + answer, reasoning_tag="think").value == 1.0
    assert score("<think>Hmm, OK, no commas. " + answer, reasoning_tag="think").value == 0.0


def test_a_random_fallback_is_the_same_on_every_run():
    # no letter given: the checker draws one at random, as Google's does, seeded
    row = {"instruction_id_list": ["keywords:letter_frequency"],
           "kwargs": [{"let_frequency": 6, "let_relation": "at least"}]}
    text = "Introducing the lamp of the year! Bright! Warm! Cheap! Quiet! Yours!"
    code = ("from rewardkit import Sample, get_reward\n"
            f"s = Sample.from_dict({{'prompt': 'p', 'completion': {text!r}, **{row!r}}})\n"
            "print(get_reward('instruction_following')({}).score(s).value)")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)}
    assert runs in ({"0.0\n"}, {"1.0\n"}), runs  # graded, and the same both times


@pytest.mark.parametrize(("letter", "text", "followed"), [
    ("!", "Bright! Warm! Cheap! Quiet! Yours! Now!", 1.0),  # six of the character asked for
    ("!", "qqqqqq quick quiet quills", 0.0),  # six q: a random letter's count is not it
    ("#", "#cats #dogs #birds #fish are welcome here", 1.0),
    ("#", "cats dogs birds fish are welcome here", 0.0),
])
def test_letter_frequency_counts_a_character_that_is_not_a_letter(letter, text, followed):
    relation = "at least"
    frequency = 6 if letter == "!" else 4
    row = {"instruction_id_list": ["keywords:letter_frequency"],
           "kwargs": [{"letter": letter, "let_frequency": frequency, "let_relation": relation}]}
    sample = Sample.from_dict({"prompt": "p", "completion": text, **row})
    assert get_reward("instruction_following")({}).score(sample).value == followed


def test_sentences_are_counted_without_nltk_data_or_a_download(tmp_path):
    # an empty NLTK_DATA and no network: sentence counting (Punkt) and word_tokenize work
    code = ("import socket\n"
            "def refuse(*a, **k): raise OSError('no network in this test')\n"
            "socket.socket.connect = refuse\n"
            "from rewardkit import Sample, get_reward\n"
            "row = {'instruction_id_list': ['length_constraints:number_sentences',"
            " 'change_case:capital_word_frequency'], 'kwargs': [{'relation': 'less than',"
            " 'num_sentences': 3}, {'capital_relation': 'at least', 'capital_frequency': 1}]}\n"
            "s = Sample.from_dict({'prompt': 'p', 'completion': 'Dr. Smith met the NASA team."
            " They talked for an hour about the launch.', **row})\n"
            "print(get_reward('instruction_following')({}).score(s))\n")
    env = {"PATH": "/usr/bin:/bin", "NLTK_DATA": str(tmp_path), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert "value=1.0" in out, out


def test_an_ifbench_type_without_its_nltk_data_is_an_error_not_a_download(tmp_path):
    code = ("from rewardkit import Sample, get_reward\n"
            "s = Sample.from_dict({'prompt': 'p', 'completion': 'Go to the shop and buy"
            " some bread for the two of us today.', 'instruction_id_list':"
            " ['ratio:stop_words'], 'kwargs': [{'percentage': 50}]})\n"
            "r = get_reward('instruction_following')({}).score(s)\n"
            "print(r.status, r.reason)\n")
    env = {"PATH": "/usr/bin:/bin", "NLTK_DATA": str(tmp_path), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert out.startswith("error") and "NLTK data" in out, out


def test_missing_nltk_data_is_remembered_and_data_added_later_is_seen(tmp_path):
    # a type whose data is missing is an error each time, with the same reason (NLTK's
    # lookup remembers the miss instead of searching every data folder again); data put
    # on nltk.data.path while the process runs is found and the row graded
    (tmp_path / "empty").mkdir()
    words = tmp_path / "added" / "corpora" / "stopwords"
    words.mkdir(parents=True)
    (words / "english").write_text("the\nof\nto\nus\nfor\nsome\n")
    code = ("import nltk.data\n"
            "from rewardkit import Sample, get_reward\n"
            "s = Sample.from_dict({'prompt': 'p', 'completion': 'Go to the shop and buy"
            " some bread for the two of us today.', 'instruction_id_list':"
            " ['ratio:stop_words'], 'kwargs': [{'percentage': 50}]})\n"
            "r = get_reward('instruction_following')({})\n"
            "a, b = r.score(s), r.score(s)\n"
            "print(a.status, b.status, a.reason == b.reason, "
            "getattr(nltk.data.find, 'remembers_missing', False))\n"
            f"nltk.data.path.append({str(tmp_path / 'added')!r})\n"
            "c = r.score(s)\n"
            "print(c.status, c.value, c.details['followed'])\n")
    env = {"PATH": "/usr/bin:/bin", "NLTK_DATA": str(tmp_path / "empty"),
           "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.splitlines()
    assert out[0] == "error error True True", out
    # 6 of the 12 words are stop words: 50% is at most 50%
    assert out[1] == "ok 1.0 [['ratio:stop_words', True]]", out


def test_seeded_draws_come_from_the_rows_generator_and_leave_the_global_one_alone():
    import json
    import random

    from rewardkit_ifeval.checkers import seeded

    state = random.getstate()
    with seeded("keywords:letter_frequency", {"let_frequency": 3}):
        got = [random.randint(1, 100), random.choice("abcdef"), random.sample(range(50), 3)]
        with seeded("other:id", None):
            inner = random.random()
        after_inner = random.randint(1, 100)
    assert random.getstate() == state
    rng = random.Random("keywords:letter_frequency:"
                        + json.dumps({"let_frequency": 3}, sort_keys=True))
    assert got == [rng.randint(1, 100), rng.choice("abcdef"), rng.sample(range(50), 3)]
    assert after_inner == rng.randint(1, 100)
    assert inner == random.Random("other:id:null").random()


#: a row per NLTK name the checkers reach (word_tokenize, ngrams, Punkt sentences, the
#: stop word corpus and the POS tagger, whose data is not installed here)
NLTK_ROWS = (
    "rows = [(['ratio:overlap'], [{'reference_text': 'the lamp lights the room', "
    "'percentage': 10}]), (['words:keywords_specific_position'], [{'keyword': 'lamp', "
    "'n': 2, 'm': 1}]), (['length_constraints:number_sentences'], [{'relation': 'at least',"
    " 'num_sentences': 2}]), (['detectable_format:title'], [{}]), (['ratio:stop_words'], "
    "[{'percentage': 50}]), (['words:start_verb'], [{}])]\n"
    "from rewardkit import Sample, get_reward\n"
    "r = get_reward('instruction_following')({'min_words': 0})\n"
    "text = '<<Lamp>> The lamp lights the room. Dr. Smith reads by it every night.'\n"
    "got = [r.score(Sample.from_dict({'prompt': 'p', 'completion': text, "
    "'instruction_id_list': i, 'kwargs': k})) for i, k in rows]\n"
    "print([(str(s.status), s.value, s.reason) for s in got])\n")


def test_the_checkers_load_without_nltks_whole_import_and_give_the_same_verdicts(tmp_path):
    # NLTK's __init__ imports every NLTK module (scipy.stats, scikit-learn) and
    # if-verifiable's imports `datasets`: the reward leaves both out; a name it did not
    # import brings in the rest of NLTK, and the verdicts are then the same with the
    # NLTK functions themselves (pos_tag, the stop word corpus: no data installed here)
    code = NLTK_ROWS + (
        "import sys\n"
        "print(sorted(m for m in ('scipy', 'sklearn', 'datasets', 'pandas', 'nltk.tag', "
        "'nltk.corpus') if m in sys.modules))\n"
        "import nltk\n"
        "print(nltk.FreqDist('abca')['a'], nltk.pos_tag is nltk.tag.pos_tag, "
        "type(nltk.corpus).__name__)\n"
        "again = [r.score(Sample.from_dict({'prompt': 'p', 'completion': text, "
        "'instruction_id_list': i, 'kwargs': k})) for i, k in rows]\n"
        "print([(str(s.status), s.value, s.reason) for s in again])\n")
    env = {"PATH": "/usr/bin:/bin", "NLTK_DATA": str(tmp_path), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.splitlines()
    assert out[0].count("'error'") == 2 and "'ok', 1.0" in out[0], out
    assert out[1] == "[]", out
    assert out[2] == "2 True LazyModule", out
    assert out[3] == out[0], out


def test_the_checkers_warm_compiles_what_a_first_batch_would():
    # warm() runs every instruction type once: a first batch's rows then compile next to
    # no regular expression of the checkers (they did 21, ~12 ms, in a fresh process)
    code = (
        "import re\n"
        "from rewardkit_ifeval import checkers\n"
        "checkers.warm()\n"
        "before = set(re._cache)\n"
        "checkers.evaluate('Hello; a short note. 2024-01-31.', ['detectable_format:title',"
        " 'count:numbers', 'format:emoji', 'count:words_japanese'], [None, None, None, None],"
        " 'Write a note.', loose=True)\n"
        "print(len(set(re._cache) - before))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "0", out
