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
