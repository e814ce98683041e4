"""``pairmeasures embed``: a whole corpus into the embedding cache and the dense index, here or on Ray."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from . import add_engine_arguments

EXTRA = "embed"
NEEDS = ("torch", "sentence_transformers")
HELP = "embed a whole corpus into the embedding cache and its dense index (here, or on a Ray cluster)"
DESCRIPTION = ("Embed every document of a corpus (an ir_datasets id, a pair/... dataset or a BEIR-layout folder) "
               "into the embedding cache the audit reads, then build the pyterrier-dr index the 'dense' stage "
               "retrieves from. --engine ray runs the model in a Ray Data actor pool (one actor per GPU, fed by "
               "tokenizing CPU actors, else one per CPU) through shards on disk merged by this process. Rerunning is safe: cached texts "
               "are not embedded again, shards left by a killed run are merged (damaged ones redone). See "
               "docs/ray.md.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="DATASET_OR_DIR",
                        help="a dataset id (pair/procon, an ir_datasets id registered by pairmeasures) or a "
                             "BEIR-layout folder")
    parser.add_argument("--model", default=None,
                        help="sentence-transformers model name or local directory (default: all-MiniLM-L6-v2, offline)")
    add_engine_arguments(parser, "local: embed in this process (default); ray: in a Ray Data actor pool",
                         "start a private local Ray on 127.0.0.1")
    parser.add_argument("--tokenizers", type=int, default=None,
                        help="with --engine ray on GPUs: CPU actors tokenizing ahead of the GPU actors (default: the "
                             "cluster's CPUs left after one per GPU actor and one for this process, at most 4 per GPU; "
                             "0: each GPU actor tokenizes in its own threads)")
    parser.add_argument("--text", choices=("text", "title", "title+text"), default=None,
                        help="document field(s) embedded (default: the dataset's own; as the audit's --text)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="texts per forward pass (default: 64 on a CPU, 256 on a GPU)")
    parser.add_argument("--shard-size", type=int, default=None,
                        help="with --engine ray: texts per shard, the unit of work and of resuming (default 2048)")
    parser.add_argument("--work", default=None, metavar="DIR",
                        help="with --engine ray: the shard folder (default: shards/ in the cache folder); on a "
                             "cluster of several machines, a folder every node and this machine share")
    parser.add_argument("--index-dir", default=None, metavar="DIR",
                        help="where indexes live (default: indexes/ in the cache folder; as the audit's --index-dir)")
    parser.add_argument("--no-index", dest="index", action="store_false",
                        help="fill the embedding cache only; build no dense index")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object: texts, embedded (by this run), cached (found), engine, workers, "
                             "seconds")


def run(args: argparse.Namespace) -> int:
    from ...compute.engines import check_engine_options
    from ...pipelines.corpus_embedding import embed_corpus

    # before any work: the options, whether Ray would be needed or not (a failure is cli.main's one line)
    check_engine_options(args.engine, address=args.address, workers=args.workers, tokenizers=args.tokenizers,
                         shard_size=args.shard_size, work=args.work, batch_size=args.batch_size)
    # with --json, stdout holds the JSON alone: what the run prints (Ray's notes on retried actors) goes to stderr
    with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
        result = embed_corpus(args.source, args.model, engine=args.engine, address=args.address,
                              workers=args.workers, tokenizers=args.tokenizers, text=args.text,
                              batch_size=args.batch_size, shard_size=args.shard_size, work=args.work,
                              index=args.index, index_dir=args.index_dir)
    if args.json:
        print(json.dumps(result.summary()))
    else:
        print(f"{result.texts:,} texts: {result.embedded:,} embedded, {result.cached:,} cached "
              f"({result.engine}, {result.workers} worker{'s' * (result.workers != 1)}, {result.seconds:.1f} s)")
    if result.index:
        print(f"dense index: {result.index}", file=sys.stderr if args.json else sys.stdout)
    return 0
