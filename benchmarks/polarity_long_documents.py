"""What makes a trained polarity axis work on long natural texts (issue 14, "Long documents").

Every variant is measured with ``validate_polarity`` (one axis per query, fitted on the query's labelled documents)
on ProCon's argument texts (field ``text``: 9-268 words, not the headlines) and on PERSPECTRUM's test claims,
against the plain fine-tuned model (``baseline``: ``train_polarity`` on PERSPECTRUM's training claims, ProCon
excluded) with paired bootstrap 95% intervals over queries. Variants:

- ``default``: the untrained base model.
- ``baseline``: the issue's recipe.
- ``chunks``: the recipe plus Wiki-Balance Synthetic documents cut into chunks of 3 sentences, each labelled with
  its document's perspective (``extra_examples``), at max length 128 (variant a).
- ``documents``: the recipe plus whole Wiki-Balance documents, at max length 256: a document-level objective (c).
- ``sentence-mean`` / ``sentence-median``: the baseline model, each document scored from its sentences: embedded
  one by one, projected on an axis fitted on all sentences of the query's documents, pooled by mean or median (b).
  (Projection is linear: the mean of sentence scores on a document-level axis is the score of the mean sentence
  embedding, already found not to transfer.)

Trained models are kept under ``--models`` (one folder per seed and variant) and reused, so variants can be trained
one run at a time. Usage:

    python benchmarks/polarity_long_documents.py [--data DIR] [--variants default,baseline,...] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import data_option, save

VARIANTS = ("default", "baseline", "chunks", "documents", "sentence-mean", "sentence-median")
#: Variants scored from sentences, with the pooling of their sentence scores.
POOLED = {"sentence-mean": np.mean, "sentence-median": np.median}
EVALUATIONS = ("procon texts", "perspectrum test claims")


def test_claims_folder(perspectrum: Path, into: Path) -> Path:
    """A BEIR folder with PERSPECTRUM's test-split claims and their perspectives only."""
    queries = [json.loads(line) for line in (perspectrum / "queries.jsonl").open()]
    keep = {q["_id"] for q in queries if q.get("split") == "test"}
    into.mkdir(parents=True, exist_ok=True)
    (into / "qrels").mkdir(exist_ok=True)
    with (into / "queries.jsonl").open("w") as out:
        out.writelines(json.dumps(q) + "\n" for q in queries if q["_id"] in keep)
    documents = set()
    for name in ("qrels/test.tsv", "labels.tsv"):
        lines = (perspectrum / name).read_text().splitlines()
        rows = [line for line in lines[1:] if line.split("\t")[0] in keep]
        documents.update(line.split("\t")[1] for line in rows)
        (into / name).write_text("\n".join([lines[0], *rows]) + "\n")
    with (into / "corpus.jsonl").open("w") as out:
        for line in (perspectrum / "corpus.jsonl").open():
            if json.loads(line)["_id"] in documents:
                out.write(line)
    return into


def pooled_validation(folder: Path, model: str, pool) -> dict:
    """``validate_polarity``'s per-query records, each document scored by pooling its sentences' scores."""
    from pairmeasures.apps.validate import validate_polarity
    from pairmeasures.math.axes import fit_axes, project
    from pairmeasures.math.polarization import consistent_accuracy, per_query_accuracy, perspective_accuracy
    from pairmeasures.sideinfo.beir import read_beir
    from pairmeasures.sideinfo.embed import Embedder
    from pairmeasures.train.long_documents import split_sentences

    measured = {r["query_id"] for r in validate_polarity(folder, model=model, text="text")["per_query"]}
    frame = read_beir(folder).fit_frame("text")
    frame = frame[frame["qid"].isin(measured)].reset_index(drop=True)
    frame["label"] = frame["label"].astype(str)
    positive = "pro" if "pro" in set(frame["label"]) else "support"
    sentences = [split_sentences(t) or [t] for t in frame["text"]]
    owner = np.repeat(np.arange(len(frame)), [len(s) for s in sentences])
    vectors, rows = Embedder(model).embed_distinct([s for group in sentences for s in group])
    vectors = vectors[rows].astype(np.float64)
    scores = np.empty(len(frame))
    for _, documents in frame.groupby("qid").groups.items():
        mine = np.isin(owner, documents)
        labels = frame["label"].to_numpy()[owner[mine]]
        sentence_scores = project(vectors[mine], fit_axes(vectors[mine], 1, labels=labels, positive=positive))[:, 0]
        for document in documents:
            scores[document] = pool(sentence_scores[owner[mine] == document])
    query, is_positive = frame["qid"].to_numpy(), (frame["label"] == positive).to_numpy()
    each = per_query_accuracy(scores, query, is_positive)
    return {"accuracy": perspective_accuracy(scores, query, is_positive),
            "consistent_accuracy": consistent_accuracy(scores, query, is_positive),
            "queries": len(each.query), "documents": int(len(frame)),
            "per_query": [{"query_id": q, "accuracy": float(a), "consistent_accuracy": float(c), "documents": int(n)}
                          for q, a, c, n in zip(each.query.tolist(), each.accuracy, each.consistent_accuracy,
                                                each.documents)]}


