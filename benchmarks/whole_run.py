"""Whole-run evaluation speed: Duo@10 + rKL@10 against pytrec_eval's nDCG@10 on the same run.

A run of 5,000 queries x 1,000 documents with ``polarity`` and ``group`` columns is evaluated
in one process by ir_measures.calc_aggregate, once with [nDCG@10] (served by pytrec_eval) and
once with [Duo@10, rKL@10] (served by pairmeasures). Target: pairmeasures takes at most 2x the
pytrec_eval time. The run is sorted by query and score, as run files are; the same run with its
rows shuffled is timed too (a full sort instead of a check). Also reported: pytrec_eval alone on prebuilt dicts (its C++ core, no
DataFrame conversion), the strictest possible baseline.

Usage: python benchmarks/whole_run.py [--queries 5000] [--docs 1000]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd
from _common import best_of, save


def make_run(n_queries: int, n_docs: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    query = np.repeat(np.array([f"q{i}" for i in range(n_queries)], dtype=object), n_docs)
    doc = np.array([f"d{i}" for i in range(n_queries * n_docs)], dtype=object)
    run = pd.DataFrame({
        "query_id": query,
        "doc_id": doc,
        "score": rng.normal(size=n_queries * n_docs).round(3),  # rounding makes ties, as real runs have
        "polarity": rng.normal(size=n_queries * n_docs),
        "group": rng.choice(np.array(["a", "b"], dtype=object), size=n_queries * n_docs),
    })
    # Grouped by query and sorted by score, as TREC run files and PyTerrier results are.
    run = run.sort_values(["query_id", "score"], ascending=[True, False], kind="stable", ignore_index=True)
    judged = run.groupby("query_id", sort=False).head(20)
    qrels = pd.DataFrame({"query_id": judged["query_id"], "doc_id": judged["doc_id"],
                          "relevance": rng.integers(0, 3, size=len(judged))})
    return run, qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import ir_measures
    import pytrec_eval
    from ir_measures import nDCG

    import pairmeasures as pm

    run, qrels = make_run(args.queries, args.docs)
    print(f"run: {args.queries} queries x {args.docs} documents = {len(run):,} rows")

    def ndcg():
        return ir_measures.calc_aggregate([nDCG @ 10], qrels, run)

    def bias(frame=run):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
            return ir_measures.calc_aggregate([pm.Duo @ 10, pm.rKL @ 10], qrels, frame)

    shuffled = run.sample(frac=1.0, random_state=1, ignore_index=True)

    qrels_dict, run_dict = {}, {}
    for q, d, r in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"]):
        qrels_dict.setdefault(q, {})[d] = int(r)
    for q, d, s in zip(run["query_id"], run["doc_id"], run["score"]):
        run_dict.setdefault(q, {})[d] = float(s)

    def pytrec_core():
        return pytrec_eval.RelevanceEvaluator(qrels_dict, {"ndcg_cut.10"}).evaluate(run_dict)

    t_ndcg = best_of(ndcg, args.repeat)
    t_bias = best_of(bias, args.repeat)
    t_shuffled = best_of(lambda: bias(shuffled), args.repeat)
    assert bias(shuffled) == bias(), "row order must not change the values"
    t_core = best_of(pytrec_core, args.repeat)
    results = {
        "queries": args.queries,
        "documents_per_query": args.docs,
        "seconds_ir_measures_ndcg10_pytrec_eval": round(t_ndcg, 3),
        "seconds_pairmeasures_duo10_rkl10": round(t_bias, 3),
        "seconds_pairmeasures_duo10_rkl10_shuffled_rows": round(t_shuffled, 3),
        "seconds_pytrec_eval_core_prebuilt_dicts": round(t_core, 3),
        "ratio_pairmeasures_over_ir_measures_ndcg": round(t_bias / t_ndcg, 3),
        "ratio_pairmeasures_shuffled_over_ir_measures_ndcg": round(t_shuffled / t_ndcg, 3),
        "ratio_pairmeasures_over_pytrec_eval_core": round(t_bias / t_core, 3),
        "target_ratio_over_ir_measures_ndcg": 2.0,
        "values": {str(k): round(float(v), 6) for k, v in {**ndcg(), **bias()}.items()},
    }
    print(f"nDCG@10 via ir_measures/pytrec_eval: {t_ndcg:.2f} s")
    print(f"Duo@10 + rKL@10 via pairmeasures:    {t_bias:.2f} s  -> ratio {t_bias / t_ndcg:.2f} (target <= 2)")
    print(f"  same run, rows shuffled:           {t_shuffled:.2f} s  -> ratio {t_shuffled / t_ndcg:.2f}")
    print(f"pytrec_eval core on prebuilt dicts:  {t_core:.2f} s  -> ratio {t_bias / t_core:.2f}")
    print("saved", save("whole_run", results))


if __name__ == "__main__":
    main()
