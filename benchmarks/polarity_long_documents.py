"""What makes a trained polarity axis work on long natural texts (issue 14, "Long documents").

Every variant is measured with ``validate_polarity`` (one axis per query, fitted on the query's labelled documents)
on ProCon's argument texts (field ``text``: 9-268 words, not the headlines) and on PERSPECTRUM's test claims,
against the plain fine-tuned model (``baseline``: ``train_polarity`` on PERSPECTRUM's training claims, ProCon
excluded) with paired bootstrap 95% intervals over queries. Variants:

- ``default``: the untrained base model.
- ``baseline``: the issue's recipe (trained at max length 64; the model embeds up to its base's 256 tokens).
- ``baseline-64``: the baseline's weights embedding only the first 64 tokens, as in training.
- ``chunks``: the recipe plus Wiki-Balance Synthetic documents cut into chunks of 3 sentences, each labelled with
  its document's perspective (``extra_examples``), at max length 128 (variant a).
- ``documents``: the recipe plus whole Wiki-Balance documents, at max length 256: a document-level objective (c).
  (A longer max length alone changes nothing: PERSPECTRUM's perspectives are shorter than 64 tokens.)
- ``sentence-mean`` / ``sentence-median``: the baseline model, each document scored from its sentences: embedded
  one by one, projected on an axis fitted on all sentences of the query's documents, pooled by mean or median (b).
  (Projection is linear: the mean of sentence scores on a document-level axis is the score of the mean sentence
  embedding, already found not to transfer.)

Trained models are kept under ``--models`` (one folder per seed and variant) and reused, so variants can be trained
one run at a time. Usage:

    python benchmarks/polarity_long_documents.py [--data DIR] [--variants default,baseline,...] [--seed 0]

Results go to ``results/polarity_long_documents.json`` (seed 0) or ``results/polarity_long_documents-seedN.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from _common import data_option, save

from pairmeasures.train.long_documents import WHOLE_DOCUMENTS, long_document_chunks

VARIANTS = ("default", "baseline", "baseline-64", "chunks", "documents", "sentence-mean", "sentence-median")
#: Variants scored from sentences, with the pooling of their sentence scores.
POOLED = {"sentence-mean": np.mean, "sentence-median": np.median}
EVALUATIONS = ("procon texts", "perspectrum test claims")


def pooled_validation(folder: Path, model: str, pool, queries) -> dict:
    """:func:`validate_polarity`'s report with each document scored from its sentences: the query's axis is fitted
    on the sentences of all its documents (oriented by their documents' labels) and a document's sentence scores
    are pooled by ``pool``. Measures the queries ``validate_polarity`` measures."""
    from pairmeasures.analysis.polarity import validate_polarity
    from pairmeasures.compute.embed import Embedder
    from pairmeasures.io.beir import read_beir
    from pairmeasures.math.axes import fit_axes, project
    from pairmeasures.math.polarization import consistent_accuracy, per_query_accuracy, perspective_accuracy
    from pairmeasures.train.long_documents import split_sentences

    whole = validate_polarity(folder, model=model, text="text", queries=queries)
    positive = whole["positive"]
    frame = read_beir(folder).fit_frame("text")
    frame = frame[frame["qid"].isin({r["query_id"] for r in whole["per_query"]})].reset_index(drop=True)
    labels = frame["label"].astype(str).to_numpy()
    sentences = [split_sentences(text) or [text] for text in frame["text"]]
    owner = np.repeat(np.arange(len(frame)), [len(group) for group in sentences])
    vectors, rows = Embedder(model).embed_distinct([sentence for group in sentences for sentence in group])
    vectors = vectors[rows].astype(np.float64)
    scores = np.empty(len(frame))
    for documents in frame.groupby("qid").indices.values():
        mine = np.isin(owner, documents)
        axis = fit_axes(vectors[mine], 1, labels=labels[owner[mine]], positive=positive)
        sentence_scores = project(vectors[mine], axis)[:, 0]
        for document in documents:
            scores[document] = pool(sentence_scores[owner[mine] == document])
    query, is_positive = frame["qid"].to_numpy(), labels == positive
    each = per_query_accuracy(scores, query, is_positive)
    per_query = [{"query_id": q, "accuracy": float(a), "consistent_accuracy": float(c), "documents": int(n)}
                 for q, a, c, n in zip(each.query.tolist(), each.accuracy, each.consistent_accuracy, each.documents)]
    return {**whole, "accuracy": perspective_accuracy(scores, query, is_positive),
            "consistent_accuracy": consistent_accuracy(scores, query, is_positive), "per_query": per_query,
            "sentences": len(owner)}


def evaluate(variant: str, folder: Path, model, queries) -> dict:
    """The validation report of ``model`` on ``folder``'s ``queries`` (sentence-pooled for the pooled variants)."""
    from pairmeasures.analysis.polarity import validate_polarity

    if variant in POOLED:
        return pooled_validation(folder, model, POOLED[variant], queries)
    return validate_polarity(folder, model=model, text="text", queries=queries)


#: Per trained variant: its extra examples (sentences per Wiki-Balance chunk, or whole documents) and max length.
TRAINED = {"baseline": (None, 64), "chunks": (3, 128), "documents": (WHOLE_DOCUMENTS, 256)}


def trained_model(variant: str, data: Path, models: Path, seed: int):
    """The model folder of ``variant`` (trained now unless kept from an earlier run); ``None`` for the default."""
    from pairmeasures.train.polarity import TRAINING_FILE, train_polarity

    if variant == "default":
        return None
    if variant in POOLED:
        return trained_model("baseline", data, models, seed)
    out = models / variant
    if variant == "baseline-64":  # the baseline's weights embedding at most 64 tokens, as they were trained
        if not out.is_dir():
            shutil.copytree(trained_model("baseline", data, models, seed), out)
            config = json.loads((out / "sentence_bert_config.json").read_text())
            (out / "sentence_bert_config.json").write_text(json.dumps({**config, "max_seq_length": 64}))
        return str(out)
    if not (out / TRAINING_FILE).is_file():
        sentences, max_length = TRAINED[variant]
        extra = (long_document_chunks(data / "wiki-balance-sample", sentences=sentences).dataset()
                 if sentences else None)
        train_polarity(data / "perspectrum", out, exclude=[data / "procon"], evaluation_split="test", seed=seed,
                       max_length=max_length, extra_examples=extra, resamples=1_000, force=True, progress=False)
    return str(out)


def main() -> None:
    from pairmeasures.analysis.polarity import ACCURACIES, bootstrap_accuracies
    from pairmeasures.train.polarity import TRAINING_FILE

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    parser.add_argument("--seed", type=int, default=0, help="training seed (default: %(default)s)")
    parser.add_argument("--models", default=os.path.join(tempfile.gettempdir(), "polarity-long-documents"),
                        help="where trained models are kept and reused (default: %(default)s)")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples (default: %(default)s)")
    args = parser.parse_args()
    variants = list(dict.fromkeys(v.strip() for v in args.variants.split(",") if v.strip()))
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    variants = ["baseline"] + [v for v in variants if v != "baseline"]
    data = Path(args.data)
    models = Path(args.models) / f"seed-{args.seed}"
    perspectrum = [json.loads(line) for line in (data / "perspectrum" / "queries.jsonl").open()]
    evaluations = {"procon texts": (data / "procon", None),
                   "perspectrum test claims": (data / "perspectrum", [q["_id"] for q in perspectrum
                                                                     if q["split"] == "test"])}
    reports: dict = {}
    for variant in variants:
        model = trained_model(variant, data, models, args.seed)
        record = Path(model) / TRAINING_FILE if model else None
        reports[variant] = {"model": model, "training_seconds": (json.loads(record.read_text())["seconds"]
                                                                 if record and record.is_file() else None)}
        for evaluation, (folder, queries) in evaluations.items():
            reports[variant][evaluation] = evaluate(variant, folder, model, queries)
        print(f"{variant}: " + "; ".join(f"{e} {reports[variant][e]['accuracy']:.4f} / "
                                         f"{reports[variant][e]['consistent_accuracy']:.4f}" for e in evaluations),
              flush=True)
    table = {}
    for evaluation in evaluations:
        stats = bootstrap_accuracies([reports[v][evaluation] for v in variants], resamples=args.resamples,
                                     seed=args.seed)
        table[evaluation] = {v: {name: stats[name][row] for name in ACCURACIES} for row, v in enumerate(variants)}
    print_table(table)
    for report in reports.values():
        for evaluation in evaluations:
            report[evaluation] = {k: v for k, v in report[evaluation].items() if k != "per_query"}
    command = " ".join(["python", "benchmarks/polarity_long_documents.py", *map(shlex.quote, sys.argv[1:])])
    name = "polarity_long_documents" + (f"-seed{args.seed}" if args.seed else "")
    print("saved", save(name, {"command": command, "seed": args.seed,
                                                    "resamples": args.resamples, "table": table, "reports": reports}))


def print_table(table: dict) -> None:
    for evaluation, rows in table.items():
        print(f"\n{evaluation}: accuracy / consistent accuracy (difference to baseline [95% CI])")
        for variant, row in rows.items():
            cells = []
            for cell in row.values():
                difference = (f" ({cell['difference']:+.3f} [{cell['difference_low']:+.3f}, "
                              f"{cell['difference_high']:+.3f}])" if "difference" in cell else "")
                cells.append(f"{cell['value']:.3f}{difference}")
            print(f"  {variant:16s} " + "   ".join(cells))


if __name__ == "__main__":
    main()
