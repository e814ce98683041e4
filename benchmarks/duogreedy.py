"""DuoGreedy over 5,000 queries x top-100 at k = 10 and k = 100, against pyterrier-dr's MMR itself.

Both transformers run in the same process on the same result frame (``polarity`` for DuoGreedy,
``doc_vec``: 64-dimensional unit vectors for MMR), best of 3. pyterrier-dr 0.8.1 ships MMR as
``pyterrier_dr.MmrScorer(Lambda=...)``, which reorders every document it is given (no
``rerank_k``), so it gets each query's top ``k`` (the cut is not timed) while ``pm.DuoGreedy(k=k)``
gets all 100 documents and reorders the top ``k``. Exact mode at ``Lambda=0``, k = 10, is timed
against greedy. For the algorithms without PyTerrier's per-query overhead, both are also timed on
arrays: DuoGreedy's math layer against MMR's formula (Lambda * normalised score - (1 - Lambda) *
largest cosine similarity to the placed documents) written in NumPy and vectorised across queries.

Usage: python benchmarks/duogreedy.py
"""

from __future__ import annotations

import argparse

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
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    import pandas as pd
    import pyterrier_dr

    import pairmeasures as pm

    rng = np.random.default_rng(0)
    polarity = (rng.normal(size=(QUERIES, DEPTH)) + rng.normal(size=(QUERIES, 1))).ravel()
    offsets = np.arange(0, QUERIES * DEPTH + 1, DEPTH)
    scores = -np.sort(-rng.normal(size=(QUERIES, DEPTH)), axis=1)
    vectors = rng.normal(size=(QUERIES, DEPTH, DIM))
    vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
    frame = pd.DataFrame({"qid": np.repeat([f"q{i:05d}" for i in range(QUERIES)], DEPTH),
                          "docno": [f"d{i}" for i in range(QUERIES * DEPTH)], "score": scores.ravel(),
                          "rank": np.tile(np.arange(DEPTH), QUERIES), "polarity": polarity,
                          "doc_vec": list(vectors.reshape(-1, DIM).astype(np.float32))})
    results: dict = {}
    for k in (10, 100):
        top_k = frame[frame["rank"] < k].reset_index(drop=True)
        duogreedy = best_of(lambda k=k: pm.DuoGreedy(LAMBDA, k=k)(frame))
        pt_mmr = best_of(lambda k=k, top_k=top_k: pyterrier_dr.MmrScorer(Lambda=LAMBDA)(top_k))
        greedy = best_of(lambda k=k: duogreedy_lists(polarity, offsets, LAMBDA, k))
        baseline = best_of(lambda k=k: mmr(scores, vectors, k, LAMBDA))
        order = duogreedy_lists(polarity, offsets, 0.0, k)
        gap = max(duo(polarity[order[offsets[q]:offsets[q] + k]]) for q in range(0, QUERIES, 50))
        results[f"k={k}"] = {"duogreedy_transformer_s": duogreedy, "pyterrier_dr_mmr_s": pt_mmr,
                             "ratio": duogreedy / pt_mmr, "duogreedy_arrays_s": greedy, "mmr_numpy_s": baseline,
                             "arrays_ratio": greedy / baseline, "max_duo_at_lambda0_sampled": gap}
        print(f"k={k}: pm.DuoGreedy {duogreedy:.2f} s (all {len(frame):,} rows), pyterrier_dr.MmrScorer {pt_mmr:.2f} s "
              f"(top {k}: {len(top_k):,} rows): {duogreedy / pt_mmr:.3f}x; arrays: {greedy:.3f} s vs NumPy MMR "
              f"{baseline:.3f} s ({greedy / baseline:.2f}x); DUO at Lambda=0 (100 queries) <= {gap:.2g}")
    exact = best_of(lambda: pm.DuoGreedy(0, k=10, mode="exact")(frame))
    greedy0 = best_of(lambda: pm.DuoGreedy(0, k=10)(frame))
    results["exact_k=10"] = {"exact_transformer_s": exact, "greedy_transformer_s": greedy0, "ratio": exact / greedy0}
    print(f"k=10, Lambda=0: exact {exact:.2f} s, greedy {greedy0:.2f} s ({exact / greedy0:.2f}x)")
    print(f"results in {save('duogreedy', results)}")


if __name__ == "__main__":
    main()
