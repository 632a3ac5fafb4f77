"""The pytest plugin collects golden cases and reports failures readably."""

from __future__ import annotations

GOOD = "<think>a</think><answer>1</answer>"


def test_cases_file_items_pass_and_fail_with_readable_messages(pytester):
    pytester.makefile(".cases.yaml", fmt=(
        "reward: soft_format\ncases:\n"
        f"  - {{name: good, completion: '{GOOD}', expect: 1.0}}\n"
        "  - {name: wrongly expected, completion: 'no tags', expect: {approx: 1.0, tol: 0.1}}\n"
        "  - {name: status check, completion: 'x', expect: {status: ok}}\n"))
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*soft_format: expected 1.0 ± 0.1, got 0.0*",
                                 "*completion: 'no tags'*"])
    assert "Traceback" not in result.stdout.str()


def test_probes_become_items_when_asked(pytester):
    pytester.makefile(".cases.yaml", p="reward: soft_format\nprobes: true\ncases: []\n")
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=12)


def test_invalid_cases_file_is_a_collection_error_naming_the_key(pytester):
    pytester.makefile(".cases.yaml", bad="reward: soft_format\ncases:\n  - {completion: x}\n")
    result = pytester.runpytest("-q")
    result.stdout.fnmatch_lines(["*cases.0.expect*Field required*"])


def test_config_cases_check_total_or_one_component(pytester, tmp_path):
    cfg = pytester.path / "cfg.yaml"
    cfg.write_text("rewards:\n  f: {reward: soft_format, weight: 0.5}\n"
                   "  g: {reward: soft_format, weight: 2}\n")
    pytester.makefile(".cases.yaml", c=(
        "config: cfg.yaml\ncases:\n"
        f"  - {{completion: '{GOOD}', expect: 2.5}}\n"
        f"  - {{completion: '{GOOD}', component: f, expect: 1.0}}\n"))
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=2)


def test_score_fixture_scores_with_a_config_dict(rewardkit_score):
    res = rewardkit_score({"rewards": {"f": {"reward": "soft_format"}}},
                          [{"completion": GOOD}])
    assert res.totals == [1.0]


def test_probes_fixture_passes_a_robust_reward(rewardkit_probes):
    results = rewardkit_probes("soft_format")
    assert len(results) == 12 and all(r.passed for r in results)


DOC_FAILURE_CASE = (
    "reward: exact_answer\ncases:\n"
    "  - name: says it in words\n    prompt: 'What is 2 + 2?'\n"
    "    completion: 'The answer is 4.'\n    reference: 4\n    expect: 1.0\n")


def _doc_failure_block() -> str:
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "testing.md").read_text()
    block = re.search(r"```\n(exact_answer: expected.*?)```", page, re.S)
    assert block is not None
    return block.group(1).rstrip("\n")


def test_a_failure_reads_as_docs_testing_shows_under_pytest(pytester):
    pytester.makefile(".cases.yaml", words=DOC_FAILURE_CASE)
    result = pytester.runpytest("-q")
    result.assert_outcomes(failed=1)
    assert _doc_failure_block() in result.stdout.str()


def test_a_failure_reads_as_docs_testing_shows_under_rewardkit_test(tmp_path):
    import subprocess
    import sys

    (tmp_path / "words.cases.yaml").write_text(DOC_FAILURE_CASE)
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "test", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"words.cases.yaml::says_it_in_words\n{_doc_failure_block()}" in proc.stdout


def test_verbose_ids_pasted_back_run_that_case_alone(pytester):
    pytester.makefile(".cases.yaml", fmt=(
        "reward: soft_format\ncases:\n"
        f"  - {{name: 'well formed (think + answer)', completion: '{GOOD}', expect: 1.0}}\n"
        "  - {name: 'no tags', completion: 'x', expect: 0.0}\n"
        "  - {name: 'no tags', completion: 'y', expect: 0.0}\n"))
    listed = pytester.runpytest("-v")
    ids = [line.split()[0] for line in listed.stdout.lines if " PASSED" in line]
    assert ids == ["fmt.cases.yaml::well_formed_think_answer", "fmt.cases.yaml::no_tags",
                   "fmt.cases.yaml::no_tags_2"]
    for test_id in ids:
        alone = pytester.runpytest("-q", test_id)  # as a shell passes it: no quoting needed
        alone.assert_outcomes(passed=1)


