"""Polarization accuracy of axis methods on natural debate data (PERSPECTRUM, ProCon).

For each query, every method turns the embeddings of the query's labelled documents into one
score per document without looking at the labels; the scores are then compared with the gold
perspectives: `accuracy` as the PAIR reference code computes it (better sign chosen per
perspective, which rewards lopsided splits) and `consistent_accuracy` (one sign per query).
The paper's method is `pca`. Results go to benchmarks/results/polarity_methods.json.

Usage: python benchmarks/polarity_methods.py [--data DIR, default $PAIRMEASURES_DATA] [--model M] [--extra-model DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _common import data_option, save

from pairmeasures.compute.embed import Embedder
from pairmeasures.math import (
    anchored_axis,
    consistent_accuracy,
    fit_axes,
    perspective_accuracy,
    project,
    remove_directions,
)
from pairmeasures.sideinfo.polarity import default_positive, negation_anchors, read_beir


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def first_axis(x):
    return project(x, fit_axes(x, 1))[:, 0]


class Context:
    """Embeddings of one dataset: documents per query, query texts, negated query texts, global statistics."""

    def __init__(self, folder: Path, embedder: Embedder, text: str):
        data = read_beir(folder)
        frame = data.fit_frame(text)
        frame = frame[frame.groupby("qid")["label"].transform("nunique") == 2]
        self.frame = frame
        self.positive = default_positive(frame["label"])
        self.docs = embedder.embed(frame["text"].tolist()).astype(np.float64)
        queries = list(dict.fromkeys(frame["qid"]))
        texts = [data.queries[q]["text"] for q in queries]
        self.query_vec = dict(zip(queries, embedder.embed(texts).astype(np.float64)))
        negations = [pair[1] for pair in negation_anchors(dict(zip(queries, texts))).values()]
        negated = embedder.embed(negations).astype(np.float64)
        self.negated_vec = dict(zip(queries, negated))
        self.rows = {q: np.flatnonzero(frame["qid"].to_numpy() == q) for q in queries}
        self.mean = self.docs.mean(axis=0)
        _, singular, vt = np.linalg.svd(self.docs - self.mean, full_matrices=False)
        self.global_pcs = vt
        covariance = (vt.T * (singular ** 2 / len(self.docs))) @ vt
        w, v = np.linalg.eigh(covariance + 1e-6 * np.eye(covariance.shape[0]))
        w = 0.5 * w + 0.5 * w.mean()
        self.whitener = v @ np.diag(w ** -0.5) @ v.T
        self._shared = None

    def shared_subspace(self, k: int) -> np.ndarray:
        if self._shared is None:
            outer = np.zeros((self.docs.shape[1],) * 2)
            for rows in self.rows.values():
                if len(rows) > 2:
                    axes = fit_axes(self.docs[rows], 1)
                    outer += axes.explained[0] * np.outer(axes.components[0], axes.components[0])
            self._shared = np.linalg.eigh(outer)[1][:, ::-1]
        return self._shared[:, :k]


def anchored(context, q, x, within):
    """The library's anchored axis (pairmeasures.math.anchored_axis), statement minus negated statement."""
    axes = anchored_axis(x, context.query_vec[q] - context.negated_vec[q], within=within)
    return project(x, axes)[:, 0]


def spectral(x, tau=0.05):
    s = unit(x) @ unit(x).T
    w = np.exp(s / tau)
    np.fill_diagonal(w, 0)
    d = w.sum(axis=1)
    laplacian = np.eye(len(d)) - w / np.sqrt(np.outer(d, d))
    return np.linalg.eigh(laplacian)[1][:, 1]


def otsu(scores):
    ordered = np.sort(scores)
    costs = [ordered[:i].var() * i + ordered[i:].var() * (len(ordered) - i) for i in range(1, len(ordered))]
    i = int(np.argmin(costs)) + 1
    return scores - (ordered[i - 1] + ordered[i]) / 2


def two_means(x, iterations=50):
    start = first_axis(x)
    side = start > 0
    for _ in range(iterations):
        if side.all() or not side.any():
            return start
        a, b = x[side].mean(axis=0), x[~side].mean(axis=0)
        new = ((x - a) ** 2).sum(axis=1) < ((x - b) ** 2).sum(axis=1)
        if (new == side).all():
            break
        side = new
    a, b = x[side].mean(axis=0), x[~side].mean(axis=0)
    return ((x - b) ** 2).sum(axis=1) - ((x - a) ** 2).sum(axis=1)


