"""Speed of all term-based measures together on one run (target: under 10 s on this machine).

A run of 2,000 queries x 100 distinct documents of 60 words (about 3 % of them gendered terms of
the built-in list, the rest from a 5,000-word vocabulary, with punctuation) carries a ``text``
column. One ir_measures.calc_aggregate call evaluates TExFAIR, TED, AWRF, FaiRR, NFaiRR, RaB
(tc, tf, bool, ibbr) and ARaB at 10, plus TExFAIR and NFaiRR at 100:

- cold: the first evaluation in a fresh process-wide term counter (every text tokenised once);
- warm: the same evaluation again, every text found by its content (e.g. the next system over
  the same corpus);
- baseline, same run: nDCG@10 through ir_measures/pytrec_eval.

Usage: python benchmarks/term_measures.py [--queries 2000] [--docs 100] [--words 60]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _common import best_of, save


def make_run(n_queries: int, n_docs: int, n_words: int, seed: int = 0):
    from pairmeasures.sideinfo.termlists import Lexicon

    rng = np.random.default_rng(seed)
    gendered = np.array(Lexicon.load("gender").terms, dtype=object)
    filler = np.array([f"w{i}" for i in range(5000)], dtype=object)
    n = n_queries * n_docs
    words = filler[rng.integers(0, filler.size, size=(n, n_words))]
    is_gendered = rng.random((n, n_words)) < 0.03
    words[is_gendered] = gendered[rng.integers(0, gendered.size, size=int(is_gendered.sum()))]
    words[:, -1] = words[:, -1] + "."
    words[:, n_words // 2] = words[:, n_words // 2] + ","
    texts = [" ".join(row) for row in words]
    run = pd.DataFrame({
        "query_id": np.repeat(np.array([f"q{i}" for i in range(n_queries)], dtype=object), n_docs),
        "doc_id": np.array([f"d{i}" for i in range(n)], dtype=object),
        "score": np.tile(np.arange(n_docs, 0, -1, dtype=float), n_queries),
        "text": texts,
    })
    qrels = run.groupby("query_id", sort=False).head(5)[["query_id", "doc_id"]].assign(relevance=1)
    return run, qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--words", type=int, default=60)
    args = parser.parse_args()

    import ir_measures
    from ir_measures import nDCG

    import pairmeasures as pm
    from pairmeasures.sideinfo import termcount

    run, qrels = make_run(args.queries, args.docs, args.words)
    measures = [pm.TExFAIR @ 10, pm.TED @ 10, pm.AWRF @ 10, pm.FaiRR @ 10, pm.NFaiRR @ 10,
                pm.RaB(variant="tc") @ 10, pm.RaB @ 10, pm.RaB(variant="bool") @ 10, pm.RaB(variant="ibbr") @ 10,
                pm.ARaB @ 10, pm.TExFAIR @ 100, pm.NFaiRR @ 100]
    print(f"run: {args.queries} queries x {args.docs} documents of {args.words} words = {len(run):,} rows; "
          f"{len(measures)} term-based measures")

    def evaluate():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
            return ir_measures.calc_aggregate(measures, qrels, run)

    termcount._COUNTERS.clear()
    start = time.perf_counter()
    values = evaluate()
    t_cold = time.perf_counter() - start
    t_warm = best_of(evaluate, 3)
    t_ndcg = best_of(lambda: ir_measures.calc_aggregate([nDCG @ 10], qrels, run), 3)
    results = {
        "queries": args.queries,
        "documents_per_query": args.docs,
        "words_per_document": args.words,
        "measures": [str(m) for m in measures],
        "seconds_cold_all_term_measures": round(t_cold, 3),
        "seconds_warm_all_term_measures": round(t_warm, 3),
        "seconds_ir_measures_ndcg10_pytrec_eval": round(t_ndcg, 3),
        "ratio_cold_over_ndcg": round(t_cold / t_ndcg, 3),
        "ratio_warm_over_ndcg": round(t_warm / t_ndcg, 3),
        "target_seconds_cold": 10.0,
        "values": {str(k): round(float(v), 6) for k, v in values.items()},
    }
    print(f"all term-based measures, cold (every text tokenised): {t_cold:.2f} s (target < 10 s)")
    print(f"all term-based measures, warm (texts found by content): {t_warm:.2f} s")
    print(f"nDCG@10 via ir_measures/pytrec_eval, same run:          {t_ndcg:.2f} s "
          f"-> ratios {t_cold / t_ndcg:.2f} cold, {t_warm / t_ndcg:.2f} warm")
    print("saved", save("term_measures", results))


if __name__ == "__main__":
    main()