def paired_document_bootstrap(per_query: dict, baseline: str, measure: str, resamples: int, seed: int) -> dict:
    """Per variant: its accuracy (over documents) and its difference to ``baseline`` with 95% percentile intervals.

    Queries are resampled with replacement, the same draw for every variant (paired); an accuracy is the share of
    correct documents, so each resample recomputes correct / documents over the drawn queries (a document-weighted
    ratio, which ``pairmeasures.analysis.paired_bootstrap``'s per-query means do not give).
    """
    names = list(per_query)
    queries = [r["query_id"] for r in per_query[baseline]]
    correct = np.empty((len(names), len(queries)))
    documents = np.array([r["documents"] for r in per_query[baseline]], dtype=np.float64)
    for row, name in enumerate(names):
        records = {r["query_id"]: r for r in per_query[name]}
        if set(records) != set(queries):
            raise ValueError(f"{name} measured other queries than {baseline}")
        correct[row] = [records[q][measure] * records[q]["documents"] for q in queries]
    counts = np.stack([np.bincount(draw, minlength=len(queries))
                       for draw in np.random.default_rng(seed).integers(0, len(queries), (resamples, len(queries)))])
    accuracy = (counts @ correct.T) / (counts @ documents)[:, None]
    difference = accuracy - accuracy[:, [names.index(baseline)]]
    point = correct.sum(axis=1) / documents.sum()
    return {name: {"value": round(float(point[row]), 4),
                   "interval": [round(float(x), 4) for x in np.quantile(accuracy[:, row], [0.025, 0.975])],
                   "difference": round(float(point[row] - point[names.index(baseline)]), 4),
                   "difference_interval": [round(float(x), 4) for x in np.quantile(difference[:, row], [0.025, 0.975])]}
            for row, name in enumerate(names)}


def evaluate(variant: str, folder: Path, model) -> dict:
    """The validation report of ``model`` on ``folder`` (sentence-pooled for the pooled variants)."""
    from pairmeasures.apps.validate import validate_polarity

    if variant in POOLED:
        return pooled_validation(folder, model, POOLED[variant])
    return validate_polarity(folder, model=model, text="text")


def trained_model(variant: str, data: Path, models: Path, seed: int):
    """The model folder of ``variant`` (trained now unless kept from an earlier run); ``None`` for the default."""
    if variant == "default":
        return None
    if variant in POOLED:
        return trained_model("baseline", data, models, seed)
    raise NotImplementedError("training waits for pairmeasures.train.polarity")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", default=os.path.join(tempfile.gettempdir(), "polarity-long-documents"),
                        help="where trained models are kept and reused (default: %(default)s)")
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    if "baseline" not in variants:
        variants.insert(0, "baseline")
    data = Path(args.data)
    models = Path(args.models) / f"seed-{args.seed}"
    with tempfile.TemporaryDirectory() as scratch:
        folders = {"procon texts": data / "procon",
                   "perspectrum test claims": test_claims_folder(data / "perspectrum", Path(scratch) / "perspectrum-test")}
        results: dict = {}
        for variant in variants:
            started = time.perf_counter()
            model = trained_model(variant, data, models, args.seed)
            results[variant] = {"model": model, "training_seconds": round(time.perf_counter() - started, 1)}
            for evaluation, folder in folders.items():
                results[variant][evaluation] = evaluate(variant, folder, model)
            print(f"{variant}: " + "; ".join(f"{e} {results[variant][e]['accuracy']:.4f} / "
                                               f"{results[variant][e]['consistent_accuracy']:.4f}" for e in EVALUATIONS),
                  flush=True)
    table = {evaluation: {measure: paired_document_bootstrap(
        {v: results[v][evaluation]["per_query"] for v in variants}, "baseline", measure, args.resamples, args.seed)
        for measure in ("accuracy", "consistent_accuracy")} for evaluation in EVALUATIONS}
    print_table(table, variants)
    command = " ".join(["python", "benchmarks/polarity_long_documents.py", *map(shlex.quote, sys.argv[1:])])
    print("saved", save("polarity_long_documents", {"command": command, "seed": args.seed, "table": table,
                                                    "variants": results}))


def print_table(table: dict, variants: list) -> None:
    for evaluation, measures in table.items():
        print(f"\n{evaluation}: accuracy / consistent accuracy, difference to baseline [95% CI]")
        for variant in variants:
            cells = []
            for measure in ("accuracy", "consistent_accuracy"):
                cell = measures[measure][variant]
                low, high = cell["difference_interval"]
                cells.append(f"{cell['value']:.3f} ({cell['difference']:+.3f} [{low:+.3f}, {high:+.3f}])")
            print(f"  {variant:16s} " + "   ".join(cells))


if __name__ == "__main__":
    main()