PAPER = "pca (paper: first principal axis of the query's documents)"
METHODS = {
    PAPER: lambda c, q, x: first_axis(x),
    "pca on L2-normalised embeddings": lambda c, q, x: first_axis(unit(x)),
    "pca after removing the query direction": lambda c, q, x: first_axis(remove_directions(x, c.query_vec[q])),
    "pca after removing 10 corpus-wide principal directions": lambda c, q, x: first_axis(
        remove_directions(x - c.mean, c.global_pcs[:10])),
    "pca after corpus-wide whitening (shrinkage 0.5)": lambda c, q, x: first_axis((x - c.mean) @ c.whitener),
    "pca inside a 10-d subspace shared by all queries' axes": lambda c, q, x: first_axis(x @ c.shared_subspace(10)),
    "second principal axis": lambda c, q, x: project(x, fit_axes(x, 2))[:, 1] if len(x) > 2 else first_axis(x),
    "anchor: similarity to the query": lambda c, q, x: (s := unit(x) @ unit(c.query_vec[q][None])[0]) - s.mean(),
    "anchors: query minus negated query": lambda c, q, x: anchored(c, q, x, 0),
    "anchors projected onto the top-5 principal axes": lambda c, q, x: anchored(c, q, x, 5),
    "pca with a balanced split (median threshold)": lambda c, q, x: (s := first_axis(x)) - np.median(s),
    "pca with a 1-d 2-means threshold": lambda c, q, x: otsu(first_axis(x)),
    "2-means clustering started from pca": lambda c, q, x: two_means(x),
    "spectral split (Fiedler vector, tau 0.05)": lambda c, q, x: spectral(x),
}


def evaluate(context: Context, methods: dict = METHODS) -> dict:
    out = {}
    query = context.frame["qid"].to_numpy()
    positive = (context.frame["label"] == context.positive).to_numpy()
    for name, method in methods.items():
        scores = np.zeros(len(context.frame))
        for q, rows in context.rows.items():
            scores[rows] = method(context, q, context.docs[rows])
        out[name] = {"accuracy": round(perspective_accuracy(scores, query, positive), 4),
                     "consistent_accuracy": round(consistent_accuracy(scores, query, positive), 4)}
    return out


def supervised_probe(context: Context, folds: int = 5) -> float:
    """A diagnostic, not a method: how much claim-relative stance the embeddings carry at all.

    Logistic regression on [centred document embedding * query embedding, centred embedding],
    trained on the other folds of queries (labels used), scored with a fixed sign (no per-query flip).
    """
    from sklearn.linear_model import LogisticRegression

    queries = list(context.rows)
    fold_of = dict(zip(queries, np.random.default_rng(0).integers(0, folds, size=len(queries))))
    features, targets, fold = [], [], []
    positive = (context.frame["label"] == context.positive).to_numpy()
    for q, rows in context.rows.items():
        x = unit(context.docs[rows])
        centred = x - x.mean(axis=0)
        features.append(np.hstack([centred * unit(context.query_vec[q][None])[0], centred]))
        targets.append(positive[rows])
        fold += [fold_of[q]] * len(rows)
    features, targets, fold = np.vstack(features), np.concatenate(targets), np.array(fold)
    correct = 0
    for f in range(folds):
        test = fold == f
        model = LogisticRegression(C=1.0, max_iter=2000).fit(features[~test], targets[~test])
        correct += int(((model.decision_function(features[test]) > 0) == targets[test]).sum())
    return round(correct / len(targets), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--model", default=None, help="embedding model (default: all-MiniLM-L6-v2)")
    parser.add_argument("--extra-model", action="append", default=[], metavar="DIR",
                        help="also run the paper's pca with this model (e.g. an assembled all-mpnet-base-v2)")
    args = parser.parse_args()
    runs = [("perspectrum", "text"), ("procon", "text"), ("procon", "title"), ("procon", "title+text")]
    results = {"model": args.model or "all-MiniLM-L6-v2", "datasets": {}}
    embedder = Embedder(args.model)
    for dataset, text in runs:
        context = Context(Path(args.data) / dataset, embedder, text)
        key = f"{dataset} ({text})"
        results["datasets"][key] = {"queries": len(context.rows), "documents": len(context.frame),
                                    "methods": evaluate(context),
                                    "supervised_probe_accuracy": supervised_probe(context)}
        print(f"\n{key}: {len(context.rows)} queries, {len(context.frame)} documents; supervised diagnostic "
              f"(labels of other topics, fixed sign): {results['datasets'][key]['supervised_probe_accuracy']:.3f}")
        for name, value in results["datasets"][key]["methods"].items():
            print(f"  {name:58s} accuracy {value['accuracy']:.3f}  consistent {value['consistent_accuracy']:.3f}")
    for extra in args.extra_model:
        other = Embedder(extra)
        for dataset, text in runs[:2]:
            context = Context(Path(args.data) / dataset, other, text)
            value = evaluate(context, {PAPER: METHODS[PAPER]})[PAPER]
            results.setdefault("other_models", {}).setdefault(Path(extra).name, {})[f"{dataset} ({text})"] = value
            print(f"{Path(extra).name} on {dataset}: accuracy {value['accuracy']:.3f}  consistent {value['consistent_accuracy']:.3f}")
    print("saved", save("polarity_methods", results))


if __name__ == "__main__":
    main()
