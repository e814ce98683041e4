"""``pairmeasures eval``: a run file against qrels, as the ir_measures command does, with the bias measures.

The module is ``eval_`` because ``eval`` is a builtin; the command is ``eval``. It takes the ``ir_measures``
command's arguments and flags (``-q/--by_query``, ``-n/--no_summary``, ``-p/--places``, ``-o/--output_format``,
``--provider``; QRELS may be an ir_datasets id) and prints its output by default.
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

from ..evaluate import FILES_HELP, OUTPUT_FORMATS

#: The most decimal places ``-p`` prints (a double holds about 17 significant digits; ``-p -1`` prints them all).
MAX_PLACES = 20

HELP = "evaluate a run file against qrels, like the ir_measures command, with the bias measures"
DESCRIPTION = ("Evaluate RUN against QRELS with each MEASURE (an ir_measures measure string: relevance "
               "measures such as nDCG@10 and bias measures such as \"rKL(group='beir:DIR')@10\"; one argument may "
               "hold several, separated by spaces), printing what the ir_measures command prints: the mean over "
               "queries in the order given (measure<TAB>value), or with -q one value per query and measure "
               "(query<TAB>measure<TAB>value, queries sorted) and then the means under query 'all'. " + FILES_HELP +
               " QRELS may also be an ir_datasets id (e.g. pair/procon). Side information the run lacks comes from "
               "resources named in the measure (polarity='tsv:FILE', group='beir:DIR', text='corpus:DIR'). "
               "Queries with nothing to measure are reported once per measure on stderr; so are judged queries the "
               "run lacks and run queries that are not judged (a run and qrels that share no query are an error).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("qrels", metavar="QRELS", help="qrels file (TREC, or BEIR .tsv), or an ir_datasets id")
    parser.add_argument("run_file", metavar="RUN", help="run file (TREC, or .tsv with a header and side columns)")
    parser.add_argument("measures", nargs="+", metavar="MEASURE", help="measure strings, e.g. nDCG@10 Duo@10")
    parser.add_argument("-q", "--by_query", "--per-query", dest="per_query", action="store_true",
                        help="one value per query and measure, then the means under query 'all'")
    parser.add_argument("-n", "--no_summary", action="store_true", help="with -q: leave out the means")
    parser.add_argument("-p", "--places", type=int, default=4, metavar="P",
                        help=f"decimal places of the values, 0 to {MAX_PLACES} (default 4; -1: every digit, as Python "
                             "prints it)")
    parser.add_argument("-o", "--output_format", "--format", dest="format", choices=OUTPUT_FORMATS, default="tsv",
                        help="tsv (default) or jsonl, the lines the ir_measures command prints; or a markdown, csv "
                             "or json table")
    parser.add_argument("--provider", default=None, metavar="NAME",
                        help="compute every measure with this ir_measures provider (e.g. pytrec_eval, pairmeasures); "
                             "default: each measure's first provider, as ir_measures chooses")


def run(args: argparse.Namespace) -> int:
    from ...io.runfiles import check_shared_queries, load_run_file
    from ...measures.parsing import parse_measures, split_measure_texts
    from ..console import warnings_shown
    from ..evaluate import evaluate, output, reads_frames

    if args.no_summary and not args.per_query:
        raise ValueError("-n/--no_summary leaves the means out of the per-query lines: give it with -q/--by_query")
    if not -1 <= args.places <= MAX_PLACES:
        raise ValueError(f"-p/--places must be -1 (every digit, as Python prints the value) or 0 to {MAX_PLACES} (a "
                         f"value holds about 17 significant digits), got {args.places}")
    measures = parse_measures(split_measure_texts(args.measures))
    collecting = gc.isenabled()
    gc.disable()  # reading a run makes millions of objects and no cycles: the collector would only look at them
    try:
        with warnings_shown("eval", ("once", Warning)):
            qrels, qrels_name = _qrels(args.qrels)
            run = load_run_file(args.run_file, columns=reads_frames(measures, args.provider))
            check_shared_queries(qrels.queries(), run.queries(), qrels_name, f"RUN file {args.run_file!r}")
            rows = evaluate(qrels, run, measures, per_query=args.per_query, summary=not args.no_summary,
                            provider=args.provider)
    finally:
        if collecting:
            gc.enable()
    sys.stdout.write(output(rows, args.format, per_query=args.per_query, places=args.places))
    return 0


def _qrels(name: str):
    """The qrels of a file, or, where no file has that name, of the ir_datasets dataset with that id (as the
    ir_measures command reads them), with how messages name them."""
    from ...io.runfiles import Qrels, load_qrels_file

    if Path(name).expanduser().exists():
        return load_qrels_file(name), f"QRELS file {name!r}"
    try:
        import ir_datasets
    except ImportError:
        ir_datasets = None
    dataset = None
    if ir_datasets is not None:
        try:
            dataset = ir_datasets.load(name)
        except KeyError:
            pass
    if dataset is None:
        raise FileNotFoundError(f"QRELS file {name!r} does not exist" +
                                (", and no ir_datasets dataset has that id" if ir_datasets is not None else ""))
    if not dataset.has_qrels():
        raise ValueError(f"QRELS: the ir_datasets dataset {name!r} has no qrels")
    judgements = [(q.query_id, q.doc_id, int(q.relevance)) for q in dataset.qrels_iter()]
    if not judgements:
        raise ValueError(f"QRELS: the ir_datasets dataset {name!r} holds no judgements")
    query_ids, doc_ids, relevance = (list(column) for column in zip(*judgements))
    return Qrels(query_ids, doc_ids, relevance), f"QRELS of {name!r}"
