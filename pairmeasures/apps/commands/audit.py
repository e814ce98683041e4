"""``pairmeasures audit``: run retrieval systems over a bias benchmark into a leaderboard of relevance and bias.

This module only fills an :class:`~pairmeasures.audit.AuditRequest` from the command line (or reads one:
``--request``), runs it (:func:`~pairmeasures.audit.run_audit`) and writes the outputs (:mod:`pairmeasures.apps.audit`).
"""

from __future__ import annotations

import argparse
import sys

from ...audit.request import DEFAULT_LAMBDAS, DEFAULT_SYSTEMS
from ...sideinfo.polarity import TEXT_FIELDS
from ..audit.printed import PRINTED_FORMATS
from . import add_engine_arguments

HELP = "run retrieval systems over a bias benchmark: a leaderboard of relevance and bias"
DESCRIPTION = ("Build each system from its spec, run it over the dataset's queries (runs cached), evaluate "
               "relevance and bias per query, test each system against the baseline, bootstrap confidence "
               "intervals, and write the leaderboard, per-query values, plots and report.html into --out.")


def help_epilog() -> str:
    """What ``pairmeasures audit --help`` says after the options: specs, measures, statistics, outputs, examples."""
    from ...pipelines.specs import stage_listing

    stages = "\n".join(f"  {name:<40} {what}" for name, what in stage_listing().items())
    return (f"system specs: stages joined by '>>'; what a stage needs (document text, polarity) is inserted\n{stages}\n\n"
            "measures (default: what the dataset supports): nDCG@1 nDCG@10 R@100 Duo@10; rND@10 rKL@10 rRD@10 EXP@10\n"
            "  NDKL@10 ARP@10 with gold labels; TExFAIR@10 NFaiRR@10 RaB@10 where a gender term list applies. Bias measures leave out queries\n"
            "  with nothing to measure (degenerate='exclude') and count them: n in every table.\n\n"
            "statistics: paired bootstrap 95% intervals of each mean and of each system's difference to --baseline\n"
            "  (--resamples, --seed); p-values of pt.Experiment's paired t-test against the baseline with --correction; --by FIELD\n"
            "  means per value of a query field with counts (cells under --min-cell are warned about). DUO's axes: their\n"
            "  held-out accuracy on the labelled perspectives (5 folds per query, --seed), next to DUO and in the report.\n\n"
            "trade-off: for a system with a duogreedy(...) stage, DuoGreedy and MMR (pm.TopKMMR on the bi-encoder) re-rank\n"
            "  the run of the spec before that stage at each of --lambdas: tradeoff.csv, tradeoff.png and the bias each\n"
            "  reaches at a relevance cost of 0.01, 0.02 and 0.05 (--no-tradeoff skips it).\n\n"
            "engines: --engine ray embeds what the audit lacks in a Ray actor pool (a private local Ray on 127.0.0.1, or\n"
            "  the cluster at --address) and runs ce(...) stages over query partitions there; retrieval, evaluation and the\n"
            "  report stay here, and a warm audit starts no Ray (docs/ray.md).\n\n"
            "outputs in --out DIR (written to a temporary folder, renamed into place at the end): leaderboard.json,\n"
            "  leaderboard.md, per_query.csv, summary.csv, by_FIELD.csv, tradeoff.csv, manifest.json (versions of what ran,\n"
            "  every input file's sha256, seeds, timings per step with the embedding apart, cache hits), relevance_vs_bias.png\n"
            "  (a panel per bias measure), bias_by_cutoff.png, tradeoff.png, by_FIELD_MEASURE.png and report.html (readable\n"
            "  tables, † for a significant difference to the baseline). Runs are cached under the cache folder (runs/),\n"
            "  evaluation outputs and PNGs under evaluations/, keyed by what they derive from. Progress goes to stderr: a bar\n"
            "  on a terminal, a line every 30 seconds in a log file. Paths in the manifest, leaderboard.json and report are\n"
            "  relative to --out (--absolute-paths: absolute).\n\n"
            "printed: the leaderboard in blocks of columns that fit the terminal (COLUMNS; 100 when not a terminal), means\n"
            "  with † and (n), the common-query means where they differ; --format markdown|csv|json prints the whole table.\n\n"
            "reproduce: --request FILE re-runs the audit a request names (a request's JSON, or manifest.json of a written\n"
            "  audit: its 'request' key) with the same per-query values; only --out, --force, --format, --absolute-paths\n"
            "  and the engine's options may be given with it.\n\n"
            "examples:\n"
            "  pairmeasures audit --out audit-demo\n"
            "  pairmeasures audit --dataset pair/procon --systems bm25 'bm25>>dense>>duogreedy(0.5)' --out procon\n"
            "  pairmeasures audit --dataset DIR --systems run:bm25.run run:bert.run --by category --out grep --force\n"
            "  pairmeasures audit --dataset pair/procon --systems bm25 dense --engine ray --out procon-ray\n"
            "  pairmeasures audit --request procon/manifest.json --out procon-again")


