"""``pairmeasures train-polarity``: fine-tune an embedder so that per-query polarity axes separate gold perspectives.

Everything happens in :func:`pairmeasures.train.polarity.train_polarity`; this module parses the command line and
prints the before/after table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import add_checkpoint_arguments

HELP = "fine-tune an embedder on labelled perspectives so that polarity axes separate them (docs/polarity.md)"
DESCRIPTION = ("Fine-tune a sentence-transformers model (default: the offline all-MiniLM-L6-v2) on DIR, a BEIR-layout "
               "folder with gold perspective labels (queries = claims, labels.tsv = the stance of each text towards "
               "its claim), with a triplet loss inside each claim: texts of one stance are pulled together and pushed "
               "away from the other stance of the same claim (never from other claims' texts). Queries are split by "
               "their --split-field (or at random when it is absent); only training claims are trained on, in batches "
               "of whole claims. --exclude DIR drops from training every claim and text that occurs in DIR (and every "
               "perspective cluster holding such a text), so that DIR can be evaluated with --evaluate. Writes the "
               "sentence-transformers folder MODEL with training.json and a model card (README.md) holding the "
               "validate-polarity table of the base and the trained model on the held-out queries, with paired "
               "bootstrap intervals; 'pairmeasures validate-polarity --model MODEL', 'pairmeasures audit --model "
               "MODEL' and pm.Embedder(model=MODEL) load it.")
#: The extra this command needs, and the modules it imports whatever its options (checked before any work).
EXTRA = "train"
NEEDS = ("torch", "sentence_transformers", "datasets", "accelerate")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ...io.beir import TEXT_FIELDS

    parser.add_argument("folder", metavar="DIR", help="BEIR-layout folder with labels.tsv: corpus.jsonl, queries.jsonl "
                        "(claims, with a split field), qrels/test.tsv, labels.tsv (query-id, corpus-id, stance)")
    parser.add_argument("--out", required=True, metavar="MODEL",
                        help="the model folder to write (must not exist, or an earlier train-polarity model with --force)")
    parser.add_argument("--base", default=None, metavar="M",
                        help="sentence-transformers model name or folder to start from (default: offline all-MiniLM-L6-v2)")
    parser.add_argument("--text", choices=TEXT_FIELDS, default="text", help="document field(s) of DIR used (default: text)")
    parser.add_argument("--positive", default=None, metavar="LABEL",
                        help="the label of perspective 1 (default: the first of p1, pro, support, ... present)")
    parser.add_argument("--split-field", default="split", metavar="F",
                        help="query field holding the split (default: split); without it in queries.jsonl, a seeded "
                             "random split of queries")
    parser.add_argument("--train-split", default="train", metavar="NAME", help="value of F for training claims (default: train)")
    parser.add_argument("--evaluation-split", default=None, metavar="NAME",
                        help="evaluate only the held-out queries whose F is NAME (default: every query not trained on)")
    parser.add_argument("--held-out", type=float, default=0.2, metavar="FRACTION",
                        help="share of queries held out when DIR has no split field (default 0.2)")
    parser.add_argument("--exclude", action="append", default=[], metavar="DIR",
                        help="drop from training every claim whose text is a query of DIR, every text in DIR's corpus "
                             "(titles and texts; compared casefolded, whitespace collapsed) and every perspective cluster "
                             "holding one; repeatable")
    parser.add_argument("--evaluate", action="append", default=[], metavar="DIR",
                        help="also validate base and trained model on DIR (refused when it shares claims or texts with "
                             "the training data: pass it as --exclude too); repeatable")
    parser.add_argument("--evaluate-text", nargs="+", choices=TEXT_FIELDS, default=["text"], metavar="FIELD",
                        help=f"document field(s) of the --evaluate folders, each evaluated ({', '.join(TEXT_FIELDS)}; "
                             "default: text)")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--epochs", type=float, default=2, metavar="E", help="passes over the training claims (default 2)")
    length.add_argument("--max-steps", type=int, default=None, metavar="N", help="stop after N optimiser steps instead")
    parser.add_argument("--batch-texts", type=int, default=64, metavar="N",
                        help="at least N texts a batch, whole claims only (default 64)")
    parser.add_argument("--learning-rate", type=float, default=5e-5, metavar="LR", help="AdamW learning rate (default 5e-5)")
    parser.add_argument("--warmup-ratio", type=float, default=0.1, metavar="R",
                        help="share of the steps with linear warm-up, then linear decay (default 0.1)")
    parser.add_argument("--margin", type=float, default=0.3, help="triplet margin in cosine distance (default 0.3)")
    parser.add_argument("--max-length", type=int, default=None, metavar="TOKENS",
                        help="training texts are truncated to TOKENS (default 64; 128 with --long-documents)")
    parser.add_argument("--long-documents", default=None, metavar="DIR",
                        help="also train on chunks of the long labelled documents of DIR (a BEIR-layout folder with "
                             "labels.tsv, e.g. Wiki-Balance), each labelled with its document's stance and kept with "
                             "its own claim; measured in docs/polarity.md ('Long documents')")
    parser.add_argument("--chunk-sentences", type=int, default=3, metavar="N",
                        help="--long-documents: sentences per chunk (default 3)")
    parser.add_argument("--train-word-embeddings", action="store_true",
                        help="also train the word embeddings (frozen by default)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, batch order, dropout and bootstrap (default 0)")
    parser.add_argument("--bootstrap", type=int, default=10_000, metavar="N",
                        help="bootstrap resamples of the before/after intervals (default 10000)")
    add_checkpoint_arguments(parser, "train-polarity")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show progress bars (default: on)")


def run(args: argparse.Namespace) -> int:
    from ...analysis.manifest import PathRecord
    from ...train import ResumeWarning
    from ...train.polarity import evaluation_table, train_polarity
    from ..console import warnings_shown

    extra = None
    if args.long_documents is not None:
        from ...train.long_documents import long_document_chunks

        extra = long_document_chunks(args.long_documents, sentences=args.chunk_sentences, text=args.text).dataset()
    elif args.chunk_sentences != 3:
        raise ValueError("--chunk-sentences cuts the documents of --long-documents DIR: give that folder too")
    max_length = args.max_length if args.max_length is not None else (128 if extra is not None else 64)
    # the dependencies' deprecations are not the user's business; what --resume does is
    with warnings_shown("train-polarity", ("ignore", Warning), ("always", ResumeWarning)):
        record = train_polarity(
            args.folder, args.out, base=args.base, split_field=args.split_field, train_split=args.train_split,
            evaluation_split=args.evaluation_split, held_out_fraction=args.held_out, exclude=args.exclude,
            evaluate=args.evaluate, evaluate_text=args.evaluate_text, text=args.text, positive=args.positive,
            epochs=args.epochs, batch_texts=args.batch_texts, learning_rate=args.learning_rate,
            warmup_ratio=args.warmup_ratio, margin=args.margin, max_length=max_length, extra_examples=extra,
            freeze_word_embeddings=not args.train_word_embeddings, seed=args.seed, resamples=args.bootstrap,
            force=args.force, max_steps=args.max_steps, checkpoint_every=args.checkpoint_every,
            keep_checkpoints=args.keep_checkpoints, resume=args.resume, progress=args.progress,
            command=["pairmeasures", *sys.argv[1:]], absolute_paths=args.absolute_paths)
    data = record["data"]
    where = PathRecord(Path(args.out).expanduser().absolute())  # how the record wrote them: printed as they are here
    excluded = "; ".join(f"{where.locate(folder)}: {counts['(claim, text) pairs removed in all']} (claim, text) pairs removed "
                         f"({counts['claims whose text is a query there']} claims, "
                         f"{counts['texts that occur in its corpus']} texts, "
                         f"{counts['other (claim, text) pairs of those clusters']} pairs of their clusters)"
                         for folder, counts in data["excluded"].items()) or "nothing excluded"
    dropped = ", ".join(f"{n} ({reason})" for reason, n in data["dropped_claims"].items()) or "none"
    print(f"trained {record['training']['steps']} steps on {data['training_claims']} claims, {data['training_texts']} "
          f"texts; {excluded}; dropped claims: {dropped}; mean loss {record['training']['training_loss']:.4f}; "
          f"{record['seconds']} s\n\n{evaluation_table(record['evaluation'])}\n\nmodel: {args.out}")
    return 0
