"""``pairmeasures seme analyze``: the PAIR paper's regression of opinion shift on mu+_DUO (issue 13, in progress)."""

from __future__ import annotations

import argparse

HELP = "regress posterior opinion on prior opinion and mu+_DUO (PAIR Table 3), for all trials and clicked ones"
DESCRIPTION = HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("responses", metavar="RESPONSES.csv")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--plot", default=None, metavar="FILE.png")


def run(args: argparse.Namespace) -> int:
    raise NotImplementedError("seme analyze is being built (issue 13)")
