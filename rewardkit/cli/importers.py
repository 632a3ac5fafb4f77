"""``rewardkit import openai-graders FILE.json [-o CONFIG.yaml]``: an OpenAI grader object as
a rewardkit config (:mod:`rewardkit.importers.openai_graders`). The config is validated
against the installed rewards before it is written; a grader piece without a faithful
counterpart is refused by name (exit 2, nothing written)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from rewardkit.cli import EXIT_OK, err
from rewardkit.hookspecs import Subcommands


def add_import(subparsers: Subcommands) -> None:
    p = subparsers.add_parser("import", help="another framework's reward definition as a "
                              "rewardkit config (openai-graders)")
    kinds = p.add_subparsers(title="formats", metavar="FORMAT")
    g = kinds.add_parser("openai-graders", help="an OpenAI grader object (string_check, "
                         "text_similarity, score_model, label_model, python, multi)")
    g.add_argument("file", help="JSON: a grader, {\"grader\": ...} or a fine-tuning job's "
                   "method")
    g.add_argument("-o", "--out", help="write the config here (default: standard output)")
    g.add_argument("--reference-field", default="reference", metavar="FIELD",
                   help="the item field your rows carry as `reference` (default: reference); "
                   "other {{item.X}} are read from the row's column X")
    g.add_argument("--judge-base-url", default="https://api.openai.com/v1",
                   help="llm_judge endpoint of score_model / label_model graders (default: "
                   "OpenAI's API; a vLLM server: http://HOST:8000/v1)")
    g.add_argument("--api-key-env", default="OPENAI_API_KEY",
                   help="environment variable holding the judge's API key ('' for none)")
    g.set_defaults(func=cmd_import_openai_graders)
    p.set_defaults(func=lambda args: _need_format(p))


def _need_format(parser: argparse.ArgumentParser) -> int:
    from rewardkit.cli import UsageError

    raise UsageError("rewardkit import needs a format: rewardkit import openai-graders "
                     "FILE.json")


def cmd_import_openai_graders(args: argparse.Namespace) -> int:
    from rewardkit.config import parse_config
    from rewardkit.importers.openai_graders import READ_FROM, import_graders, read_grader_file

    grader = read_grader_file(args.file)
    config, notes = import_graders(grader, judge_base_url=args.judge_base_url,
                                   api_key_env=args.api_key_env or None,
                                   reference_field=args.reference_field)
    parse_config(config, f"{args.file} (imported)")
    header = [f"# imported by `rewardkit import openai-graders` from {Path(args.file).name}",
              f"# (grader fields as in {READ_FROM});",
              "# see docs/migrate-from-openai-graders.md"]
    header += [f"# note: {n}" for n in notes]
    text = "\n".join(header) + "\n" + yaml.dump(config, Dumper=_BlockDumper, sort_keys=False,
                                                 allow_unicode=True, width=88)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        err.print(f"wrote {args.out}: {_summary(config)}", markup=False)
    else:
        sys.stdout.write(text)
    for note in notes:
        err.print(f"note: {note}", markup=False)
    return EXIT_OK


class _BlockDumper(yaml.SafeDumper):
    """Safe YAML with multi-line strings (a python grader's source, a judge's template) as
    literal blocks, readable and editable."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _text)


def _summary(config: dict[str, Any]) -> str:
    return ", ".join(f"{name} ({c['reward']}, weight {c['weight']:g})"
                     for name, c in config["rewards"].items())
