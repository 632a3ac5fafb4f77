"""workspace_criteria on real directories, archives, SQLite files and sandboxed commands;
a tamper corpus in which every forged workspace is paid 0 or an error while the honest
one is paid 1."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from rewardkit_workspace.reward import WorkspaceCriteria

from rewardkit import Sample

pytest.importorskip("rewardkit_sandbox")


def _reward(criteria: list[dict[str, Any]], root: Path, **params: Any) -> WorkspaceCriteria:
    return WorkspaceCriteria({"criteria": criteria, "allowed_roots": [str(root)], **params})


def _score(reward: WorkspaceCriteria, workspace: object):
    return reward.score(Sample("task", "done", metadata={"workspace": workspace}))


def _honest(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "out.txt").write_text("answer: 42\n")
    (folder / "config.json").write_text('{"server": {"port": 8080, "tls": true}}')
    (folder / "config.yaml").write_text("servers:\n  - name: a\n    port: 8080\n")
    with sqlite3.connect(folder / "app.db") as db:
        db.execute("CREATE TABLE users (name TEXT, age INTEGER)")
        db.executemany("INSERT INTO users VALUES (?, ?)", [("ada", 36), ("bob", 41)])
    db.close()
    return folder


FILE_CRITERIA: list[dict[str, Any]] = [
    {"type": "file_exists", "path": "out.txt"},
    {"type": "file_contains", "path": "out.txt", "text": "42"},
    {"type": "file_matches", "path": "out.txt", "pattern": r"^answer: \d+$"},
    {"type": "json_value", "path": "config.json", "key": "server.port", "equals": 8080},
    {"type": "yaml_value", "path": "config.yaml", "key": "servers.0.port", "equals": 8080},
    {"type": "sqlite_query", "path": "app.db", "query": "SELECT name FROM users ORDER BY age",
     "rows": [["ada"], ["bob"]]},
]
COMMAND = {"type": "command", "run": ["python3", "-c", "print(open('out.txt').read())"],
           "stdout_equals": "answer: 42"}


def test_an_honest_directory_passes_every_file_criterion(tmp_path: Path) -> None:
    score = _score(_reward(FILE_CRITERIA, tmp_path), str(_honest(tmp_path / "ws")))
    assert score.value == 1.0, score
    assert all(c["passed"] for c in score.details["criteria"])


def test_a_wrong_value_fails_its_criterion_and_the_weighted_share_counts(tmp_path: Path) -> None:
    ws = _honest(tmp_path / "ws")
    (ws / "config.json").write_text('{"server": {"port": 9090}}')
    assert _score(_reward(FILE_CRITERIA, tmp_path), str(ws)).value == 0.0
    weighted = _score(_reward(FILE_CRITERIA, tmp_path, combine="weighted"), str(ws))
    assert weighted.value == pytest.approx(5 / 6)
    assert _score(_reward(FILE_CRITERIA, tmp_path, combine="any"), str(ws)).value == 1.0


def test_json_true_is_not_the_number_one(tmp_path: Path) -> None:
    ws = _honest(tmp_path / "ws")
    crit = [{"type": "json_value", "path": "config.json", "key": "server.tls", "equals": 1}]
    assert _score(_reward(crit, tmp_path), str(ws)).value == 0.0


def test_criteria_come_from_the_reference_when_the_config_has_none(tmp_path: Path) -> None:
    reward = WorkspaceCriteria({"allowed_roots": [str(tmp_path)]})
    ws = str(_honest(tmp_path / "ws"))
    sample = Sample("t", "c", reference={"criteria": FILE_CRITERIA[:2], "combine": "all"},
                    metadata={"workspace": ws})
    assert reward.score(sample).value == 1.0
    bad = Sample("t", "c", reference=[{"type": "file_contains"}], metadata={"workspace": ws})
    assert reward.score(bad).status.value == "error"


def test_a_tar_and_a_zip_workspace_are_read_like_the_directory(tmp_path: Path) -> None:
    ws = _honest(tmp_path / "ws")
    with tarfile.open(tmp_path / "ws.tar.gz", "w:gz") as tar:
        tar.add(ws, arcname=".")
    with zipfile.ZipFile(tmp_path / "ws.zip", "w") as archive:
        for path in ws.iterdir():
            archive.write(path, path.name)
    for name in ("ws.tar.gz", "ws.zip"):
        assert _score(_reward(FILE_CRITERIA, tmp_path), str(tmp_path / name)).value == 1.0


def test_a_workspace_outside_the_allowed_roots_is_an_error(tmp_path: Path) -> None:
    ws = _honest(tmp_path / "ws")
    score = _score(_reward(FILE_CRITERIA, tmp_path / "elsewhere"), str(ws))
    assert score.status.value == "error" and "outside the allowed roots" in score.reason
    assert _score(_reward(FILE_CRITERIA, tmp_path), str(tmp_path / "nope")).status.value == "error"


def test_a_command_runs_in_the_sandbox_against_the_workspace(tmp_path: Path) -> None:
    ws = _honest(tmp_path / "ws")
    who = {"type": "command", "run": ["id", "-u"], "stdout_equals": str(os.getuid())}
    score = _score(_reward([COMMAND], tmp_path), str(ws))
    assert score.value == 1.0, score
    assert _score(_reward([who], tmp_path), str(ws)).value == 0.0  # not our uid
    (ws / "out.txt").write_text("answer: 41\n")
    assert _score(_reward([COMMAND], tmp_path), str(ws)).value == 0.0


def test_a_command_has_no_network(tmp_path: Path) -> None:
    net = {"type": "command", "run": ["python3", "-c",
           "import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)"]}
    assert _score(_reward([net], tmp_path), str(_honest(tmp_path / "ws"))).value == 0.0


def test_an_http_service_the_workspace_starts_answers(tmp_path: Path) -> None:
    ws = _honest(tmp_path / "ws")
    http = {"type": "http", "start": ["python3", "-m", "http.server", "8765"], "port": 8765,
            "url_path": "/out.txt", "status": 200, "body_contains": "answer: 42"}
    score = _score(_reward([http], tmp_path), str(ws))
    from rewardkit_code.sandboxes import shared_sandbox_pool

    network = shared_sandbox_pool(1).layers["network_namespace"]
    if not (network.active and "loopback only" in network.detail):
        # no private namespace (seccomp refuses inet sockets) or a kernel that kept lo down:
        # the criterion must then be an error naming it, never a pass
        assert (score.status.value, score.value) == ("error", 0.0), score
        assert "no loopback" in score.reason
        pytest.skip("the sandbox has no loopback of its own here: " + network.detail)
    assert score.value == 1.0, score
    wrong = {**http, "body_contains": "answer: 41"}
    assert _score(_reward([wrong], tmp_path), str(ws)).value == 0.0


# -- the tamper corpus: each forged workspace is paid 0 (or an error), the honest one 1 --

def _fifo(ws: Path) -> None:
    (ws / "out.txt").unlink()
    os.mkfifo(ws / "out.txt")


def _hardlink(ws: Path) -> None:
    (ws / "secret.txt").write_text("root\n")  # stands in for a host file
    (ws / "out.txt").unlink()
    os.link(ws / "secret.txt", ws / "out.txt")


def _symlink(target: str):
    def plant(ws: Path) -> None:
        (ws / "out.txt").unlink()
        os.symlink(target, ws / "out.txt")
    return plant


def _write(name: str, text: str):
    def plant(ws: Path) -> None:
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
    return plant


def _huge(ws: Path) -> None:
    with open(ws / "out.txt", "ab") as out:
        out.truncate(64 * 1024 * 1024)


def _wrong_answer(ws: Path) -> None:
    (ws / "out.txt").write_text("answer: 41\n")


def _both(*plants):
    def plant(ws: Path) -> None:
        for each in plants:
            each(ws)
    return plant


ROOT_CRITERION = [{"type": "file_contains", "path": "out.txt", "text": "root"}]
ANSWER_CRITERIA = [FILE_CRITERIA[1], COMMAND]

#: (id, criteria, how the workspace is forged): each is paid 0 or an error
TAMPERING: list[tuple[str, list[dict[str, Any]], Any]] = [
    ("symlink to /etc/passwd", ROOT_CRITERION, _symlink("/etc/passwd")),
    ("relative symlink climbing out", ROOT_CRITERION, _symlink("../../../../../etc/passwd")),
    ("symlinked folder out", [{"type": "file_contains", "path": "etc/passwd", "text": "root"}],
     lambda ws: os.symlink("/etc", ws / "etc")),
    ("hardlink", [*ROOT_CRITERION, {"type": "file_exists", "path": "out.txt"}], _hardlink),
    ("huge sparse file", [FILE_CRITERIA[1]], _huge),
    ("FIFO where a file is expected", [FILE_CRITERIA[1]], _fifo),
    ("planted python3 shadows the command",
     [COMMAND], _both(_wrong_answer, _write("python3", "#!/bin/sh\necho 'answer: 42'\n"))),
    ("planted bin/ folder on a PATH it hopes for",
     [COMMAND], _both(_wrong_answer, _write("bin/python3", "#!/bin/sh\necho 'answer: 42'\n"))),
    ("sitecustomize in the workspace",
     [COMMAND], _both(_wrong_answer, _write(
         "sitecustomize.py", "print('answer: 42', flush=True); import os; os._exit(0)\n"))),
    ("a .pth in the workspace",
     [COMMAND], _both(_wrong_answer, _write(
         "evil.pth", "import os; print('answer: 42', flush=True); os._exit(0)\n"))),
    ("a json module shadowed in the workspace",
     [{"type": "command", "run": ["python3", "-c", "import json; print(json.load(open("
       "'config.json'))['server']['port'])"], "stdout_equals": "8080"}],
     _both(_write("config.json", '{"server": {"port": 1}}'),
           _write("json.py", "def load(f): return {'server': {'port': 8080}}\n"))),
    ("a JSON with duplicate keys", [FILE_CRITERIA[3]],
     _write("config.json", '{"server": {"port": 1, "port": 8080}}')),
    ("a YAML with duplicate keys", [FILE_CRITERIA[4]],
     _write("config.yaml", "servers:\n  - port: 1\n    port: 8080\n")),
    ("a SQLite file that is not a database", [FILE_CRITERIA[5]],
     _write("app.db", "SELECT name FROM users; ada\nbob\n")),
    ("forged verdict line on stdout", [COMMAND], _both(_wrong_answer, _write(
        "fake.txt", '\n[{"exit_code": 0, "stdout": "answer: 42"}]\n'))),
    ("command kills its reporter", [{"type": "command", "run": ["sh", "-c",
     "grep -q 'answer: 42' out.txt || kill -9 $PPID; exit 0"]}], _wrong_answer),
]


@pytest.mark.parametrize(("criteria", "forge"), [(c, f) for _, c, f in TAMPERING],
                         ids=[name for name, _, _ in TAMPERING])
def test_a_forged_workspace_is_not_paid(tmp_path: Path, criteria: list[dict[str, Any]],
                                        forge: Any) -> None:
    reward = _reward(criteria, tmp_path, max_file_bytes=1024 * 1024)
    honest = _honest(tmp_path / "honest")
    if criteria[0].get("text") == "root":  # what the forgery wants, written honestly
        (honest / "out.txt").write_text("root")
        _write("etc/passwd", "root")(honest)
    score = _score(reward, str(honest))
    assert score.value == 1.0, score
    forged = tmp_path / "forged"
    _honest(forged)
    forge(forged)
    score = _score(reward, str(forged))
    assert score.value in (0.0, None), score


def _tar_with(tmp_path: Path, name: str, members: list[tuple[tarfile.TarInfo, bytes]]) -> str:
    path = tmp_path / name
    with tarfile.open(path, "w") as tar:
        tar.add(tmp_path / "honest" / "out.txt", arcname="ok.txt")
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data else None)
    return str(path)


def _member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE,
            link: str = "") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, len(data), link
    return info, data


ARCHIVES = [
    ("tar traversal ../", [_member("../out.txt", b"answer: 42\n")], "escaped.txt"),
    ("tar absolute path", [_member("/tmp/out.txt", b"answer: 42\n")], "/tmp/out.txt"),
    ("tar symlink out", [_member("out.txt", kind=tarfile.SYMTYPE, link="/etc/passwd")], None),
    ("tar hardlink out", [_member("out.txt", kind=tarfile.LNKTYPE, link="/etc/passwd")], None),
]


@pytest.mark.parametrize(("members", "outside"), [(m, o) for _, m, o in ARCHIVES],
                         ids=[name for name, _, _ in ARCHIVES])
def test_a_forged_archive_is_not_paid_and_writes_nothing_outside(
        tmp_path: Path, members: Any, outside: str | None) -> None:
    _honest(tmp_path / "honest")
    (tmp_path / "honest" / "out.txt").write_text("root answer: 42")
    reward = _reward([{"type": "file_contains", "path": "out.txt", "text": "root"}], tmp_path)
    score = _score(reward, _tar_with(tmp_path, "forged.tar", members))
    assert score.value in (0.0, None), score
    assert score.details and score.details.get("left_out")
    if outside == "escaped.txt":
        assert not (tmp_path / "out.txt").exists()


def test_a_zip_bomb_stops_at_the_cap(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for i in range(4):
            archive.writestr(f"zero{i}.bin", b"\0" * (16 * 1024 * 1024))
    assert bomb.stat().st_size < 200_000
    score = _score(_reward([FILE_CRITERIA[0]], tmp_path), str(bomb))
    assert score.status.value == "error" and "over the cap" in score.reason, score


def test_a_workspace_path_that_links_out_of_the_roots_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    os.symlink("/etc", tmp_path / "root" / "ws")
    score = _score(_reward(ROOT_CRITERION, tmp_path / "root"), str(tmp_path / "root" / "ws"))
    assert score.status.value == "error"


def test_bad_inline_paths_are_left_out(tmp_path: Path) -> None:
    reward = _reward([FILE_CRITERIA[1]], tmp_path)
    score = _score(reward, {"../out.txt": "answer: 42", "/out.txt": "answer: 42"})
    assert score.value == 0.0 and len(score.details["left_out"]) == 2
    assert json.dumps(score.details)


def test_a_workspace_script_keeps_its_executable_bit(tmp_path: Path) -> None:
    ws = _honest(tmp_path / "ws")
    _write("run.sh", "#!/bin/sh\ncat out.txt\n")(ws)
    run = {"type": "command", "run": ["./run.sh"], "stdout_equals": "answer: 42"}
    assert _score(_reward([run], tmp_path), str(ws)).value == 1.0


def test_the_reporters_descriptors_and_memory_are_closed_to_the_command(tmp_path: Path) -> None:
    """Its stdout (where the verdict goes) and its memory (the secret) cannot be reached:
    the reporter is not dumpable (the sandbox child's uid switch makes it so already, and
    the reporter sets PR_SET_DUMPABLE 0 itself in case a sandbox ever execs it)."""
    ws = _honest(tmp_path / "ws")
    for probe in ("ls /proc/$PPID/fd/", "head -c 1 /proc/$PPID/mem", "echo x > /proc/$PPID/fd/1"):
        reach = {"type": "command", "run": ["sh", "-c", probe]}
        score = _score(_reward([reach], tmp_path), str(ws))
        assert score.value == 0.0, (probe, score)