def test_a_probe_the_reward_skips_fails_and_probe_prompt_makes_it_run(pytester):
    pytester.makepyfile(needs_prompt='''
from rewardkit import reward, registry

@reward(name="needs_a_question")
def needs_a_question(sample):
    if "?" not in str(sample.prompt):
        return None  # does not apply: skipped
    return 1.0

registry.register(needs_a_question, "tests")
''')
    pytester.makeconftest("import needs_prompt  # noqa: F401\n")
    pytester.makefile(".cases.yaml", skipped="reward: needs_a_question\nprobes: true\ncases: []\n")
    # a fresh process: the probes' worker pool must be able to import needs_prompt
    result = pytester.runpytest_subprocess("-q", "skipped.cases.yaml")
    result.assert_outcomes(failed=12)
    result.stdout.fnmatch_lines(["*never ran: the reward skipped it*probe_prompt*"])
    pytester.makefile(".cases.yaml", asked=(
        "reward: needs_a_question\nprobes: true\nprobe_prompt: 'How much?'\ncases: []\n"))
    result = pytester.runpytest_subprocess("-q", "asked.cases.yaml")
    result.assert_outcomes(passed=12)


PAIRWISE_REWARD = '''
from rewardkit import reward, registry

@reward(name="pairwise_overlap", group=True, mode="process")
def pairwise_overlap(samples):
    """Share of each completion's words found in its siblings: a pairwise comparison
    that (as quadratic matching does on real data) never ends once a huge completion has
    a sibling."""
    words = [set(s.text.split()) for s in samples]
    if len(samples) > 1 and any(len(s.text) > 100_000 for s in samples):
        while True:
            pass
    out = []
    for i, mine in enumerate(words):
        others = set().union(*(w for j, w in enumerate(words) if j != i))
        out.append(len(mine & others) / len(mine) if mine else 0.0)
    return out

registry.register(pairwise_overlap, "tests")
'''


def test_group_reward_probes_run_in_groups_and_catch_a_pairwise_hang(pytester):
    pytester.makepyfile(pairwise=PAIRWISE_REWARD)
    pytester.makeconftest("import pairwise  # noqa: F401\n")
    pytester.makefile(".cases.yaml", pair=(
        "reward: pairwise_overlap\nprobes: true\nprobe_timeout: 2\ncases: []\n"))
    result = pytester.runpytest_subprocess("-q", "-rf", "pair.cases.yaml")
    # the three probes over 100,000 characters hang beside their siblings, and so does the
    # group of every probe together; in groups of one (as before) all 12 passed
    result.assert_outcomes(passed=9, failed=3 + 1)
    failed = sorted(line.split("::")[1].split()[0] for line in result.stdout.lines
                    if line.startswith("FAILED"))
    assert failed == ["probe:1mb_single_line", "probe:1mb_text", "probe:number_spam",
                      "probe:together"]
    result.stdout.fnmatch_lines(["*hung: no answer within 2s*"])


def test_group_reward_probe_groups_mix_probes_with_normal_siblings():
    from rewardkit.testing.probes import PROBES, TOGETHER, run_probes

    results = run_probes("group_length", {"unit": "chars"}, reference="42", timeout=20)
    assert [r.name for r in results] == [*PROBES, TOGETHER]
    assert all(r.passed for r in results), [r.problem for r in results if not r.passed]
    # beside two short normal siblings a probe is no longer the only (hence shortest)
    # completion: the 1 MB one pays the length penalty
    by_name = {r.name: r for r in results}
    assert by_name["1mb_text"].score.value is not None
    assert by_name["1mb_text"].score.value <= 0


def test_verbose_rewardkit_test_lists_passing_cases(tmp_path):
    import subprocess
    import sys

    (tmp_path / "fmt.cases.yaml").write_text(
        "reward: soft_format\ncases:\n"
        f"  - {{name: well formed, completion: '{GOOD}', expect: 1.0}}\n"
        "  - {name: no tags, completion: 'x', expect: 0.0}\n")
    for flag in ("-v", "--verbose"):
        proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "test", flag,
                               str(tmp_path)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        listed = [line.split()[1].split("::")[1] for line in proc.stdout.splitlines()
                  if line.startswith("PASS ")]
        assert listed == ["well_formed", "no_tags"]
    quiet = subprocess.run([sys.executable, "-m", "rewardkit.cli", "test", str(tmp_path)],
                           capture_output=True, text=True, timeout=120)
    assert "PASS " not in quiet.stdout and "2 passed, 0 failed" in quiet.stdout
