"""llm_judge and translation_judge under a node-wide rate budget and with several
endpoints, against real HTTP servers on loopback and real processes: RPM shared by
several processes (measured at the server), TPM charged by the estimate and corrected
by the answer's usage, a dead endpoint (connection refused, 5xx) taken out and its rows
served by the other, tried again after ``dead_endpoint_retry_s``, and a 429's
``Retry-After`` waited by every process of the node."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from judge_support import CAPITAL, JUDGE, SOURCE, TRANSLATION, answer_for

from rewardkit import ConfigError, RewardSet

pytest.importorskip("httpx")

#: (request number from 1, body text) -> (status, JSON body, extra headers)
Behaviour = Callable[[int, str], tuple[int, dict[str, Any], dict[str, str]]]


def verdict(n: int, request: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    """The scripted judge's verdict, with the tokens it cost (usage)."""
    return 200, {"choices": [{"message": {"role": "assistant",
                                          "content": answer_for(request)}}],
                 "usage": {"prompt_tokens": 40, "completion_tokens": 4,
                           "total_tokens": 44}}, {}


class Server:
    """A loopback judge server answering by ``behaviour``; keeps when each request
    arrived (CLOCK_MONOTONIC: one clock for every process of the machine)."""

    def __init__(self, behaviour: Behaviour = verdict, delay: float = 0.0) -> None:
        self.arrivals: list[float] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                request = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with server.lock:
                    server.arrivals.append(time.monotonic())
                    n = len(server.arrivals)
                time.sleep(delay)
                status, body, headers = behaviour(n, request.decode())
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers() -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(behaviour: Behaviour = verdict, delay: float = 0.0) -> Server:
        started.append(Server(behaviour, delay))
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.fixture(autouse=True)
def own_budget_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's buckets in a folder of its own (processes it starts inherit it)."""
    folder = tmp_path / "budget"
    monkeypatch.setenv("RK_BUDGET_DIR", str(folder))
    return folder


def refused_url() -> str:
    """An endpoint that refuses connections: a port bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def judge_set(**params: Any) -> RewardSet:
    return RewardSet.from_dict({"rewards": {"judge": {
        "reward": "llm_judge", "params": {**JUDGE, **params}}}})


def rows(n: int, tag: str = "") -> list[dict[str, Any]]:
    """``n`` different rows (no two share a cached verdict)."""
    return [{"prompt": CAPITAL, "completion": f"paris {tag}{i}"} for i in range(n)]


def client_of(rs: RewardSet) -> Any:
    return rs.components["judge"].stages[0].reward._client


#: a process scoring rows against a judge config given as JSON; with "wait", it reads a
#: line from stdin before it scores (so a test can say when)
WORKER = """
import json, sys
from rewardkit import RewardSet
spec = json.loads(sys.argv[1])
rs = RewardSet.from_dict({"rewards": {"judge": {"reward": "llm_judge",
                                                "params": spec["params"]}}})
if spec.get("wait"):
    print("ready", flush=True)
    sys.stdin.readline()
out = rs.score(spec["rows"])
print(json.dumps([[r.scores["judge"].status, r.scores["judge"].value,
                   r.scores["judge"].reason] for r in out]), flush=True)
