"""``pairmeasures validate-polarity``: how well embedding axes separate gold perspectives (PAIR Table 2)."""

from __future__ import annotations

import argparse
import json

from ...analysis.polarity import ACCURACIES, ANCHORS
from ...compute.embed import BACKENDS
from ...sideinfo.polarity import TEXT_FIELDS

HELP = "how well embedding axes separate gold perspectives (PAIR Table 2)"
DESCRIPTION = ("Fit one PCA axis per query on its labelled documents (a BEIR-layout folder with labels.tsv) "
               "and report the polarization accuracy against the gold perspectives: 'accuracy' as the PAIR "
               "reference code computes it (better sign per perspective) and 'consistent_accuracy' (one sign "
               "per query, which a degenerate axis cannot game), averaged over documents.")
#: The extra this command needs (a module of it missing is named with ``pip install 'pairmeasures[embed]'``).
EXTRA = "embed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", help="BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/test.tsv, labels.tsv")
    parser.add_argument("--model", default=None,
                        help="sentence-transformers model name or local directory (default: all-MiniLM-L6-v2, offline)")
    parser.add_argument("--backend", choices=BACKENDS, default="torch",
                        help="how the model runs: torch (float32, default), torch-int8 (torch's dynamic int8 "
                             "quantisation, CPU), onnx-int8 (ONNX Runtime, int8, CPU; pip install "
                             "'pairmeasures[onnx]'); each backend's embeddings are cached apart")
    parser.add_argument("--text", choices=TEXT_FIELDS, default="text",
                        help="which document field to embed (default: text)")
    parser.add_argument("--anchors", choices=ANCHORS, default="none",
                        help="axis source: 'none' = first principal axis (the paper); 'negated-query' = from the "
                             "query statement's negation to the statement (no labels used)")
    parser.add_argument("--anchor-within", type=_axes_count, default=0, metavar="K",
                        help="project the anchor direction onto the documents' K leading principal axes (default 0: off)")
    parser.add_argument("--positive", default=None, metavar="LABEL",
                        help="label of perspective 1 (default: the first of p1, pro, support, 1, positive, yes present; "
                             "required when the labels include none of them). A query is measured when its documents "
                             "have exactly two labels, this one and one other; the others are skipped and counted")
    parser.add_argument("--fit", default=None, metavar="DIR",
                        help="fit each query's axis on the documents of this BEIR-layout folder instead (e.g. a fit "
                             "set from generate-fitset); queries it lacks are skipped")
    parser.add_argument("--distractors", action="store_true",
                        help="with --fit: remove the spurious direction of its distractors.jsonl first (PAIR A.5)")
    parser.add_argument("--cache", default=None, help="embedding cache file (default: ~/.cache/pairmeasures/embeddings.sqlite)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (accuracies are null when no query could be measured)")
    parser.add_argument("--per-query", default=None, metavar="FILE",
                        help="write each measured query's accuracies, documents and two labels to FILE "
                             "(.tsv, .csv or .json by its extension)")
    parser.add_argument("--force", action="store_true", help="overwrite the --per-query file if it exists")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show a progress bar while embedding (default: when it takes more than two seconds; "
                             "in a log file, a line every 30 seconds)")
    parser.add_argument("--bootstrap", type=int, default=None, metavar="N",
                        help="95%% percentile intervals of both accuracies from N bootstrap resamples of the queries "
                             "(default with --compare: 10000)")
    parser.add_argument("--compare", default=None, metavar="MODEL",
                        help="also validate MODEL (a name or directory, e.g. a train-polarity output) on the same "
                             "queries and report its accuracies minus --model's, with paired bootstrap intervals "
                             "(the same resampled queries for both)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap resamples (default 0)")


def _axes_count(text: str) -> int:
    """``--anchor-within``: a number of axes, 0 or more (checked with the arguments, before any embedding)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 (off) or a positive number of principal axes, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from ...analysis.polarity import bootstrap_accuracies, nothing_measured, validate_polarity
    from ...compute.embed import Embedder
    from ..console import say
    from ..tables import claim_table, table_text

    resamples = args.bootstrap if args.bootstrap is not None or args.compare is None else 10_000
    if resamples is not None and resamples < 1:
        raise ValueError(f"--bootstrap must be at least 1, got {resamples}")
    # the --per-query file: locked and checked before any work
    with claim_table(args.per_query, args.force, option="--per-query") if args.per_query else nullcontext() \
            as per_query_out:
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
        if per_query_out is not None and not problem:
            import pandas as pd

            per_query_out.write(table_text(pd.DataFrame(per_query), per_query_out.path))
    if args.json:
        print(json.dumps(result, indent=2, allow_nan=False))
    elif not problem:
        _print_summary(args, result, resamples)
    if problem:
        say("validate-polarity", f"error: {problem}")
        return 2
    return 0


def _print_summary(args: argparse.Namespace, result: dict, resamples: int | None) -> None:
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
