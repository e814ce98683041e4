"""``pairmeasures measures``: the bias measures (built-in and plugins), or one explained."""

from __future__ import annotations

import argparse
import json
import sys

from ...measures import DIRECTIONS
from ..tables import FORMATS, render

HELP = "list the bias measures (built-in and plugins), or explain one"
DESCRIPTION = ("Without NAME: every measure served by pairmeasures, with which way is fair, its range and "
               "parameters. With NAME (a name or a measure string such as 'Duo(signed=True)@10'): that "
               "measure's direction, range, reference, every parameter (type, default, choices) and an "
               "example. Directions: " + "; ".join(f"{k}: {v}" for k, v in DIRECTIONS.items()) + ".")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME", help="a measure name or measure string")
    parser.add_argument("--format", choices=FORMATS, default="markdown", help="output format (default: markdown)")


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from .. import catalogue

    if args.name is None:
        sys.stdout.write(render(pd.DataFrame(catalogue.listing()), args.format))
        return 0
    info = catalogue.describe(catalogue.find(args.name))
    if args.format == "json":
        print(json.dumps(info, indent=2))
    elif args.format == "csv":
        fields = {k: info[k] for k in ("measure", "direction", "range")}
        sys.stdout.write(render(pd.DataFrame([{**fields, **p} for p in info["parameters"]]), "csv"))
    else:
        sys.stdout.write(catalogue.describe_markdown(info))
    return 0
