"""``pairmeasures audit``: run retrieval systems over a bias benchmark into a leaderboard of relevance and bias.

The audit itself is :func:`pairmeasures.apps.audit.audit`; this module is its command line.
"""

from __future__ import annotations

import argparse
import sys

from ...sideinfo.polarity import TEXT_FIELDS
from ..audit import DEFAULT_LAMBDAS, DEFAULT_SYSTEMS, help_epilog
from ..audit.help import PRINTED_FORMATS
from . import add_engine_arguments

HELP = "run retrieval systems over a bias benchmark: a leaderboard of relevance and bias"
DESCRIPTION = ("Build each system from its spec, run it over the dataset's queries (runs cached), evaluate "
               "relevance and bias per query, test each system against the baseline, bootstrap confidence "
               "intervals, and write the leaderboard, per-query values, plots and report.html into --out.")
EPILOG = help_epilog()
FORMATTER = argparse.RawDescriptionHelpFormatter
#: The extra this command needs (a module of it missing is named with ``pip install 'pairmeasures[audit]'``).
EXTRA = "audit"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default=None, metavar="ID_OR_DIR",
                        help="a pairmeasures dataset id (pair/procon, ...) or a BEIR-layout folder (default: the "
                             "embedded demo corpus)")
    parser.add_argument("--data", default=None, metavar="DIR", help="mirror folder of dataset ids (default: $PAIRMEASURES_DATA)")
    parser.add_argument("--systems", nargs="+", default=None, metavar="SPEC",
                        help=f"system specs, also the leaderboard's names (default: {' '.join(DEFAULT_SYSTEMS)}); on the "
                             "MS MARCO gender sets QS2 and TREC DL 2019, 'published' adds the NFaiRR paper's ten runs "
                             "and 'published/NAME' one of them (docs/msmarco.md)")
    parser.add_argument("--names", nargs="+", default=None, metavar="NAME", help="names for the systems, one per spec")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder to write (must not exist, or an earlier audit with --force)")
    parser.add_argument("--force", action="store_true", help="replace --out when it holds an earlier audit")
    parser.add_argument("--measures", nargs="+", default=None, metavar="MEASURE",
                        help="measure strings as in 'pairmeasures eval' (default: what the dataset supports)")
    parser.add_argument("--baseline", default=None, metavar="NAME", help="system compared against (default: the first)")
    parser.add_argument("--correction", default="holm", metavar="METHOD",
                        help="multiple-testing correction, as pt.Experiment takes it (statsmodels names: holm, "
                             "bonferroni, fdr_bh, ...; default holm)")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--by", default=None, metavar="FIELD",
                        help="break bias down by a query field (e.g. domain, category, topics)")
    parser.add_argument("--min-cell", type=int, default=10, metavar="N", help="warn about --by cells under N queries (default 10)")
    parser.add_argument("--text", choices=TEXT_FIELDS, default=None,
                        help="document field(s) indexed, embedded and read by term measures (default: text; "
                             "title+text for Grep-BiasIR)")
    parser.add_argument("--positive", default=None, metavar="LABEL", help="the label of polarity +1 when the labels are not pro/con-like")
    parser.add_argument("--model", default=None, help="sentence-transformers folder for dense stages and polarity (default: offline all-MiniLM-L6-v2)")
    parser.add_argument("--queries", default=None, metavar="FILE",
                        help="audit only these query ids (one a line, '#' comments), e.g. the held-out split of "
                             "train-ibbr --held-out; systems still rank the whole corpus")
    parser.add_argument("--num-results", type=int, default=100, metavar="N", help="first-stage depth (default 100)")
    parser.add_argument("-k", type=int, default=10, help="default k of duogreedy(...) (default 10)")
    parser.add_argument("--lambdas", nargs="+", type=float, default=list(DEFAULT_LAMBDAS), metavar="LAMBDA",
                        help="Lambdas of the DuoGreedy-vs-MMR trade-off, in [0, 1] with 1 among them (default: "
                             f"{' '.join(f'{v:g}' for v in DEFAULT_LAMBDAS)})")
    parser.add_argument("--no-tradeoff", action="store_true",
                        help="skip the DuoGreedy-vs-MMR trade-off of systems with a duogreedy(...) stage")
    add_engine_arguments(parser, "where the model work runs: local (this process, default) or ray (the texts to "
                                 "embed go through a Ray actor pool, ce(...) stages over query partitions)",
                         "a private local Ray on 127.0.0.1, started only when something needs computing")
    parser.add_argument("--format", choices=PRINTED_FORMATS, default="text",
                        help="leaderboard printed: text, what fits the terminal's width (default); markdown, csv or "
                             "json, the whole table as leaderboard.md has it")
    parser.add_argument("--absolute-paths", action="store_true",
                        help="write absolute paths in manifest.json, leaderboard.json and report.html (the working "
                             "folder, a folder dataset, a model folder; default: relative to --out)")


def run(args: argparse.Namespace) -> int:
    from ...analysis import SmallCellWarning
    from ...analysis.polarity import AxisWarning
    from ...sideinfo import InputWarning
    from ...sideinfo.memo import CacheWarning
    from ..audit import audit, default_dataset, leaderboard_text
    from ..console import warnings_shown

    # the dependencies' deprecations are not the user's business; small --by cells, damaged caches, runs that
    # lack some queries and polarity axes no better than chance always are
    with warnings_shown("audit", ("ignore", Warning), ("always", SmallCellWarning), ("always", CacheWarning),
                        ("always", InputWarning), ("always", AxisWarning)):
        result = audit(args.dataset or default_dataset(), args.systems or list(DEFAULT_SYSTEMS), args.out,
                       measures=args.measures, baseline=args.baseline, by=args.by, correction=args.correction,
                       resamples=args.resamples, seed=args.seed, min_cell=args.min_cell, data=args.data,
                       text=args.text, num_results=args.num_results, k=args.k, model=args.model,
                       positive=args.positive, force=args.force, names=args.names, tradeoff=not args.no_tradeoff,
                       lambdas=args.lambdas, queries=args.queries, command=["pairmeasures", *sys.argv[1:]],
                       engine=args.engine, address=args.address, workers=args.workers,
                       absolute_paths=args.absolute_paths)
    sys.stdout.write(leaderboard_text(result, args.format))
    if args.format == "markdown":  # (text says what its marks mean and where the rest is itself)
        common = any(str(c).endswith(("common queries", "common query")) for c in result["leaderboard"].columns)
        print("\nArrows: bias measures ↓ lower is fairer, ↑ higher is fairer, ↕ signed (0 = balanced); 'n' columns count "
              "the queries measured" + ("; 'on N common queries' columns average every system over the same queries, "
                                        "to compare rows" if common else "") + f". Report: {result['out'] / 'report.html'}")
    elif args.format != "text":  # csv, json: stdout holds the table alone
        print(f"report: {result['out'] / 'report.html'}", file=sys.stderr)
    return 0
