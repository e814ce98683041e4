"""The ``pairmeasures`` command line."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Optional, Sequence

from ..analysis.polarity import ANCHORS
from ..measures import DIRECTIONS
from ..sideinfo.embed import BACKENDS
from ..sideinfo.polarity import TEXT_FIELDS
from .evaluate import FILES_HELP
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
    import pandas as pd

    from . import catalogue

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


def _eval(args: argparse.Namespace) -> int:
    from ..sideinfo.runfiles import read_qrels_file, read_run_file
    from .evaluate import evaluate, parse_measures, tsv

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"pairmeasures eval: {category.__name__}: {message}", file=sys.stderr)

    measures = parse_measures(args.measures)
    qrels, run = read_qrels_file(args.qrels), read_run_file(args.run_file)
    with warnings.catch_warnings():
        warnings.simplefilter("once")
        warnings.showwarning = show
        table = evaluate(qrels, run, measures, args.per_query)
    sys.stdout.write(tsv(table) if args.format == "tsv" else render(table, args.format))
    return 0


def _validate_polarity(args: argparse.Namespace) -> int:
    from ..analysis.polarity import ACCURACIES, bootstrap_accuracies, nothing_measured, validate_polarity
    from ..sideinfo.embed import Embedder
    from .tables import check_writable, write_table

    resamples = args.bootstrap if args.bootstrap is not None or args.compare is None else 10_000
    if resamples is not None and resamples < 1:
        raise ValueError(f"--bootstrap must be at least 1, got {resamples}")
    if args.per_query:
        check_writable(args.per_query, args.force)
    models = [args.model] + ([args.compare] if args.compare is not None else [])
    results = []
    for model in models:
        embedder = Embedder(model, cache=args.cache or True, progress=args.progress, backend=args.backend)
        results.append(validate_polarity(args.folder, text=args.text, positive=args.positive, embedder=embedder,
                                         anchors=args.anchors, anchor_within=args.anchor_within, fit=args.fit,
                                         distractors=args.distractors))
    result = results[0]
    problem = nothing_measured(result)
    if resamples is not None and not problem:
        result["bootstrap"] = bootstrap_accuracies(results, resamples=resamples, seed=args.seed)
    per_query = result.pop("per_query")
    if args.compare is not None:
        compared = results[1]
        result["compare"] = {key: value for key, value in compared.items() if key != "per_query"}
        by_query = {row["query_id"]: row for row in compared["per_query"]}
        per_query = [{**row, "compare_accuracy": by_query[row["query_id"]]["accuracy"],
                      "compare_consistent_accuracy": by_query[row["query_id"]]["consistent_accuracy"]}
                     for row in per_query]
    if args.per_query and not problem:
        import pandas as pd

        write_table(pd.DataFrame(per_query), args.per_query, args.force)
    if args.json:
        print(json.dumps(result, indent=2, allow_nan=False))
    elif not problem:
        skipped = ", ".join(f"{n} ({reason})" for reason, n in result["skipped_queries"].items()) or "none"
        axis = "first principal axis" if args.anchors == "none" else f"anchors {args.anchors}, within {args.anchor_within} axes"
        model = result["model"] + ("" if result["backend"] == "torch" else f" [{result['backend']}]")
        stats = result.get("bootstrap")
        interval = {name: "" if stats is None else f" [{stats[name][0]['low']:.4f}, {stats[name][0]['high']:.4f}]"
                    for name in ACCURACIES}
        fitted = "" if args.fit is None else f"; fitted on {result['fit']}" + (" less its distractors" if args.distractors else "")
        print(f"{result['dataset']} with {model} ({result['text']}; {axis}; positive = {result['positive']!r}{fitted})\n"
              f"  accuracy (per perspective, as the PAIR reference code): {result['accuracy']:.4f}{interval['accuracy']}\n"
              f"  consistent accuracy (one sign per query):               {result['consistent_accuracy']:.4f}"
              f"{interval['consistent_accuracy']}\n"
              f"  {result['queries']} queries, {result['documents']} documents; skipped queries: {skipped}; "
              f"{result['embedded_now']} texts embedded now, {result['seconds']} s")
        if args.compare is not None and stats is not None:
            print(f"compared with {result['compare']['model']} on the same queries:")
            for name, label in (("accuracy", "accuracy"), ("consistent_accuracy", "consistent accuracy")):
                other = stats[name][1]
                print(f"  {label}: {other['value']:.4f} [{other['low']:.4f}, {other['high']:.4f}]; difference "
                      f"{other['difference']:+.4f} [{other['difference_low']:+.4f}, {other['difference_high']:+.4f}]")
        if stats is not None:
            print(f"  95% percentile intervals from {resamples:,} bootstrap resamples of the queries (seed {args.seed})")
    if problem:
        print(f"pairmeasures validate-polarity: error: {problem}", file=sys.stderr)
        return 2
    return 0


def _cache(args: argparse.Namespace) -> int:
    from ..sideinfo.cache import EmbeddingCache

    cache = EmbeddingCache(args.cache)
    if args.action == "info":
        print(cache.stats().report())
        return 0
    stats = cache.stats()
    chosen = stats.models if args.model is None else [_cached_model(stats.models, args.model, cache.path)]
    if not chosen:
        print(f"nothing to clear in {cache.path}")
        return 0
    entries = sum(m["entries"] for m in chosen)
    if not args.yes:
        if not sys.stdin.isatty():
            print(f"pairmeasures cache clear: would delete {entries:,} embeddings from {cache.path}; "
                  "pass --yes to confirm", file=sys.stderr)
            return 1
        if input(f"Delete {entries:,} cached embeddings from {cache.path}? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return 1
    removed = sum(cache.clear(m["model"]) for m in chosen) if args.model else cache.clear()
    print(f"deleted {removed:,} embeddings from {cache.path}")
    return 0


def _cached_model(models: list, wanted: str, path) -> dict:
    """The one cached model that ``wanted`` names exactly: its key, its description (the model name the
    Embedder was given), or else the name of entries written before normalisation left the cache key
    (their description without its ``(normalize=...)`` suffix)."""
    matches = [m for m in models if wanted in (m["model"], m["description"])] or \
        [m for m in models if wanted == m["description"].rsplit(" (normalize=", 1)[0]]
    if len(matches) != 1:
        present = "; ".join(f"{m['description']} [{m['model']}]" for m in models) or "none"
        problem = "matches several models" if matches else "names no model"
        raise ValueError(f"--model {wanted!r} {problem} in {path}; models present: {present}. Pass a model name, "
                         "its full description or its key, exactly")
    return matches[0]


def _datasets(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..datasets import status

    sys.stdout.write(render(pd.DataFrame(status(args.data)), args.format))
    return 0


def _audit(args: argparse.Namespace) -> int:
    from ..analysis import SmallCellWarning
    from .audit import DEFAULT_SYSTEMS, audit, default_dataset, leaderboard_text

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"pairmeasures audit: {category.__name__}: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dependencies' deprecations are not the user's business
        warnings.simplefilter("always", SmallCellWarning)
        warnings.showwarning = show
        result = audit(args.dataset or default_dataset(), args.systems or list(DEFAULT_SYSTEMS), args.out,
                       measures=args.measures, baseline=args.baseline, by=args.by, correction=args.correction,
                       resamples=args.resamples, seed=args.seed, min_cell=args.min_cell, data=args.data,
                       text=args.text, num_results=args.num_results, k=args.k, model=args.model,
                       positive=args.positive, force=args.force, names=args.names, tradeoff=not args.no_tradeoff,
                       lambdas=args.lambdas, queries=args.queries, command=["pairmeasures", *sys.argv[1:]])
    sys.stdout.write(leaderboard_text(result, args.format))
    if args.format == "markdown":
        print(f"\nArrows: bias measures ↓ lower is fairer, ↑ higher is fairer, ↕ signed (0 = balanced); 'n' columns count "
              f"the queries measured. Report: {result['out'] / 'report.html'}")
    else:
        print(f"report: {result['out'] / 'report.html'}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .catalogue import families

    listed = "\n".join(f"  {family:<22} {', '.join(names)}" for family, names in families().items())
    parser = argparse.ArgumentParser(
        prog="pairmeasures",
        description="Measure bias in ranked lists next to relevance, through ir_measures and PyTerrier.",
        epilog=f"measure families (built-in, then plugins):\n{listed}\n\n"
               "Measures parse as in ir_measures, e.g. 'Duo(step=2)@10' or 'rKL(protected=\"con\")@10'; "
               "'pairmeasures measures NAME' explains one.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
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

    listing = commands.add_parser(
        "measures", help="list the bias measures (built-in and plugins), or explain one",
        description="Without NAME: every measure served by pairmeasures, with which way is fair, its range and "
                    "parameters. With NAME (a name or a measure string such as 'Duo(signed=True)@10'): that "
                    "measure's direction, range, reference, every parameter (type, default, choices) and an "
                    "example. Directions: " + "; ".join(f"{k}: {v}" for k, v in DIRECTIONS.items()) + ".")
    listing.add_argument("name", nargs="?", metavar="NAME", help="a measure name or measure string")
    listing.add_argument("--format", choices=FORMATS, default="markdown", help="output format (default: markdown)")
    listing.set_defaults(run=_measures)

    evaluation = commands.add_parser(
        "eval", help="evaluate a run file against qrels, like the ir_measures command, with the bias measures",
        description="Evaluate RUN against QRELS with each MEASURE (an ir_measures measure string: relevance "
                    "measures such as nDCG@10 and bias measures such as \"rKL(group='beir:DIR')@10\"), printing the "
                    "mean over queries in the order given, or with -q one value per query and measure, then the "
                    "means under query 'all'. " + FILES_HELP + " Side information the run lacks comes from "
                    "resources named in the measure (polarity='tsv:FILE', group='beir:DIR', text='corpus:DIR'). "
                    "Queries with nothing to measure are reported once per measure on stderr.")
    evaluation.add_argument("qrels", metavar="QRELS", help="qrels file (TREC, or BEIR .tsv)")
    evaluation.add_argument("run_file", metavar="RUN", help="run file (TREC, or .tsv with a header and side columns)")
    evaluation.add_argument("measures", nargs="+", metavar="MEASURE", help="measure strings, e.g. nDCG@10 Duo@10")
    evaluation.add_argument("-q", "--per-query", action="store_true", help="one value per query and measure")
    evaluation.add_argument("--format", choices=(*FORMATS, "tsv"), default="markdown",
                            help="markdown (default), csv, json, or tsv: headerless lines as the ir_measures command prints")
    evaluation.set_defaults(run=_eval)

    validate = commands.add_parser(
        "validate-polarity", help="how well embedding axes separate gold perspectives (PAIR Table 2)",
        description="Fit one PCA axis per query on its labelled documents (a BEIR-layout folder with labels.tsv) "
                    "and report the polarization accuracy against the gold perspectives: 'accuracy' as the PAIR "
                    "reference code computes it (better sign per perspective) and 'consistent_accuracy' (one sign "
                    "per query, which a degenerate axis cannot game), averaged over documents.")
    validate.add_argument("folder", help="BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/test.tsv, labels.tsv")
    validate.add_argument("--model", default=None,
                          help="sentence-transformers model name or local directory (default: all-MiniLM-L6-v2, offline)")
    validate.add_argument("--backend", choices=BACKENDS, default="torch",
                          help="how the model runs: torch (float32, default), torch-int8 (torch's dynamic int8 "
                               "quantisation, CPU), onnx-int8 (ONNX Runtime, int8, CPU; pip install "
                               "'pairmeasures[onnx]'); each backend's embeddings are cached apart")
    validate.add_argument("--text", choices=TEXT_FIELDS, default="text",
                          help="which document field to embed (default: text)")
    validate.add_argument("--anchors", choices=ANCHORS, default="none",
                          help="axis source: 'none' = first principal axis (the paper); 'negated-query' = from the "
                               "query statement's negation to the statement (no labels used)")
    validate.add_argument("--anchor-within", type=int, default=0, metavar="K",
                          help="project the anchor direction onto the documents' K leading principal axes (default 0: off)")
    validate.add_argument("--positive", default=None, metavar="LABEL",
                          help="label of perspective 1 (default: the first of p1, pro, support, 1, positive, yes present; "
                               "required when the labels include none of them). A query is measured when its documents "
                               "have exactly two labels, this one and one other; the others are skipped and counted")
    validate.add_argument("--fit", default=None, metavar="DIR",
                          help="fit each query's axis on the documents of this BEIR-layout folder instead (e.g. a fit "
                               "set from generate-fitset); queries it lacks are skipped")
    validate.add_argument("--distractors", action="store_true",
                          help="with --fit: remove the spurious direction of its distractors.jsonl first (PAIR A.5)")
    validate.add_argument("--cache", default=None, help="embedding cache file (default: ~/.cache/pairmeasures/embeddings.sqlite)")
    validate.add_argument("--json", action="store_true",
                          help="print one JSON object (accuracies are null when no query could be measured)")
    validate.add_argument("--per-query", default=None, metavar="FILE",
                          help="write each measured query's accuracies, documents and two labels to FILE "
                               "(.tsv, .csv or .json by its extension)")
    validate.add_argument("--force", action="store_true", help="overwrite the --per-query file if it exists")
    validate.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                          help="show a progress bar while embedding (default: on a terminal, when it takes "
                               "more than two seconds)")
    validate.add_argument("--bootstrap", type=int, default=None, metavar="N",
                          help="95%% percentile intervals of both accuracies from N bootstrap resamples of the queries "
                               "(default with --compare: 10000)")
    validate.add_argument("--compare", default=None, metavar="MODEL",
                          help="also validate MODEL (a name or directory, e.g. a train-polarity output) on the same "
                               "queries and report its accuracies minus --model's, with paired bootstrap intervals "
                               "(the same resampled queries for both)")
    validate.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resamples (default 0)")
    validate.set_defaults(run=_validate_polarity)

    datasets = commands.add_parser(
        "datasets", help="list the registered datasets, where each resolves from, whether it is here",
        description="List the pair/... datasets registered with ir_datasets, where their files resolve from "
                    "(--data or $PAIRMEASURES_DATA, the download cache $IR_DATASETS_HOME/pair, or a download "
                    "from the public source) and whether they are available without downloading.")
    datasets.add_argument("--format", choices=FORMATS, default="markdown", help="table format (default: markdown)")
    datasets.add_argument("--data", default=None, metavar="DIR",
                          help="a mirror folder laid out like shared/data (default: $PAIRMEASURES_DATA)")
    datasets.set_defaults(run=_datasets)

    from .audit import DEFAULT_LAMBDAS, DEFAULT_SYSTEMS, help_epilog

    auditing = commands.add_parser(
        "audit", help="run retrieval systems over a bias benchmark: a leaderboard of relevance and bias",
        description="Build each system from its spec, run it over the dataset's queries (runs cached), evaluate "
                    "relevance and bias per query, test each system against the baseline, bootstrap confidence "
                    "intervals, and write the leaderboard, per-query values, plots and report.html into --out.",
        epilog=help_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    auditing.add_argument("--dataset", default=None, metavar="ID_OR_DIR",
                          help="a pairmeasures dataset id (pair/procon, ...) or a BEIR-layout folder (default: the "
                               "embedded demo corpus)")
    auditing.add_argument("--data", default=None, metavar="DIR", help="mirror folder of dataset ids (default: $PAIRMEASURES_DATA)")
    auditing.add_argument("--systems", nargs="+", default=None, metavar="SPEC",
                          help=f"system specs, also the leaderboard's names (default: {' '.join(DEFAULT_SYSTEMS)})")
    auditing.add_argument("--names", nargs="+", default=None, metavar="NAME", help="names for the systems, one per spec")
    auditing.add_argument("--out", required=True, metavar="DIR", help="folder to write (must not exist, or an earlier audit with --force)")
    auditing.add_argument("--force", action="store_true", help="replace --out when it holds an earlier audit")
    auditing.add_argument("--measures", nargs="+", default=None, metavar="MEASURE",
                          help="measure strings as in 'pairmeasures eval' (default: what the dataset supports)")
    auditing.add_argument("--baseline", default=None, metavar="NAME", help="system compared against (default: the first)")
    auditing.add_argument("--correction", default="holm", metavar="METHOD",
                          help="multiple-testing correction, as pt.Experiment takes it (statsmodels names: holm, "
                               "bonferroni, fdr_bh, ...; default holm)")
    auditing.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples (default 10000)")
    auditing.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    auditing.add_argument("--by", default=None, metavar="FIELD",
                          help="break bias down by a query field (e.g. domain, category, topics)")
    auditing.add_argument("--min-cell", type=int, default=10, metavar="N", help="warn about --by cells under N queries (default 10)")
    auditing.add_argument("--text", choices=TEXT_FIELDS, default=None,
                          help="document field(s) indexed, embedded and read by term measures (default: text; "
                               "title+text for Grep-BiasIR)")
    auditing.add_argument("--positive", default=None, metavar="LABEL", help="the label of polarity +1 when the labels are not pro/con-like")
    auditing.add_argument("--model", default=None, help="sentence-transformers folder for dense stages and polarity (default: offline all-MiniLM-L6-v2)")
    auditing.add_argument("--queries", default=None, metavar="FILE",
                          help="audit only these query ids (one a line, '#' comments), e.g. the held-out split of "
                               "train-ibbr --held-out; systems still rank the whole corpus")
    auditing.add_argument("--num-results", type=int, default=100, metavar="N", help="first-stage depth (default 100)")
    auditing.add_argument("-k", type=int, default=10, help="default k of duogreedy(...) (default 10)")
    auditing.add_argument("--lambdas", nargs="+", type=float, default=list(DEFAULT_LAMBDAS), metavar="LAMBDA",
                          help="Lambdas of the DuoGreedy-vs-MMR trade-off, in [0, 1] with 1 among them (default: "
                               f"{' '.join(f'{v:g}' for v in DEFAULT_LAMBDAS)})")
    auditing.add_argument("--no-tradeoff", action="store_true",
                          help="skip the DuoGreedy-vs-MMR trade-off of systems with a duogreedy(...) stage")
    auditing.add_argument("--format", choices=FORMATS, default="markdown", help="leaderboard format printed (default: markdown)")
    auditing.set_defaults(run=_audit)

    cache = commands.add_parser("cache", help="show or clear the embedding cache",
                                description="Show what the embedding cache holds, or delete entries (asks first).")
    cache.add_argument("action", choices=("info", "clear"))
    cache.add_argument("--model", default=None,
                       help="clear only this model, named exactly: the model name or directory given to the embedder "
                            "(e.g. all-MiniLM-L6-v2), its description as 'cache info' shows it, or its full key; "
                            "a name matching several models is an error listing them")
    cache.add_argument("--cache", default=None, help="cache file (default: ~/.cache/pairmeasures/embeddings.sqlite)")
    cache.add_argument("--yes", action="store_true", help="clear without asking")
    cache.set_defaults(run=_cache)

    from ..train import ibbr_cli

    training = commands.add_parser("train-ibbr", help=ibbr_cli.HELP, description=ibbr_cli.DESCRIPTION)
    ibbr_cli.add_arguments(training)
    training.set_defaults(run=ibbr_cli.run)
    from ..train import polarity_cli

    polarity_training = commands.add_parser("train-polarity", help=polarity_cli.HELP, description=polarity_cli.DESCRIPTION)
    polarity_cli.add_arguments(polarity_training)
    polarity_training.set_defaults(run=polarity_cli.run)

    from ..generate import cli as generate_cli

    generating = commands.add_parser("generate-fitset", help=generate_cli.HELP, description=generate_cli.DESCRIPTION)
    generate_cli.add_arguments(generating)
    generating.set_defaults(run=generate_cli.run)

    from .seme import add_command as add_seme

    add_seme(commands)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``pairmeasures`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, NameError, FileNotFoundError, RuntimeError) as exc:  # bad input: one line, no traceback
        command = " ".join(filter(None, (args.command, getattr(args, "step", None))))
        print(f"pairmeasures {command}: error: {exc}", file=sys.stderr)
        return 2
