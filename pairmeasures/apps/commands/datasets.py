"""``pairmeasures datasets``: the registered datasets, where each resolves from, whether it is here; and ``pairmeasures
datasets export``, ``ir_datasets export`` with the pair/... datasets registered.

The ``ir_datasets`` command never imports pairmeasures (ir_datasets 0.6 reads no entry points and has no other
hook), so ``ir_datasets export pair/procon queries`` fails with ``KeyError``; ``export`` here takes the same
arguments and writes the same output through ir_datasets' own exporters.
"""

from __future__ import annotations

import argparse
import sys

from ..tables import FORMATS, render

HELP = "list the registered datasets, where each resolves from, whether it is here; or export one"
DESCRIPTION = ("List the pair/... datasets registered with ir_datasets, where their files resolve from "
               "(--data or $PAIRMEASURES_DATA, the download cache $IR_DATASETS_HOME/pair, or a download "
               "from the public source) and whether they are available without downloading. "
               "'pairmeasures datasets export ID docs|queries|qrels [--format tsv|jsonl|trec] [--fields F...]' "
               "writes a dataset's records to stdout as 'ir_datasets export' does (which cannot find pair/... ids: "
               "the ir_datasets command never imports pairmeasures).")

#: What ``export`` writes, as ir_datasets' export names it, with its formats (the first is the default).
KINDS = {"docs": ("tsv", "jsonl"), "queries": ("tsv", "jsonl"), "qrels": ("trec", "tsv", "jsonl"),
         "scoreddocs": ("trec", "tsv", "jsonl"), "docpairs": ("tsv", "jsonl")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="markdown", help="table format (default: markdown)")
    parser.add_argument("--data", default=None, metavar="DIR",
                        help="a mirror folder laid out like shared/data (default: $PAIRMEASURES_DATA)")
    actions = parser.add_subparsers(dest="action", metavar="export", required=False)
    export = actions.add_parser("export", help="write a dataset's records to stdout, as 'ir_datasets export' does",
                                description="Write the docs, queries, qrels, scoreddocs or docpairs of an "
                                            "ir_datasets dataset (pair/... included) to stdout in the format "
                                            "'ir_datasets export' writes.")
    export.add_argument("dataset", metavar="ID", help="a dataset id, e.g. pair/procon")
    export.add_argument("kind", choices=KINDS, metavar="KIND", help=f"one of {', '.join(KINDS)}")
    export.add_argument("--format", dest="export_format", default=None, choices=("tsv", "jsonl", "trec"),
                        help="tsv or jsonl; trec for qrels and scoreddocs (default: trec for those, else tsv)")
    export.add_argument("--fields", nargs="+", default=None, metavar="F", help="only these fields, in this order")
    export.add_argument("--runtag", default="run", help="scoreddocs in trec format: the run tag (default: run)")
    export.add_argument("--data", dest="export_data", default=None, metavar="DIR",
                        help="a mirror folder laid out like shared/data (default: $PAIRMEASURES_DATA)")


def run(args: argparse.Namespace) -> int:
    if args.action == "export":
        return _export(args)
    import pandas as pd

    from ...datasets import status

    sys.stdout.write(render(pd.DataFrame(status(args.data)), args.format))
    return 0


def _export(args: argparse.Namespace) -> int:
    from ir_datasets.commands import export

    from ...datasets import DATASET_IDS, load, register

    formats = KINDS[args.kind]
    chosen = args.export_format or formats[0]
    if chosen not in formats:
        raise ValueError(f"export {args.kind}: --format {chosen} is not one of {', '.join(formats)}")
    data = args.export_data or args.data
    if args.dataset in DATASET_IDS:
        dataset = load(args.dataset, data)
    else:
        import ir_datasets

        register()
        try:
            dataset = ir_datasets.load(args.dataset)
        except KeyError:
            raise ValueError(f"no dataset {args.dataset!r}: 'pairmeasures datasets' lists the pair/... ones, "
                             "https://ir-datasets.com the others") from None
    has = getattr(dataset, f"has_{args.kind}")
    if not has():
        present = [kind for kind in KINDS if getattr(dataset, f"has_{kind}")()]
        raise ValueError(f"{args.dataset} has no {args.kind}; it has {', '.join(present) or 'nothing to export'}")
    fields = getattr(dataset, f"{args.kind}_cls")()._fields
    unknown = [f for f in args.fields or () if f not in fields]
    if unknown:
        raise ValueError(f"{args.dataset} {args.kind} have no field {', '.join(map(repr, unknown))}; they have "
                         f"{', '.join(fields)}")
    options = argparse.Namespace(dataset=args.dataset, format=chosen, fields=args.fields, out=sys.stdout,
                                 runtag=args.runtag)
    getattr(export, f"main_{args.kind}")(dataset, options)
    return 0
