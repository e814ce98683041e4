"""DuoGreedy over 5,000 queries x top-100 at k = 10 and k = 100, against a plain-NumPy MMR.

The baseline is MMR as `pyterrier_dr.MMR` computes it (Lambda * normalised score - (1 - Lambda) *
largest cosine similarity to the placed documents), written here in NumPy and vectorised across
queries the same way, on 64-dimensional unit embeddings: pyterrier-dr is not installed in the
test environment, so its own transformer is not timed. Both are timed on the arrays (the math
layer) and DuoGreedy also through the transformer on a 500,000-row result frame.

Usage: python benchmarks/duogreedy.py
"""

from __future__ import annotations

import numpy as np
from _common import best_of, save

from pairmeasures.math import duo, duogreedy_lists

QUERIES, DEPTH, DIM, LAMBDA = 5_000, 100, 64, 0.5


def mmr(scores: np.ndarray, vectors: np.ndarray, k: int, Lambda: float) -> np.ndarray:
    """Column order of the top ``k`` of each row by MMR; ``scores`` (B, n), unit ``vectors`` (B, n, d)."""
    batch = scores.shape[0]
    top, emb = scores[:, :k], vectors[:, :k]
    span = top.max(axis=1, keepdims=True) - top.min(axis=1, keepdims=True)
    relevance = (top - top.min(axis=1, keepdims=True)) / np.where(span > 0, span, 1.0)
    similarity = np.einsum("bid,bjd->bij", emb, emb)
    redundancy = np.full((batch, k), -np.inf)
    taken = np.zeros((batch, k), dtype=bool)
    rows = np.arange(batch)
    chosen = np.zeros((batch, k), dtype=np.int64)
    for t in range(k):
        gain = Lambda * relevance - (1 - Lambda) * np.where(t == 0, 0.0, redundancy)
        pick = np.argmax(np.where(taken, -np.inf, gain), axis=1)
        taken[rows, pick] = True
        chosen[:, t] = pick
        redundancy = np.maximum(redundancy, similarity[rows, pick])
    return chosen


def main() -> None:
    import pandas as pd

    import pairmeasures as pm

    rng = np.random.default_rng(0)
    polarity = (rng.normal(size=(QUERIES, DEPTH)) + rng.normal(size=(QUERIES, 1))).ravel()
    offsets = np.arange(0, QUERIES * DEPTH + 1, DEPTH)
    scores = -np.sort(-rng.normal(size=(QUERIES, DEPTH)), axis=1)
    vectors = rng.normal(size=(QUERIES, DEPTH, DIM))
    vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
    frame = pd.DataFrame({"qid": np.repeat([f"q{i:05d}" for i in range(QUERIES)], DEPTH),
                          "docno": [f"d{i}" for i in range(QUERIES * DEPTH)], "score": scores.ravel(),
                          "rank": np.tile(np.arange(DEPTH), QUERIES), "polarity": polarity})
    results = {}
    for k in (10, 100):
        greedy = best_of(lambda k=k: duogreedy_lists(polarity, offsets, LAMBDA, k))
        baseline = best_of(lambda k=k: mmr(scores, vectors, k, LAMBDA))
        transformer = best_of(lambda k=k: pm.DuoGreedy(LAMBDA, k=k)(frame), repeat=1)
        order = duogreedy_lists(polarity, offsets, 0.0, k)
        gap = max(duo(polarity[order[offsets[q]:offsets[q] + k]]) for q in range(0, QUERIES, 50))
        results[f"k={k}"] = {"duogreedy_s": greedy, "mmr_numpy_s": baseline, "ratio": greedy / baseline,
                             "transformer_s": transformer, "max_duo_at_lambda0_sampled": gap}
        print(f"k={k}: DuoGreedy {greedy:.3f} s, NumPy MMR {baseline:.3f} s ({greedy / baseline:.2f}x); "
              f"transformer on {len(frame):,} rows {transformer:.2f} s; DUO at Lambda=0 (100 queries) <= {gap:.2g}")
    print(f"results in {save('duogreedy', results)}")


if __name__ == "__main__":
    main()