EPILOG = help_epilog()
FORMATTER = argparse.RawDescriptionHelpFormatter
#: The extra this command needs (a module of it missing is named with ``pip install 'pairmeasures[audit]'``).
EXTRA = "audit"

#: The options that fill a request (option's destination -> the option); ``--request`` takes their place.
REQUEST_OPTIONS = {"dataset": "--dataset", "data": "--data", "systems": "--systems", "names": "--names",
                   "measures": "--measures", "baseline": "--baseline", "correction": "--correction",
                   "resamples": "--resamples", "seed": "--seed", "by": "--by", "min_cell": "--min-cell", "text": "--text",
                   "positive": "--positive", "model": "--model", "queries": "--queries", "num_results": "--num-results",
                   "k": "-k", "lambdas": "--lambdas", "no_tradeoff": "--no-tradeoff"}


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
    parser.add_argument("--request", default=None, metavar="FILE",
                        help="re-run the audit FILE asks for: a request's JSON or a written audit's manifest.json (its "
                             "'request'); the same per-query values. The options above that fill a request are then "
                             "left out")
    parser.add_argument("--absolute-paths", action="store_true",
                        help="write absolute paths in manifest.json, leaderboard.json and report.html (the working "
                             "folder, a folder dataset, a model folder; default: relative to --out)")


def request_of(args: argparse.Namespace, parser_defaults: dict):
    """The :class:`~pairmeasures.audit.AuditRequest` of the command line: ``--request FILE`` read (a ValueError naming
    an option that fills a request given beside it), else one filled from the options."""
    from ...audit import AuditRequest, read_request

    if args.request is not None:
        given = [flag for option, flag in REQUEST_OPTIONS.items()
                 if getattr(args, option) != parser_defaults.get(option)]
        if given:
            flags = ", ".join(given)
            raise ValueError(f"--request {args.request} re-runs the audit it names as it was: leave out {flags} (or "
                             "leave out --request and give every option)")
        return read_request(args.request)
    return AuditRequest(dataset=args.dataset, systems=tuple(args.systems or DEFAULT_SYSTEMS),
                        names=None if args.names is None else tuple(args.names),
                        measures=None if args.measures is None else tuple(args.measures), baseline=args.baseline,
                        by=args.by, correction=args.correction, resamples=args.resamples, seed=args.seed,
                        min_cell=args.min_cell, data=args.data, text=args.text, num_results=args.num_results, k=args.k,
                        model=args.model, positive=args.positive, queries=args.queries, tradeoff=not args.no_tradeoff,
                        lambdas=tuple(args.lambdas))


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ...analysis import SmallCellWarning
    from ...analysis.manifest import Manifest, PathRecord
    from ...analysis.polarity import AxisWarning
    from ...audit import run_audit
    from ...audit.engine import compute_on
    from ...io.memo import CacheWarning
    from ...sideinfo import InputWarning
    from ..audit.outputs import claim_out, write_outputs
    from ..audit.printed import leaderboard_text
    from ..collection import batch_collection
    from ..console import warnings_shown

    defaults = argparse.ArgumentParser()
    add_arguments(defaults)
    request = request_of(args, vars(defaults.parse_args(["--out", "-"])))
    out = Path(args.out).expanduser()
    manifest = Manifest(command=["pairmeasures", *sys.argv[1:]], paths=PathRecord(out, args.absolute_paths))
    # the dependencies' deprecations are not the user's business; small --by cells, damaged caches, runs that
    # lack some queries and polarity axes no better than chance always are
    with warnings_shown("audit", ("ignore", Warning), ("always", SmallCellWarning), ("always", CacheWarning),
                        ("always", InputWarning), ("always", AxisWarning)):
        # the engine's options and address checked first (seconds); --out locked and checked before any work
        with compute_on(args.engine, args.address, args.workers) as pool, claim_out(out, args.force) as claim, \
                batch_collection():
            result = run_audit(request, engine=args.engine, address=args.address, workers=args.workers,
                               manifest=manifest, opened=pool)
            write_outputs(claim, result)
    sys.stdout.write(leaderboard_text(result, out, args.format))
    if args.format == "markdown":  # (text says what its marks mean and where the rest is itself)
        common = any(str(c).endswith(("common queries", "common query")) for c in result.leaderboard.columns)
        print("\nArrows: bias measures ↓ lower is fairer, ↑ higher is fairer, ↕ signed (0 = balanced); 'n' columns count "
              "the queries measured" + ("; 'on N common queries' columns average every system over the same queries, "
                                        "to compare rows" if common else "") + f". Report: {out / 'report.html'}")
    elif args.format != "text":  # csv, json: stdout holds the table alone
        print(f"report: {out / 'report.html'}", file=sys.stderr)
    return 0
