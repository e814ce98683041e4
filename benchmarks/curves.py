"""Speed of the audit's bias-by-cut-off curves (pairmeasures.audit.curves.cutoff_curves).

Four systems rank the same 1,000 queries x 100 documents (one corpus: polarity, two groups, 8-word texts
with gendered terms) in four random orders; the curves evaluate Duo, rKL and TExFAIR at k = 1..50 (150
measures) with one evaluation of the run per system, each family's cut-offs in one pass. Reported: the whole call
(first: term counts and rKL normalisers not yet remembered), and one family at a time.

Usage: python benchmarks/curves.py [--queries 1000] [--docs 100] [--systems 4]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _common import save


def make_runs(n_queries: int, n_docs: int, n_systems: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = n_queries * n_docs
    words = np.array(["he", "she", "him", "her", "man", "woman", "the", "a", "debate", "argument"], dtype=object)
    corpus = pd.DataFrame({
        "qid": np.repeat(np.array([f"q{i}" for i in range(n_queries)], dtype=object), n_docs),
        "docno": np.array([f"d{i}" for i in range(n)], dtype=object),
        "polarity": rng.normal(size=n),
        "group": rng.choice(np.array(["pro", "con"], dtype=object), n),
        "text": [" ".join(row) for row in words[rng.integers(0, words.size, size=(n, 8))]],
    })
    runs = {f"system{s}": corpus.assign(score=rng.random(n)) for s in range(n_systems)}
    qrels = corpus.groupby("qid", sort=False).head(5)[["qid", "docno"]].assign(label=1)
    return runs, qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--systems", type=int, default=4)
    args = parser.parse_args()

    from pairmeasures.audit.curves import cutoff_curves

    runs, qrels = make_runs(args.queries, args.docs, args.systems)
    families = ["Duo", "rKL", "TExFAIR"]
    results: dict = {"queries": args.queries, "docs": args.docs, "systems": args.systems, "ks": "1..50"}
    start = time.perf_counter()
    curves = cutoff_curves(runs, qrels, families)
    results["all_families_s"] = round(time.perf_counter() - start, 2)
    results["rows"] = len(curves)
    for family in families:
        start = time.perf_counter()
        cutoff_curves(runs, qrels, [family])
        results[f"{family}_s"] = round(time.perf_counter() - start, 2)
    print(results)
    print("saved", save("curves", results))


if __name__ == "__main__":
    main()
