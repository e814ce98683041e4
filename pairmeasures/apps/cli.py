"""The ``pairmeasures`` command line."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Optional, Sequence

from .tables import FORMATS, render

DEMO_MEASURES = ("nDCG@5", "Duo@5", "Duo(signed=True)@5", "rND@5", "rKL@5")


def _demo(args: argparse.Namespace) -> int:
    import ir_measures
    import pyterrier as pt

    from .. import DegenerateQueryWarning
    from ..demo import load_toy

    toy = load_toy()
    metrics = [ir_measures.parse_measure(m) for m in args.measures]
    names = list(toy.runs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if args.quiet else "default", DegenerateQueryWarning)
        table = pt.Experiment([pt.Transformer.from_df(toy.runs[n]) for n in names], toy.topics, toy.qrels,
                              eval_metrics=metrics, names=names)
    table = table[["name"] + [str(m) for m in metrics]]  # pt.Experiment orders columns by hash
    if args.format == "markdown":
        print(f"Toy corpus: {len(toy.topics)} questions, {len(toy.documents)} arguments, "
              f"{len(names)} systems (pairmeasures demo)\n")
    sys.stdout.write(render(table, args.format))
    if args.format == "markdown":
        print("\nnDCG: relevance (higher is better). Duo: indexical bias, 1 = opinions clustered at the top "
              "(signed: + leans pro). rND/rKL: group unfairness of pro/con labels, 0 = fairest.")
    return 0


def _measures(args: argparse.Namespace) -> int:
    import ir_measures

    from ..measures import PairMeasure

    rows = []
    for name, measure in sorted(ir_measures.measures.registry.items()):
        if isinstance(measure, PairMeasure) and name == measure.NAME:
            params = ", ".join(f"{p}" for p in measure.SUPPORTED_PARAMS if p != "cutoff")
            rows.append({"measure": name, "module": type(measure).__module__, "description": measure.SHORT_DESC,
                         "parameters": params})
    import pandas as pd

    sys.stdout.write(render(pd.DataFrame(rows), args.format))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pairmeasures",
        description="Measure bias in ranked lists (DUO, rND, rKL, rRD, plugin measures) next to relevance, "
                    "through ir_measures and PyTerrier.",
        epilog="Measures parse as in ir_measures, e.g. 'Duo(step=2)@10' or 'rKL(protected=\"con\")@10'.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser("demo", help="evaluate three toy systems on an embedded toy corpus",
                               description="Run pt.Experiment on the embedded toy corpus (three questions, "
                                           "arguments for and against) and print relevance and bias per system.")
    demo.add_argument("--format", choices=FORMATS, default="markdown", help="table format (default: markdown)")
    demo.add_argument("--measures", nargs="+", default=list(DEMO_MEASURES), metavar="MEASURE",
                      help=f"measures to report (default: {' '.join(DEMO_MEASURES)})")
    demo.add_argument("--quiet", action="store_true", help="hide warnings about queries with nothing to measure")
    demo.set_defaults(run=_demo)

    listing = commands.add_parser("measures", help="list the bias measures available (built-in and plugins)",
                                  description="List every measure served by pairmeasures, with its parameters.")
    listing.add_argument("--format", choices=FORMATS, default="markdown", help="table format (default: markdown)")
    listing.set_defaults(run=_measures)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``pairmeasures`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, NameError) as exc:  # bad measure names, bad input: one line, no traceback
        print(f"pairmeasures {args.command}: error: {exc}", file=sys.stderr)
        return 2
