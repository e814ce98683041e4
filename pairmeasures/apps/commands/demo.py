"""``pairmeasures demo``: pt.Experiment on the embedded toy corpus, relevance and bias per system."""

from __future__ import annotations

import argparse
import sys

from ..tables import FORMATS, render

HELP = "evaluate three toy systems on an embedded toy corpus"
DESCRIPTION = ("Run pt.Experiment on the embedded toy corpus (three questions, arguments for and against) and print "
               "relevance and bias per system.")
#: The measures reported without ``--measures``.
DEMO_MEASURES = ("nDCG@5", "Duo@5", "Duo(signed=True)@5", "rND@5", "rKL@5")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="markdown", help="table format (default: markdown)")
    parser.add_argument("--measures", nargs="+", default=list(DEMO_MEASURES), metavar="MEASURE",
                        help=f"measures to report (default: {' '.join(DEMO_MEASURES)})")
    parser.add_argument("--quiet", action="store_true", help="hide warnings about queries with nothing to measure")


def run(args: argparse.Namespace) -> int:
    import pyterrier as pt

    from ... import DegenerateQueryWarning
    from ...demo import load_toy
    from ...measures.parsing import parse_measure
    from ..console import warnings_shown

    toy = load_toy()
    metrics = [parse_measure(m) for m in args.measures]
    names = list(toy.runs)
    with warnings_shown("demo", ("ignore" if args.quiet else "default", DegenerateQueryWarning)):
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
