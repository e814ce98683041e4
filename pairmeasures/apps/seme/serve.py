"""``pairmeasures seme serve``: the local study web app (issue 13, in progress)."""

from __future__ import annotations

import argparse

HELP = "serve the study to participants on a local web app; responses go to SQLite"
DESCRIPTION = HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("material", metavar="MATERIAL")
    parser.add_argument("--db", required=True, metavar="FILE")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("seme serve is being built (issue 13)")
