"""The command line: score, test, new-plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CFG = "rewards:\n  fmt: {reward: soft_format, weight: 0.5}\n  words: {reward: word_count_range}\n"
GOOD = "<think>a</think><answer>1</answer>"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rewardkit.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CFG)
    samples = tmp_path / "samples.jsonl"
    lines = [
        json.dumps({"prompt": "p", "completion": GOOD, "reference": 1, "task": "t"}),
        "{not json",
        json.dumps(["a", "list"]),
        "",
        json.dumps({"prompt": "p", "answer": "no completion key"}),
        json.dumps({"prompt": "q", "completion": "plain words here", "id": 7}),
    ]
    samples.write_text("\n".join(lines) + "\n")
    return cfg, samples


def test_score_writes_every_good_line_back_with_reward_and_components(files, tmp_path):
    cfg, samples = files
    out = tmp_path / "out.jsonl"
    proc = cli("score", str(cfg), str(samples), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r.get("id") for r in rows] == [None, 7]
    assert rows[0]["task"] == "t" and rows[0]["reference"] == 1
    assert rows[0]["reward"] == 1.5
    assert rows[0]["components"]["fmt"] == {"value": 1.0, "status": "ok", "reason": ""}
    assert rows[1]["components"]["words"]["reason"] == "3 words"
    assert "fmt" in proc.stdout and "total" in proc.stdout  # summary table


def test_score_reports_malformed_lines_by_number(files, tmp_path):
    cfg, samples = files
    proc = cli("score", str(cfg), str(samples), "--out", str(tmp_path / "o.jsonl"), "--json")
    assert proc.returncode == 0
    assert f"{samples}:2: skipped: invalid JSON" in proc.stderr
    assert f"{samples}:3: skipped: expected a JSON object" in proc.stderr
    assert f"{samples}:5: skipped: no 'completion' key" in proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["scored"] == 2 and summary["skipped_lines"] == 3
    assert summary["components"]["fmt"]["mean"] == 0.5
    assert summary["total"]["max"] == 1.5


def test_score_keeps_groups_in_one_batch(tmp_path):
    cfg = tmp_path / "g.yaml"
    cfg.write_text("rewards:\n  div: {reward: group_diversity}\n")
    samples = tmp_path / "s.jsonl"
    rows = [{"prompt": "p", "completion": c} for c in ("a", "a", "b", "c")]
    samples.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "o.jsonl"
    assert cli("score", str(cfg), str(samples), "--out", str(out), "--batch-size", "1"
               ).returncode == 0
    got = [json.loads(line)["reward"] for line in out.read_text().splitlines()]
    assert got == [0.75] * 4


def test_test_command_runs_golden_cases_and_fails_on_a_wrong_expectation(tmp_path):
    (tmp_path / "ok.cases.yaml").write_text(
        "reward: soft_format\nprobes: true\ncases:\n"
        f"  - {{name: good, completion: '{GOOD}', expect: 1.0}}\n"
        "  - {name: bad, completion: 'x', expect: {range: [0, 0.1]}}\n")
    passed = cli("test", str(tmp_path), "--json")
    report = json.loads(passed.stdout)
    assert passed.returncode == 0 and report["failed"] == 0
    assert report["passed"] == 2 + 12  # cases + probes
    (tmp_path / "wrong.cases.yaml").write_text(
        "reward: soft_format\ncases:\n  - {name: wrong, completion: 'x', expect: 1.0}\n")
    failed = cli("test", str(tmp_path))
    assert failed.returncode == 1
    assert "wrong.cases.yaml::wrong\nsoft_format: expected value 1.0, got 0.0\n" \
        "  completion: 'x'\n  reference:  None\n  expected:   {'value': 1.0}\n" \
        "  got:        value 0.0, status ok\n  reason:     (none given)" in failed.stdout


def test_new_plugin_installs_registers_and_passes_its_own_tests(tmp_path):
    made = cli("new-plugin", "keywords", "--dir", str(tmp_path))
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "rewardkit-keywords"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
           "-e", str(folder)]
    subprocess.run(pip, check=True, capture_output=True, timeout=300)
    try:
        names = {r["name"] for r in json.loads(cli("rewards", "--json").stdout)}
        assert "keywords_contains" in names
        tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                str(folder)], capture_output=True, text=True, timeout=300,
                               cwd=folder, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        assert tests.returncode == 0, tests.stdout + tests.stderr
        # 5 cases + 12 probes + 3 exploit probes (the others, harness_forgery among them,
        # do not apply to a text reward: 13 skipped) + 2 unit tests
        assert "22 passed, 13 skipped" in tests.stdout
    finally:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-q", "-y",
                        "rewardkit-keywords"], capture_output=True, timeout=300)


def test_new_plugin_refuses_a_bad_name(tmp_path):
    proc = cli("new-plugin", "9 lives", "--dir", str(tmp_path))
    assert proc.returncode == 2 and "must start with a letter" in proc.stderr


def test_unwritable_output_is_a_clean_error(files):
    cfg, samples = files
    proc = cli("score", str(cfg), str(samples), "--out", "/proc/no-such-dir/out.jsonl")
    assert proc.returncode == 2
    assert "error: No such file or directory: /proc/no-such-dir" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_score_json_needs_no_out_file(files, tmp_path):
    cfg, samples = files
    proc = cli("score", str(cfg), str(samples), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["scored"] == 2 and summary["out"] is None
    assert set(tmp_path.iterdir()) == {cfg, samples}  # nothing else written


def test_score_without_out_or_json_says_what_to_give(files):
    cfg, samples = files
    proc = cli("score", str(cfg), str(samples))
    assert proc.returncode == 2
    assert "give --out FILE" in proc.stderr and "--json" in proc.stderr


def test_score_reads_stdin_and_writes_stdout_with_a_dash(files):
    cfg, samples = files
    proc = subprocess.run([sys.executable, "-m", "rewardkit.cli", "score", str(cfg), "-",
                           "--out", "-"], input=samples.read_text(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["completion"] for r in rows] == [GOOD, "plain words here"]
    assert rows[0]["components"]["fmt"]["value"] == 1.0
    assert "scored 2 samples -> -" in proc.stderr      # the summary goes to stderr
    assert "<stdin>:2: skipped: invalid JSON" in proc.stderr
    as_json = subprocess.run([sys.executable, "-m", "rewardkit.cli", "score", str(cfg), "-",
                              "--out", "-", "--json"], input=samples.read_text(),
                             capture_output=True, text=True, timeout=120)
    assert len(as_json.stdout.splitlines()) == 2  # stdout holds only the scored rows
    summary = "\n".join(line for line in as_json.stderr.splitlines()
                        if not line.startswith("<stdin>:"))
    assert json.loads(summary)["scored"] == 2


def test_inline_rewards_show_no_latency_percentiles(files, tmp_path):
    cfg, samples = files
    proc = cli("score", str(cfg), str(samples), "--json")
    components = json.loads(proc.stdout)["components"]
    assert components["fmt"]["latency_per_sample"] is False  # timed per batch
    table = cli("score", str(cfg), str(samples), "--out", str(tmp_path / "o.jsonl")).stdout
    fmt_row = next(line for line in table.splitlines() if line.startswith("│ fmt"))
    cells = [c.strip() for c in fmt_row.split("│")[1:-1]]
    assert cells[-2:] == ["-", "-"] and float(cells[-3]) >= 0  # p50, p95; mean ms
    assert "p50/p95: '-' for inline rewards" in table


def test_new_plugin_next_step_installs_pytest_and_readme_says_how_to_publish(tmp_path):
    import tomllib

    made = cli("new-plugin", "keywords", "--dir", str(tmp_path))
    folder = tmp_path / "rewardkit-keywords"
    assert f" -m pip install -e '{folder}[test]' && " in made.stdout
    assert f" -m pytest {folder}" in made.stdout
    meta = tomllib.loads((folder / "pyproject.toml").read_text())
    assert any(dep.startswith("pytest") for dep in meta["project"]["optional-dependencies"]
               ["test"])
    readme = (folder / "README.md").read_text()
    assert 'pip install -e ".[test]"' in readme
    assert "pip install build twine" in readme and "python -m build" in readme


# -- score: --strict, the skipped count last, a number is not a text ---------------------
def test_score_says_how_many_lines_it_skipped_last_and_strict_exits_1(files, tmp_path):
    cfg, samples = files
    out = tmp_path / "o.jsonl"
    plain = cli("score", str(cfg), str(samples), "--out", str(out))
    assert plain.returncode == 0
    assert plain.stdout.strip().splitlines()[-1].startswith(
        "2 scored, 3 malformed line(s) skipped")
    strict = cli("score", str(cfg), str(samples), "--out", str(out), "--strict")
    assert strict.returncode == 1
    assert strict.stderr.strip().splitlines()[-1] == \
        "error: --strict: 3 malformed line(s) skipped"
    assert len(out.read_text().splitlines()) == 2  # the good lines are still written
    clean = tmp_path / "clean.jsonl"
    clean.write_text(json.dumps({"prompt": "p", "completion": GOOD}) + "\n")
    ok = cli("score", str(cfg), str(clean), "--out", str(out), "--strict")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip().splitlines()[-1] == "1 scored, 0 malformed line(s) skipped"


@pytest.mark.parametrize("completion", [84, 8.5, True])
def test_a_completion_that_is_a_number_is_an_error_of_its_line(tmp_path, completion):
    """``"completion": 84`` is a data mistake: scored as the text "84" it would pay an
    exact-answer reward for a value nobody generated."""
    cfg = tmp_path / "m.yaml"
    cfg.write_text("rewards:\n  acc: {reward: exact_answer, params: {answer_tag: a}}\n")
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"prompt": "p", "completion": "<a>84</a>", "reference": "84"})
                       + "\n" + json.dumps({"prompt": "p", "completion": completion,
                                            "reference": "84"}) + "\n")
    proc = cli("score", str(cfg), str(samples), "--json", "--strict")
    assert proc.returncode == 1
    assert f"{samples}:2: skipped: 'completion' is {json.dumps(completion)}, not text" \
        in proc.stderr
    assert json.loads(proc.stdout)["scored"] == 1


# -- rewards: a filter, 100 columns, one reward in full ------------------------------------
def test_rewards_list_fits_100_columns_and_filters_by_name():
    listed = cli("rewards")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert lines[-1].endswith("one in full: rewardkit rewards NAME")
    assert "mode='pass_fract…" in listed.stdout  # a long default, abbreviated
    only = cli("rewards", "format")
    names = [line.split()[0] for line in only.stdout.splitlines() if not line.startswith(" ")]
    assert "soft_format" in names and "strict_format" in names
    assert "tag_count" not in names and "math_answer" not in names
    none = cli("rewards", "no_such_thing")
    assert none.returncode == 2 and "no registered reward's name contains" in none.stderr


def test_rewards_name_shows_one_reward_with_every_parameter():
    proc = cli("rewards", "tag_count")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("tag_count  (rewardkit, inline)")
    (listed,) = json.loads(cli("rewards", "tag_count", "--json").stdout)
    assert listed["name"] == "tag_count" and listed["params"]
    flat = " ".join(proc.stdout.replace("│", " ").split())
    for param in listed["params"]:  # every parameter, with the start of its description
        assert param["name"] in proc.stdout
        assert " ".join(param["description"].split()[:3]) in flat, param


def test_validate_reads_stage_weights_in_order(tmp_path):
    """``until step 50: 0.5; then: 1 = 0.5 at step 0`` read as an equation; now the
    stages read in order, then the value at the step asked for."""
    cfg = tmp_path / "stages.yaml"
    cfg.write_text("rewards:\n  f:\n    reward: soft_format\n"
                   "    stages: [{until_step: 50, weight: 0.5}, {weight: 1}]\n")
    assert "0.5 until step 50, then 1; at step 0: 0.5" in cli("validate", str(cfg)).stdout
    later = cli("validate", str(cfg), "--step", "60", "--json")
    assert json.loads(later.stdout)["components"][0]["weight_text"] == \
        "0.5 until step 50, then 1; at step 60: 1"


# -- new-plugin: the hint names this environment, the install prints no warning box -------
def test_new_plugin_hint_installs_with_this_environment_and_quietly(tmp_path):
    made = cli("new-plugin", "keywords", "--dir", str(tmp_path))
    folder = tmp_path / "rewardkit-keywords"
    hint = next(line for line in made.stdout.splitlines() if "next:" in line).split()
    python = hint[hint.index("next:") + 1]
    assert Path(python).resolve() == Path(sys.executable).resolve()  # not a bare pip
    assert hint[hint.index("next:") + 2:hint.index("next:") + 5] == ["-m", "pip", "install"]
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--prefix", str(tmp_path / "prefix"), "-e", str(folder)],
        capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    assert "Editable installation" not in install.stdout + install.stderr
    assert "*****" not in install.stdout + install.stderr


def test_new_plugin_templates_are_package_data_and_each_is_written(tmp_path):
    """An installed wheel has every template (a package-data glob in pyproject.toml
    matches it), and every template is one file of the new plugin (none left unused)."""
    import tomllib
    from fnmatch import fnmatch

    from rewardkit.cli.scaffold import FILES, write_plugin

    root = Path(__file__).resolve().parents[2]
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["rewardkit"]
    templates = root / "rewardkit" / "cli" / "templates"
    shipped = sorted(str(p.relative_to(root / "rewardkit")) for p in templates.rglob("*")
                     if p.is_file() and "__pycache__" not in p.parts)
    assert shipped and all(any(fnmatch(name, g) for g in globs) for name in shipped), shipped
    assert sorted(f"cli/templates/plugin/{t}" for t, _ in FILES) == shipped
    folder = write_plugin("keywords", tmp_path)
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert len(written) == len(FILES)
    assert all("${" not in (folder / name).read_text() for name in written)
