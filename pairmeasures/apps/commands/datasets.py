"""``pairmeasures datasets``: the registered datasets, where each resolves from, whether it is here."""

from __future__ import annotations

import argparse
import sys

from ..tables import FORMATS, render

HELP = "list the registered datasets, where each resolves from, whether it is here"
DESCRIPTION = ("List the pair/... datasets registered with ir_datasets, where their files resolve from "
               "(--data or $PAIRMEASURES_DATA, the download cache $IR_DATASETS_HOME/pair, or a download "
               "from the public source) and whether they are available without downloading.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="markdown", help="table format (default: markdown)")
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="a mirror folder laid out like shared/data (default: $PAIRMEASURES_DATA)")


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from ...datasets import status

    sys.stdout.write(render(pd.DataFrame(status(args.data)), args.format))
    return 0
