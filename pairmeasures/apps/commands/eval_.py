"""``pairmeasures eval``: a run file against qrels, like the ir_measures command, with the bias measures.

The module is ``eval_`` because ``eval`` is a builtin; the command is ``eval``.
"""

from __future__ import annotations

import argparse
import sys

from ..evaluate import FILES_HELP
from ..tables import FORMATS, render

HELP = "evaluate a run file against qrels, like the ir_measures command, with the bias measures"
DESCRIPTION = ("Evaluate RUN against QRELS with each MEASURE (an ir_measures measure string: relevance "
               "measures such as nDCG@10 and bias measures such as \"rKL(group='beir:DIR')@10\"), printing the "
               "mean over queries in the order given, or with -q one value per query and measure, then the "
               "means under query 'all'. " + FILES_HELP + " Side information the run lacks comes from "
               "resources named in the measure (polarity='tsv:FILE', group='beir:DIR', text='corpus:DIR'). "
               "Queries with nothing to measure are reported once per measure on stderr; so are judged queries the "
               "run lacks and run queries that are not judged (a run and qrels that share no query are an error).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("qrels", metavar="QRELS", help="qrels file (TREC, or BEIR .tsv)")
    parser.add_argument("run_file", metavar="RUN", help="run file (TREC, or .tsv with a header and side columns)")
    parser.add_argument("measures", nargs="+", metavar="MEASURE", help="measure strings, e.g. nDCG@10 Duo@10")
    parser.add_argument("-q", "--per-query", action="store_true", help="one value per query and measure")
    parser.add_argument("--format", choices=(*FORMATS, "tsv"), default="markdown",
                        help="markdown (default), csv, json, or tsv: headerless lines as the ir_measures command prints")


def run(args: argparse.Namespace) -> int:
    from ...sideinfo.runfiles import check_shared_queries, read_qrels_file, read_run_file
    from ..console import warnings_shown
    from ..evaluate import evaluate, parse_measures, tsv

    measures = parse_measures(args.measures)
    with warnings_shown("eval", ("once", Warning)):
        qrels, run = read_qrels_file(args.qrels), read_run_file(args.run_file)
        check_shared_queries(qrels, run, f"QRELS file {args.qrels!r}", f"RUN file {args.run_file!r}")
        table = evaluate(qrels, run, measures, args.per_query)
    sys.stdout.write(tsv(table) if args.format == "tsv" else render(table, args.format))
    return 0
