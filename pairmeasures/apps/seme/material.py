"""``pairmeasures seme material``: study material from a system's rankings (issue 13, in progress)."""

from __future__ import annotations

import argparse

HELP = "write study material: per query, orderings of maximal and minimal signed bias, with mu+_DUO"
DESCRIPTION = HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default=None, metavar="ID_OR_DIR")
    parser.add_argument("--system", default=None, metavar="SPEC")
    parser.add_argument("--out", required=True, metavar="FILE")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("seme material is being built (issue 13)")
