"""``pairmeasures seme export``: the study's responses as CSV (issue 13, in progress)."""

from __future__ import annotations

import argparse

HELP = "export the study's responses from SQLite to CSV, one row per participant"
DESCRIPTION = HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, metavar="FILE")
    parser.add_argument("--out", required=True, metavar="FILE")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("seme export is being built (issue 13)")
