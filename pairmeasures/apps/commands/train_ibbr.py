"""``pairmeasures train-ibbr``: fine-tune a bi-encoder with IBBR's fairness loss.

The training is :func:`pairmeasures.train.ibbr_training.train_ibbr`; this module is its command line.
"""

from __future__ import annotations

import argparse
import sys

from ...train.ibbr_training import FAIRNESS, LAMBDA_LR
from . import add_checkpoint_arguments

HELP = "fine-tune a bi-encoder with IBBR's fairness loss into a sentence-transformers folder"
DESCRIPTION = ("Fine-tune a sentence-transformers bi-encoder (default: the offline all-MiniLM-L6-v2) with "
               "L = L_rank + lambda * L_fair (IBBR; see docs/ibbr.md) on (query, positive, K negatives) data pairs "
               "from DATA: a BEIR-layout folder (negatives mined with PISA BM25) or an ir_datasets id with docpairs "
               "(e.g. msmarco-passage/train/triples-small). Each pair's group is IBBR's d(p) of its positive passage. "
               "Writes a sentence-transformers folder OUT with training.json, which 'pairmeasures audit --model OUT' "
               "and pm.Embedder(model=OUT) load.")
#: The extra this command needs, and the modules it imports whatever its options (checked before any work).
EXTRA = "train"
NEEDS = ("torch", "sentence_transformers", "datasets", "accelerate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ...sideinfo.polarity import TEXT_FIELDS
    from ...train.data import LABEL_SOURCES

    parser.add_argument("data", metavar="DATA",
                        help="a BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/train.tsv or qrels/test.tsv) "
                             "or an ir_datasets id with docpairs (e.g. msmarco-passage/train/triples-small)")
    parser.add_argument("--out", required=True, metavar="MODEL", help="the model folder to write (must not exist, "
                        "or an earlier train-ibbr model with --force); checkpoints go to MODEL.checkpoints/")
    parser.add_argument("--base", default=None, metavar="M",
                        help="sentence-transformers model name or folder to start from (default: offline all-MiniLM-L6-v2)")
    parser.add_argument("--fairness", choices=FAIRNESS, default="ts",
                        help="fairness term: pd (pairwise difference, Eq. 4), ts (T-statistic, default), none "
                             "(ranking loss only, the lambda = 0 baseline)")
    parser.add_argument("--lambda", dest="lambda_", default=None, metavar="X|auto",
                        help="weight of the fairness term (default 1), or 'auto' (learned by uncertainty weighting)")
    parser.add_argument("--negatives", type=int, default=4, metavar="K", help="non-clicked passages per query (default 4)")
    parser.add_argument("--candidates", type=int, default=100, metavar="N",
                        help="BEIR folders: depth of the BM25 ranking (or --negatives-run) the negatives are mined from "
                             "(default 100)")
    parser.add_argument("--negatives-run", default=None, metavar="FILE",
                        help="BEIR folders: mine the negatives from this TREC or TSV run of the folder's corpus (any "
                             "retriever's, top --candidates by score) instead of PISA BM25")
    parser.add_argument("--labels", choices=LABEL_SOURCES, default="terms",
                        help="group of a positive passage: terms (IBBR's d(p) from its gender terms, default) or "
                             "group (the folder's labels.tsv: male/female/neutral)")
    parser.add_argument("--text", choices=TEXT_FIELDS, default="text", help="BEIR folders: document field(s) used (default: text)")
    parser.add_argument("--batch-size", type=int, default=32, metavar="B", help="data pairs per batch (default 32)")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--epochs", type=float, default=1.0, metavar="E", help="passes over the data (default 1)")
    length.add_argument("--max-steps", type=int, default=None, metavar="N", help="stop after N optimiser steps instead")
    parser.add_argument("--lr", type=float, default=2e-5, help="learning rate (default 2e-5)")
    parser.add_argument("--lambda-lr", type=float, default=None, metavar="LR",
                        help=f"--lambda auto: learning rate of the learned log-variance, not decayed (default "
                             f"{LAMBDA_LR}; at the model's rate it barely moves in a short run)")
    parser.add_argument("--warmup-ratio", type=float, default=0.1, metavar="R",
                        help="share of the steps with a linear warm-up of the learning rate, then linear decay "
                             "(default 0.1, the paper's)")
    parser.add_argument("--weight-decay", type=float, default=0.01, metavar="W",
                        help="AdamW weight decay (default 0.01, the paper's)")
    parser.add_argument("--scale", type=float, default=20.0,
                        help="multiplies the ranking loss's logits (default 20, for normalised embeddings)")
    parser.add_argument("--seed", type=int, default=0, help="seed of model init, data order and dropout (default 0)")
    parser.add_argument("--held-out", default=None, metavar="FILE",
                        help="file of query ids (one a line) to leave out of training, e.g. the evaluation split")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="train on the first N data pairs only")
    add_checkpoint_arguments(parser, "train-ibbr")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show the trainer's progress bar (default: on)")


def run(args: argparse.Namespace) -> int:
    from ...sideinfo import InputWarning
    from ...train import ResumeWarning
    from ...train.ibbr_training import train_ibbr
    from ..console import warnings_shown

    # the dependencies' deprecations are not the user's business; what the data lacks, and what --resume does, is
    with warnings_shown("train-ibbr", ("ignore", Warning), ("always", InputWarning), ("always", ResumeWarning)):
        record = train_ibbr(args.data, args.out, base=args.base, fairness=args.fairness, lambda_=args.lambda_,
                            negatives=args.negatives, batch_size=args.batch_size, epochs=args.epochs,
                            max_steps=args.max_steps, lr=args.lr, warmup_ratio=args.warmup_ratio,
                            lambda_lr=args.lambda_lr,
                            weight_decay=args.weight_decay, seed=args.seed, held_out=args.held_out,
                            checkpoint_every=args.checkpoint_every, keep_checkpoints=args.keep_checkpoints,
                            resume=args.resume, force=args.force,
                            candidates=args.candidates, text=args.text, labels=args.labels, scale=args.scale,
                            limit=args.limit, negatives_run=args.negatives_run, progress=args.progress,
                            command=["pairmeasures", *sys.argv[1:]], absolute_paths=args.absolute_paths)
    data, losses = record["data"], record["losses"]
    groups = ", ".join(f"{n} {g}" for g, n in data["groups"].items())
    skipped = data.get("skipped_queries", {}).get("count")
    skipped_text = f" of {data['queries']} queries ({skipped} more skipped: {data['skipped_queries']['reason']})" \
        if skipped else ""
    print(f"trained {losses['steps']} steps on {data['pairs']} data pairs{skipped_text} ({groups}) with K = "
          f"{data['negatives']}; "
          f"fairness {record['recipe']['fairness']}, final lambda {losses['final_lambda']:.4g}; "
          f"{losses['degenerate_batches']} of {losses['batches']} batches without both groups; "
          f"mean loss {losses['training_loss']:.4f}; {record['seconds']} s\nmodel: {args.out}")
    return 0