"""


def start_worker(params: dict[str, Any], batch: list[dict[str, Any]],
                 wait: bool = False) -> subprocess.Popen[str]:
    spec = json.dumps({"params": params, "rows": batch, "wait": wait})
    return subprocess.Popen([sys.executable, "-c", WORKER, spec], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def results(process: subprocess.Popen[str]) -> list[list[Any]]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "Traceback" not in err, err
    return json.loads(out.strip().splitlines()[-1])


def most_in_window(times: list[float], window: float) -> int:
    """The most arrivals within any ``window`` seconds."""
    times = sorted(times)
    return max(sum(1 for u in times[i:] if u < t + window) for i, t in enumerate(times))


def test_processes_sharing_an_rpm_limit_never_exceed_it(servers: Any) -> None:
    server = servers()
    rpm, processes, each = 600, 3, 8  # 10 requests a second for the node
    params = {**JUDGE, "base_url": server.url, "rpm": rpm, "concurrency": 4}
    workers = [start_worker(params, rows(each, f"p{k}-")) for k in range(processes)]
    outcomes = [results(w) for w in workers]
    assert all(status == "ok" and value == 0.9 for out in outcomes
               for status, value, _ in out), outcomes
    arrivals = server.arrivals
    assert len(arrivals) == processes * each
    span = max(arrivals) - min(arrivals)
    rate = (len(arrivals) - 1) / span
    # a bucket of burst 1 at 10/s: at most 1 + 10 requests in any second, and three more
    # for the jitter of when the stub notes an arrival (on a loaded machine its threads
    # run late and note requests bunched: 14 were seen at load 12-15); the mean rate at
    # most the limit
    assert most_in_window(arrivals, 1.0) <= 14, arrivals
    assert rate <= rpm / 60 * 1.05, rate
    print(f"measured {rate:.2f} requests/s against a limit of {rpm / 60:.2f}/s; "
          f"most in one second {most_in_window(arrivals, 1.0)}")


def test_without_a_limit_the_same_processes_go_faster(servers: Any) -> None:
    """The check above can fail: unlimited, the same load arrives far above 10/s (all
    24 requests well inside one second)."""
    server = servers()
    params = {**JUDGE, "base_url": server.url, "concurrency": 4}
    workers = [start_worker(params, rows(8, f"p{k}-")) for k in range(3)]
    for worker in workers:
        results(worker)
    assert most_in_window(server.arrivals, 1.0) > 14


def test_tpm_is_charged_the_estimate_then_the_usage(servers: Any) -> None:
    server = servers()
    # max_tokens 8 + a short prompt: about 20 tokens estimated, 44 used (the usage);
    # 1320 tokens a minute = 22 a second: about one request every 2 s after the first
    rs = judge_set(base_url=server.url, tpm=1320, concurrency=4)
    started = time.monotonic()
    out = rs.score(rows(3))
    took = time.monotonic() - started
    assert [r.scores["judge"].status for r in out] == ["ok"] * 3
    gaps = [b - a for a, b in zip(server.arrivals, server.arrivals[1:], strict=False)]
    # the first request is corrected up to 44 tokens, so the next waits ~44/22 s
    assert min(gaps) >= 1.0, gaps
    assert took < 10, took


def test_a_refusing_endpoint_is_taken_out_and_its_rows_served_by_the_other(
        servers: Any) -> None:
    live, dead = servers(), refused_url()
    rs = judge_set(endpoints=[dead, live.url], concurrency=1, dead_endpoint_retry_s=60)
    out = rs.score(rows(6))
    assert [r.scores["judge"].status for r in out] == ["ok"] * 6
    assert len(live.arrivals) == 6
    assert client_of(rs).sent_to[dead] == 1  # tried once, then left out


def test_a_5xx_endpoint_is_taken_out_and_tried_again_after_the_interval(
        servers: Any) -> None:
    def fails_first(n: int, request: str) -> tuple[int, dict[str, Any], dict[str, str]]:
        return (503, {"error": {"message": "down"}}, {}) if n == 1 else verdict(n, request)

    flaky, steady = servers(fails_first, delay=0.05), servers(delay=0.05)
    rs = judge_set(endpoints=[flaky.url, steady.url], concurrency=1,
                   dead_endpoint_retry_s=0.5, backoff=5.0)
    out = rs.score(rows(20))
    assert [r.scores["judge"].status for r in out] == ["ok"] * 20
    # its first request failed; it came back only after the interval, and served rows
    assert len(flaky.arrivals) > 2
    assert flaky.arrivals[1] - flaky.arrivals[0] >= 0.5
    # the retry went to the other endpoint at once, not after the 5 s backoff
    assert steady.arrivals[0] - flaky.arrivals[0] < 1.0


def test_least_loaded_spreads_rows_over_live_endpoints(servers: Any) -> None:
    a, b = servers(delay=0.1), servers(delay=0.1)
    rs = judge_set(endpoints=[a.url, b.url], endpoint_policy="least_loaded", concurrency=4)
    out = rs.score(rows(12))
    assert [r.scores["judge"].status for r in out] == ["ok"] * 12
    assert len(a.arrivals) == len(b.arrivals) == 6


def test_every_endpoint_dead_is_a_status_error_not_a_traceback() -> None:
    dead = [refused_url(), refused_url()]
    rs = judge_set(endpoints=dead, retries=2, backoff=0.01, dead_endpoint_retry_s=60)
    score = rs.score(rows(1))[0].scores["judge"]
    assert score.status == "error"
    assert "cannot reach the endpoint" in (score.reason or "")


def test_a_429s_retry_after_is_waited_by_every_process(servers: Any) -> None:
    def busy_first(n: int, request: str) -> tuple[int, dict[str, Any], dict[str, str]]:
        if n == 1:
            return 429, {"error": {"message": "slow down"}}, {"Retry-After": "2"}
        return verdict(n, request)

    server = servers(busy_first)
    params = {**JUDGE, "base_url": server.url, "rpm": 6000, "retries": 2}
    second = start_worker(params, rows(2, "second-"), wait=True)
    assert second.stdout is not None and second.stdout.readline().strip() == "ready"
    first = start_worker(params, rows(1, "first-"))
    deadline = time.monotonic() + 60
    while not server.arrivals and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # the first process has written the pause
    assert second.stdin is not None
    second.stdin.write("go\n")
    second.stdin.flush()
    assert [s for s, _, _ in results(first)] == ["ok"]
    assert [s for s, _, _ in results(second)] == ["ok", "ok"]
    told = server.arrivals[0]
    later = server.arrivals[1:]
    assert len(later) == 3
    # nobody asked again before the 2 s were up: the pause is the node's, not the process's
    assert min(later) - told >= 1.9, [t - told for t in later]


def test_translation_judge_takes_the_same_limits(servers: Any) -> None:
    live, dead = servers(), refused_url()
    rs = RewardSet.from_dict({"rewards": {"judge": {"reward": "translation_judge", "params": {
        **TRANSLATION, "endpoints": [dead, live.url], "rpm": 600,
        "dead_endpoint_retry_s": 60}}}})
    out = rs.score([{"prompt": SOURCE, "completion": "包裹重 3.5 公斤。"}] * 1 +
                   [{"prompt": SOURCE, "completion": "包裹重 35 公斤。"}])
    assert [r.scores["judge"].value for r in out] == [1.0, 0.0]
    assert len(live.arrivals) == 2


@pytest.mark.parametrize("params, message", [
    ({}, "base_url or endpoints is required"),
    ({"endpoints": ["ftp://x"]}, r"not an http\(s\) URL"),
    ({"endpoints": ["http://a/v1", "http://a/v1/"]}, "listed twice"),
    ({"base_url": "http://a/v1", "endpoints": ["http://b/v1"]}, "not both"),
    ({"base_url": "http://a/v1", "rpm": 0}, "rpm"),
    ({"base_url": "http://a/v1", "endpoint_policy": "random"}, "endpoint_policy"),
])
def test_bad_endpoint_and_limit_params_fail_when_the_config_loads(
        params: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        judge_set(**params)


def test_base_url_may_be_a_list() -> None:
    rs = judge_set(base_url=["http://a/v1/", "http://b/v1"])
    p = rs.components["judge"].stages[0].reward.params
    assert p.endpoints == ["http://a/v1", "http://b/v1"]


DOCS = Path(__file__).resolve().parents[3] / "docs" / "plugins"


def _section_yaml(page: str, heading: str) -> dict[str, Any]:
    import re

    import yaml

    text = (DOCS / page).read_text(encoding="utf-8")
    section = text.split(heading, 1)[1]
    return yaml.safe_load(re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)[0])


@pytest.mark.parametrize("page, heading, sample", [
    ("judge.md", "### Rate limits and several endpoints",
     {"prompt": CAPITAL, "completion": "paris"}),
    ("translation.md", "Under a provider's limits",
     {"prompt": SOURCE, "completion": "包裹重 3.5 公斤。"}),
])
def test_the_docs_rate_limit_snippets_run_against_a_dead_and_a_live_endpoint(
        servers: Any, page: str, heading: str, sample: dict[str, Any]) -> None:
    config = _section_yaml(page, heading)
    (name, component), = config["rewards"].items()
    live, dead = servers(), refused_url()
    assert len(component["params"]["endpoints"]) == 2
    component["params"]["endpoints"] = [dead, live.url]
    rs = RewardSet.from_dict(config)
    out = rs.score([{**sample, "completion": sample["completion"] + " " * i}
                    for i in range(3)])
    assert [r.scores[name].status for r in out] == ["ok"] * 3
    assert len(live.arrivals) == 3


def test_a_429s_retry_after_holds_back_the_components_other_requests(
        servers: Any) -> None:
    """Without rpm (no node bucket), the pause still holds every request of the
    component, not only the one that was told."""
    def busy_first(n: int, request: str) -> tuple[int, dict[str, Any], dict[str, str]]:
        if n == 1:
            return 429, {"error": {"message": "slow down"}}, {"Retry-After": "1"}
        time.sleep(0.2)
        return verdict(n, request)

    server = servers(busy_first)
    out = judge_set(base_url=server.url, concurrency=2, retries=2).score(rows(4))
    assert [r.scores["judge"].status for r in out] == ["ok"] * 4
    told = server.arrivals[0]
    # the second request was in flight with the first; every later one waited
    assert all(t - told >= 0.95 for t in server.arrivals[2:]), \
        [t - told for t in server.arrivals]
