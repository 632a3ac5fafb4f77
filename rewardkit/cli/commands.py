"""The built-in ``rewardkit`` commands, registered as a default plugin.

``rewards``, ``plugins``, ``validate``, ``score``, ``serve``, ``test``, ``schema``,
``report`` and ``new-plugin`` come through the same ``register_commands`` hook as a
plugin's commands (the trainers distribution adds ``train``, ``export``, ``eval``,
``launch`` and ``jobs`` that way).
Each command's options are declared here (``serve``'s with it, in
:mod:`rewardkit.serve.command`); ``score`` runs in :mod:`rewardkit.cli.score`,
``new-plugin`` writes the templates of :mod:`rewardkit.cli.scaffold`.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from rewardkit.cli import EXIT_FAIL, EXIT_OK, EXIT_USAGE, UsageError, err, out
from rewardkit.cli.calibrate import add_calibrate
from rewardkit.cli.diff import add_diff
from rewardkit.cli.importers import add_import
from rewardkit.cli.score import cmd_score
from rewardkit.hookspecs import Subcommands, hookimpl
from rewardkit.serve.command import add_serve

if TYPE_CHECKING:
    from rewardkit.testing.cases import LoadedCases
    from rewardkit.testing.exploits import ExploitReport
    from rewardkit.types import Score


@hookimpl
def register_commands(subparsers: Subcommands) -> None:
    """The built-in commands, in the order ``rewardkit --help`` lists them."""
    _add_rewards(subparsers)
    _add_plugins(subparsers)
    _add_validate(subparsers)
    _add_score(subparsers)
    add_serve(subparsers)
    _add_test(subparsers)
    _add_schema(subparsers)
    _add_report(subparsers)
    add_calibrate(subparsers)
    add_diff(subparsers)
    add_import(subparsers)
    _add_new_plugin(subparsers)


def _add_rewards(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("rewards", help="list registered rewards; NAME: one in full")
    p.add_argument("name", nargs="?", default=None,
                   help="a reward's name: its description and every parameter; any other "
                   "text lists the rewards whose name contains it")
    p.add_argument("--all", action="store_true",
                   help="with NAME: the whole description and each parameter's in full")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_rewards)


def _add_plugins(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("plugins", help="list installed plugins")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_plugins)


def _add_validate(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("validate", help="check a reward config")
    p.add_argument("config")
    p.add_argument("--step", type=int, default=0, help="show weights at this step")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_validate)


def _add_score(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("score", help="score a JSONL file of samples")
    p.add_argument("config")
    p.add_argument("samples", help="JSONL: prompt, completion, reference, other keys = "
                   "metadata; - (or a pipe) reads standard input")
    p.add_argument("--out", help="JSONL output, one line per scored sample; '-' writes "
                   "standard output (the summary then goes to standard error). Optional "
                   "with --json")
    p.add_argument("--step", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=1024,
                   help="samples per scoring call (cut where the prompt changes)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any line was malformed and skipped (the good lines "
                   "are still scored and written)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="ray: score on Ray Data (JSONL or parquet input, resumable)")
    p.add_argument("--resume", action="store_true",
                   help="engine ray: continue an interrupted run into the same --out")
    p.add_argument("--ray-address", default=None,
                   help="engine ray: cluster address (default: RAY_ADDRESS, else local)")
    p.add_argument("--concurrency", type=int, default=None,
                   help="engine ray: scoring actors (default: the cluster's CPUs)")
    p.set_defaults(func=cmd_score)


def _add_test(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("test", help="run golden cases (*.cases.yaml)")
    p.add_argument("paths", nargs="*", default=["."])
    p.add_argument("--no-probes", action="store_true",
                   help="skip the crash probes and the exploit probes")
    p.add_argument("--exploits", action="store_true",
                   help="run the exploit probes on every file, also those without `exploits:`")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="list passing cases and probes too")
    p.add_argument("--json", action="store_true")
    judge = p.add_argument_group(
        "judge probes", "--judge CONFIG --rows ROWS.jsonl: send master-key, restated and "
        "injection probes to every component of CONFIG (its real judge endpoint) with the "
        "rows' prompts and references; report each probe's false-positive rate")
    judge.add_argument("--judge", metavar="CONFIG", help="a reward config to probe")
    judge.add_argument("--rows", metavar="ROWS.jsonl", help="prompt and reference per line "
                       "(completion: an honest answer, optional; other keys: metadata)")
    judge.add_argument("--limit", type=int, default=50, help="rows used (default 50)")
    judge.add_argument("--component", action="append", default=[],
                       help="probe only this component (repeatable; default: all)")
    judge.add_argument("--pass-score", type=float, default=0.5,
                       help="a probe scored at least this is paid (default 0.5)")
    judge.add_argument("--max-fpr", type=float, default=0.05,
                       help="exit 1 when a probe is paid on more than this share of rows "
                       "(default 0.05)")
    p.set_defaults(func=cmd_test)


def _add_schema(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("schema", help="print the config JSON Schema")
    p.add_argument("--markdown", action="store_true", help="the config reference page instead")
    p.set_defaults(func=cmd_schema)


def _add_report(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("report", help="an offline HTML page of what the rewards did")
    p.add_argument("scored", help="JSONL written by `rewardkit score`, or the output folder "
                   "of a training run")
    p.add_argument("-o", "--out", help="HTML file (default: next to the input, report.html)")
    p.add_argument("--config", help="the reward config: adds weights over steps and stages")
    p.add_argument("--steps", type=int, help="last step of the weights chart")
    p.add_argument("--curves", help="reward_curves.csv of a training run")
    p.set_defaults(func=cmd_report)


def _add_new_plugin(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("new-plugin", help="write a new reward plugin distribution")
    p.add_argument("name", help="plugin name, e.g. 'keywords' -> rewardkit-keywords")
    p.add_argument("--dir", default=".", help="where to create the folder")
    p.set_defaults(func=cmd_new_plugin)


# -- rewards / plugins ------------------------------------------------------------------
def _params_summary(cls: Any) -> list[dict[str, Any]]:
    """Each parameter as a config writes it: its alias when it has one
    (``schema_ = Field(alias="schema")`` is ``schema``)."""
    rows = []
    for name, f in cls.Params.model_fields.items():
        default = None if f.is_required() else f.get_default(call_default_factory=True)
        annotation = getattr(f.annotation, "__name__", None) or str(f.annotation)
        rows.append({"name": f.alias or name, "type": annotation.replace("typing.", ""),
                     "default": default, "required": f.is_required(),
                     "description": f.description or ""})
    return rows


#: widest the reward list is drawn (a terminal, a pipe or a doc page alike)
REWARDS_WIDTH = 100
#: longest default value shown in the reward list (the full one: ``rewardkit rewards NAME``)
DEFAULT_CHARS = 12


def cmd_rewards(args: argparse.Namespace) -> int:
    """The registered rewards: a list at most :data:`REWARDS_WIDTH` columns wide with
    defaults abbreviated (``NAME`` filters by a part of the name), or one reward in full
    when ``NAME`` is exactly its name."""
    from rewardkit.registry import registry

    classes = registry.rewards()
    exact = [cls for cls in classes if cls.name == args.name]
    if args.name and not exact:
        classes = [cls for cls in classes if args.name.lower() in cls.name.lower()]
        if not classes:
            raise UsageError(f"no registered reward's name contains {args.name!r} "
                             "(`rewardkit rewards` lists them all)")
    rows: list[dict[str, Any]] = [{"name": cls.name, "plugin": cls.plugin, "mode": str(cls.mode),
             "group": cls.group, "description": cls.description,
             "params": _params_summary(cls)} for cls in exact or classes]
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return EXIT_USAGE if registry.clashes() else EXIT_OK
    if exact and args.all:
        _print_reward(rows[0], exact[0])
    elif exact:
        _print_reward_brief(rows[0], exact[0])
    else:
        _print_reward_list(rows)
    clashes = registry.clashes()
    for message in clashes.values():
        err.print(f"error: {message}; configs using this name fail until one plugin is "
                  "removed or REWARDKIT_PLUGINS leaves it out", markup=False)
    return EXIT_USAGE if clashes else EXIT_OK


def _print_reward_list(rows: list[dict[str, Any]]) -> None:
    """Per reward: its name, plugin and mode on one line, then its description and its
    params (defaults abbreviated) wrapped to :data:`REWARDS_WIDTH` columns."""
    import textwrap

    width = min(out.width, REWARDS_WIDTH)
    name_width = max((len(r["name"]) for r in rows), default=0)
    for r in rows:
        mode = r["mode"] + (" group" if r["group"] else "")
        out.print(f"[bold]{r['name']:<{name_width}}[/bold]  {r['plugin']}, {mode}")
        params = ", ".join(f"{p['name']}={_short(p['default'])}" if not p["required"]
                           else f"{p['name']} (required)" for p in r["params"])
        for text in (r["description"], f"params: {params}" if params else "no params"):
            out.print(textwrap.fill(text, width, initial_indent="    ",
                                    subsequent_indent="    "), markup=False)
    out.print(f"{len(rows)} reward(s); one in full: rewardkit rewards NAME", markup=False)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= DEFAULT_CHARS else text[:DEFAULT_CHARS - 1] + "…"


def _print_reward_brief(row: dict[str, Any], cls: Any) -> None:
    """One reward on a screen: its summary (the docstring's first paragraph), one line per
    parameter (its default and the first sentence of its description) and its example;
    ``--all`` prints the rest."""
    import inspect
    import textwrap

    width = min(out.width, REWARDS_WIDTH)
    mode = row["mode"] + (" group" if row["group"] else "")
    out.print(f"[bold]{row['name']}[/bold]  ({row['plugin']}, {mode})")
    paragraphs = [" ".join(p.split()) for p in
                  (inspect.getdoc(cls) or row["description"] or "").split("\n\n") if p.strip()]
    if paragraphs:
        out.print(textwrap.fill(paragraphs[0], width), markup=False)
    if row["params"]:
        out.print("params:", markup=False)
    for p in row["params"]:
        default = "required" if p["required"] else f"= {_short(p['default'])}"
        about = re.split(r"(?<=\.)\s(?=[A-Z])", " ".join(p["description"].split()), maxsplit=1)[0]
        line = f"  {p['name']} {default}: {about}" if about else f"  {p['name']} {default}"
        out.print(line if len(line) <= width else line[:width - 1] + "…", markup=False)
    if not row["params"]:
        out.print("no parameters", markup=False)
    example = next((p[p.index("Example"):] for p in paragraphs if "Example" in p), None)
    if example:
        out.print(textwrap.fill(example, width), markup=False)
    out.print(f"the whole description and each parameter in full: rewardkit rewards "
              f"{row['name']} --all", markup=False)


def _print_reward(row: dict[str, Any], cls: Any) -> None:
    """One reward in full: what it pays (its docstring) and every parameter."""
    import inspect

    mode = row["mode"] + (" group" if row["group"] else "")
    out.print(f"[bold]{row['name']}[/bold]  ({row['plugin']}, {mode})")
    doc = inspect.getdoc(cls) or row["description"]
    out.print(doc, markup=False)
    if not row["params"]:
        out.print("no parameters", markup=False)
        return
    table = Table(title="params", width=min(out.width, REWARDS_WIDTH))
    for col in ("name", "type", "default", "description"):
        table.add_column(col, overflow="fold")
    for p in row["params"]:
        table.add_row(p["name"], p["type"], "required" if p["required"] else repr(p["default"]),
                      p["description"])
    out.print(table)


def cmd_plugins(args: argparse.Namespace) -> int:
    from rewardkit.install_clash import clashes
    from rewardkit.registry import registry

    plugins = registry.plugins()
    for clash in clashes():  # on stderr, so --json stays the plugin list
        err.print(f"[bold red]install clash:[/] {escape(clash.advice())}")
    if args.json:
        print(json.dumps([p.__dict__ for p in plugins], indent=2))
        return EXIT_OK
    table = Table(title="plugins")
    for col in ("plugin", "distribution", "version", "rewards", "sections", "error"):
        table.add_column(col, overflow="fold")
    for p in plugins:
        table.add_row(p.name, p.distribution, p.version, ", ".join(p.rewards),
                      ", ".join(p.sections), p.error)
    out.print(table)
    return EXIT_OK


# -- validate / schema -----------------------------------------------------------------
def cmd_validate(args: argparse.Namespace) -> int:
    from rewardkit.config import load_config
    from rewardkit.reward_set import RewardSet

    rs = RewardSet(load_config(args.config))
    rows = rs.describe(args.step)
    for row in rows:
        row["weight_text"] = _weight_text(row, args.step)
    if args.json:
        print(json.dumps({"config": args.config, "valid": True, "step": args.step,
                          "components": rows}, indent=2, default=str))
        return EXIT_OK
    table = Table(title=f"{args.config}: valid ({rs.config.aggregate}, step {args.step})")
    for col in ("component", "reward", "mode", "weight", "when", "params"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["component"], r["reward"], r["mode"], r["weight_text"],
                      json.dumps(r["when"]) if r["when"] else "",
                      json.dumps(r["params"], default=str))
    out.print(table)
    return EXIT_OK


def _weight_text(row: dict[str, Any], step: int) -> str:
    """A weight as configured, then its value at ``step`` when it varies: ``0.5``;
    ``linear (start: 0.5, ...); at step 50: 0.7``; stages as
    ``0.5 until step 50, then 1; at step 0: 0.5``."""
    spec = row["weight_spec"]
    if isinstance(spec, int | float):
        return f"{spec:g}"

    def one(weight: Any) -> str:
        if isinstance(weight, int | float):
            return f"{weight:g}"
        rest = ", ".join(f"{k}: {v}" for k, v in weight.items() if k != "schedule")
        return f"{weight['schedule']} ({rest})"

    if isinstance(spec, dict):
        text = one(spec)
    else:
        text = ", then ".join(
            one(st["weight"]) + (f" until step {st['until_step']}" if "until_step" in st else "")
            for st in spec)
    return f"{text}; at step {step}: {row['weight']:g}"


def cmd_schema(args: argparse.Namespace) -> int:
    if args.markdown:
        from rewardkit.config.reference import render_markdown

        print(render_markdown(), end="")
        return EXIT_OK
    from rewardkit.config import config_schema

    print(json.dumps(config_schema(), indent=2))
    return EXIT_OK


# -- test -------------------------------------------------------------------------------
def cmd_test(args: argparse.Namespace) -> int:
    from rewardkit.testing.cases import CaseFileError, find_case_files, load_cases

    if args.judge or args.rows:
        return _judge_probes(args)
    files = find_case_files(args.paths)
    if not files:
        raise UsageError(f"no *.cases.yaml files under {' '.join(args.paths)}")
    results: list[dict[str, Any]] = []
    reports: list[tuple[Path, ExploitReport]] = []
    for path in files:
        try:
            loaded = load_cases(path)
            scores = _run_cases(path, loaded, results)
            spec = loaded.spec
            if spec.probes and not args.no_probes and spec.reward:
                _run_probes(path, loaded, results)
            if (spec.runs_exploits or (args.exploits and spec.exploits is None)) \
                    and not args.no_probes:
                reports.append((path, _run_exploits(path, loaded, scores, results)))
        except CaseFileError as exc:
            detail = str(exc)
            if "unknown reward" in detail and (hint := _uninstalled_plugin(path)):
                detail += f"\n{hint}"
            results.append({"file": str(path), "case": "(file)", "passed": False,
                            "problem": detail, "detail": detail, "score": None})
    return _print_test_results(args, results, reports, len(files))


def _judge_probes(args: argparse.Namespace) -> int:
    """``rewardkit test --judge CONFIG --rows ROWS``: the judge robustness probes."""
    from rich.markup import escape

    from rewardkit.reward_set import RewardSet
    from rewardkit.testing.judge_probes import ProbeRowsError, read_rows, run_judge_probes

    if not (args.judge and args.rows):
        raise UsageError("judge probes need both --judge CONFIG and --rows ROWS.jsonl")
    if args.limit < 1 or not 0 <= args.max_fpr <= 1:
        raise UsageError("--limit must be at least 1 and --max-fpr within 0..1")
    rs = RewardSet.from_file(args.judge)
    try:
        report = run_judge_probes(rs, read_rows(Path(args.rows), args.limit),
                                  args.pass_score, args.max_fpr, args.component)
    except ProbeRowsError as exc:
        raise UsageError(str(exc)) from None
    failed = report.failed()
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return EXIT_FAIL if failed else EXIT_OK
    for table in report.tables():
        out.print(table)
    for component, rate in failed:
        out.print("[red]FAIL[/red] " + escape(
            f"{component}: probe {rate.name!r} paid on {rate.paid}/{rate.rows} rows (over "
            f"{args.max_fpr:.1%}), e.g. {json.dumps(rate.example)[:120]}"))
    colour = "red" if failed else "green"
    out.print(f"[{colour}]{len(failed)} probe(s) over the false-positive limit[/{colour}]")
    return EXIT_FAIL if failed else EXIT_OK


def _uninstalled_plugin(cases: Path) -> str | None:
    """When ``cases`` lies in a plugin distribution (a pyproject.toml with a ``rewardkit``
    entry point) that is not installed here: what to run so its rewards register."""
    import tomllib
    from importlib import metadata

    for folder in list(cases.resolve().parents)[:4]:
        project = folder / "pyproject.toml"
        if not project.is_file():
            continue
        try:
            meta = tomllib.loads(project.read_text(encoding="utf-8")).get("project", {})
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return None
        name = meta.get("name")
        if not isinstance(name, str) or "rewardkit" not in (meta.get("entry-points") or {}):
            return None
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return (f"the plugin in {folder} ({name}) is not installed, so its rewards are not "
                    f"registered: pip install -e '{folder}[test]' (then rewardkit test again)")
        return None
    return None


def _run_cases(path: Path, loaded: LoadedCases, results: list[dict[str, Any]]
               ) -> list[Score]:
    """Run the golden cases of one file into ``results``; returns their scores."""
    scores = []
    for i in range(len(loaded.spec.cases)):
        problem, score = loaded.run_case(i)
        scores.append(score)
        results.append({"file": str(path), "case": loaded.case_id(i),
                        "passed": not problem, "problem": problem,
                        "detail": loaded.failure_text(i, problem, score)
                        if problem else "",
                        "score": score.to_dict()})
    return scores


def _run_probes(path: Path, loaded: LoadedCases, results: list[dict[str, Any]]) -> None:
    """Run the crash probes of one file's reward into ``results``."""
    from rewardkit.testing.probes import run_probes

    spec = loaded.spec
    assert spec.reward is not None  # probes run on a file of one reward
    prompt, reference, metadata = loaded.probe_inputs()
    for pr in run_probes(spec.reward, spec.params, reference, metadata,
                         prompt=prompt, timeout=spec.probe_timeout):
        results.append({"file": str(path), "case": f"probe:{pr.name}",
                        "passed": pr.passed, "problem": pr.problem,
                        "detail": f"{spec.reward} failed probe {pr.name!r}: "
                                  f"{pr.problem}" if pr.problem else "",
                        "score": pr.score.to_dict()})


def _run_exploits(path: Path, loaded: LoadedCases, scores: list[Score],
                  results: list[dict[str, Any]]) -> ExploitReport:
    """Run the exploit probes of one file into ``results``; returns their report."""
    from rewardkit.testing.exploits import Outcome, run_exploits

    report = run_exploits(loaded, scores)
    for er in report.results:
        if er.outcome is Outcome.SKIPPED:
            continue
        results.append({"file": str(path), "case": f"exploit:{er.name}",
                        "passed": er.passed, "problem": er.reason
                        if not er.passed else "",
                        "detail": report.failure_text(er)
                        if not er.passed else "",
                        "exploit": er.to_dict()})
    return report


def _print_test_results(args: argparse.Namespace, results: list[dict[str, Any]],
                        reports: list[tuple[Path, ExploitReport]], files: int) -> int:
    """``rewardkit test``'s output (JSON, or the tables and failures) and exit code."""
    failed = [r for r in results if not r["passed"]]
    if args.json:
        print(json.dumps({"passed": len(results) - len(failed), "failed": len(failed),
                          "results": results,
                          "exploits": [{"file": str(path), "target": rep.target,
                                        "checks": [str(c) for c in rep.checks],
                                        "results": [er.to_dict() for er in rep.results]}
                                       for path, rep in reports]},
                         indent=2, default=str))
        return EXIT_FAIL if failed else EXIT_OK
    if args.verbose:
        for r in results:
            if r["passed"]:
                out.print(f"[green]PASS[/green] {r['file']}::{r['case']}", highlight=False)
    for path, report in reports:
        out.print(report.table(str(path)))
    for r in failed:
        out.print(f"[red]FAIL[/red] {r['file']}::{r['case']}")
        out.print(r["detail"], markup=False)
    colour = "red" if failed else "green"
    out.print(f"[{colour}]{len(results) - len(failed)} passed, {len(failed)} failed[/{colour}]"
              f" in {files} file(s)")
    return EXIT_FAIL if failed else EXIT_OK


# -- report ---------------------------------------------------------------------------
def cmd_report(args: argparse.Namespace) -> int:
    from rewardkit.report import ReportInputError, write_report

    src = Path(args.scored)
    if not src.exists():
        raise UsageError(f"{src}: no such file or folder")
    default = src / "report.html" if src.is_dir() else src.with_name(src.stem + ".report.html")
    out_path = Path(args.out) if args.out else default
    try:
        summary = write_report(src, out_path, config=args.config, steps=args.steps,
                               curves=args.curves)
    except ReportInputError as exc:
        raise UsageError(str(exc)) from None
    for line_no, reason in summary.bad_lines:
        err.print(f"{src}:{line_no}: left out: {reason}", markup=False)
    out.print(f"wrote {out_path} ({summary.samples} samples, "
              f"{len(summary.components)} components)", markup=False)
    return EXIT_OK


# -- new-plugin -------------------------------------------------------------------------
def cmd_new_plugin(args: argparse.Namespace) -> int:
    from rewardkit.cli.scaffold import PluginNameError, next_steps, write_plugin

    try:
        folder = write_plugin(args.name, Path(args.dir))
    except PluginNameError as exc:
        raise UsageError(str(exc)) from None
    out.print(f"created {folder}\n  next: {next_steps(folder)}"
              "\n  (the test extra brings pytest; rewardkit's pytest plugin runs the cases)",
              markup=False)
    return EXIT_OK
