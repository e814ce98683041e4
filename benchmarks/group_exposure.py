"""Speed of the group-exposure family against FairRankTune on the same rankings (target: at least 10x faster).

A run of 1,000 queries x 10 and x 100 documents (distinct scores, 3 groups, a click-through rate per document,
binary qrels for every document, about half relevant) is evaluated at its depth k by EXP, EXPU, EXPRU, ERBE,
ERBP, ERBR, AWRF(form='groups'), NDKL(eps=1e-7), ARP and IAA:

- pairmeasures: one ``ir_measures.iter_calc`` call over the run DataFrame, through the provider (sorting and
  input checks included);
- FairRankTune 0.0.7: each measure called once per query on that query's ranking (one column, items its
  documents, the per-query mapping of docs/group-exposure.md), its inputs built beforehand and not timed;
- pooled: ``pm.pooled`` for the pooled measures against FairRankTune fed every query as a column (items
  (query, document)).

Every per-query value is compared with FairRankTune's (queries where ours is degenerate are left out: there
FairRankTune divides by zero); the largest difference is printed and saved.

Usage: python benchmarks/group_exposure.py [--queries 1000] [--depths 10 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _common import best_of, save

DECAY, P = 0.5, 0.5


def make_run(n_queries: int, depth: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n = n_queries * depth
    run = pd.DataFrame({
        "query_id": np.repeat(np.array([f"q{i}" for i in range(n_queries)], dtype=object), depth),
        "doc_id": np.tile(np.array([f"d{j}" for j in range(depth)], dtype=object), n_queries),
        "score": rng.permutation(n).astype(float),
        "group": rng.choice(np.array(["a", "b", "c"], dtype=object), size=n, p=[0.5, 0.3, 0.2]),
        "ctr": rng.random(n),
    })
    qrels = run[["query_id", "doc_id"]].assign(relevance=(rng.random(n) < 0.5).astype(int))
    return run, qrels


def measures(k: int) -> list:
    import ir_measures

    names = ["EXP", "EXPU", "EXPRU", f"ERBE(decay={DECAY})", f"ERBP(decay={DECAY})", f"ERBR(decay={DECAY})",
             f"AWRF(form='groups', p={P})", "NDKL(eps=1e-7)", "ARP", "IAA"]
    return [ir_measures.parse_measure(f"{name}@{k}") for name in names]


def fairranktune_inputs(run: pd.DataFrame, qrels: pd.DataFrame) -> list[tuple]:
    """Per query, in the provider's order: (ranking_df, item_group_dict, relevance_df, ctr_df)."""
    frame = run.merge(qrels, on=["query_id", "doc_id"]).sort_values(["query_id", "score"], ascending=[True, False])
    inputs = []
    for query, rows in frame.groupby("query_id", sort=False):
        docs = rows["doc_id"].tolist()
        inputs.append((query, pd.DataFrame({query: docs}), dict(zip(docs, rows["group"])),
                       pd.DataFrame({query: rows["relevance"].astype(float).to_numpy()}),
                       pd.DataFrame({query: rows["ctr"].to_numpy()})))
    return inputs


def fairranktune_calls() -> dict:
    """Our measure name -> a call of FairRankTune's function on one query's inputs."""
    from FairRankTune.Metrics.ARP import ARP
    from FairRankTune.Metrics.AWRF import AWRF
    from FairRankTune.Metrics.ERB import ERBE, ERBP, ERBR
    from FairRankTune.Metrics.EXP import EXP, EXPRU, EXPU
    from FairRankTune.Metrics.IAA import IAA
    from FairRankTune.Metrics.NDKL import NDKL

    combo = "MaxMinDiff"
    return {
        "EXP": lambda r, g, u, c: EXP(r, g, combo)[0],
        "EXPU": lambda r, g, u, c: EXPU(r, g, u, combo)[0],
        "EXPRU": lambda r, g, u, c: EXPRU(r, g, u, c, combo)[0],
        "ERBE": lambda r, g, u, c: ERBE(r, g, DECAY, combo)[0],
        "ERBP": lambda r, g, u, c: ERBP(r, g, DECAY, combo)[0],
        "ERBR": lambda r, g, u, c: ERBR(r, g, u, DECAY, combo)[0],
        "AWRF": lambda r, g, u, c: AWRF(r, g, P, combo)[0],
        "NDKL": lambda r, g, u, c: NDKL(r, g),
        "ARP": lambda r, g, u, c: ARP(r, g, combo)[0],
        "IAA": lambda r, g, u, c: IAA(r, u),
    }


def guarded(call, *args) -> float:
    """FairRankTune's value, NaN where it raises (ARP divides by zero on a ranking of one group)."""
    try:
        return float(call(*args))
    except ZeroDivisionError:
        return float("nan")


def pooled_frames(run: pd.DataFrame, qrels: pd.DataFrame) -> tuple:
    """Every query as one column of FairRankTune's tables, items (query, document)."""
    frame = run.merge(qrels, on=["query_id", "doc_id"]).sort_values(["query_id", "score"], ascending=[True, False])
    items = list(zip(frame["query_id"], frame["doc_id"]))
    rows_of = frame.groupby("query_id", sort=False).indices  # query -> positions in frame, in rank order
    relevance, ctr_values = frame["relevance"].to_numpy(float), frame["ctr"].to_numpy()
    ranking = pd.DataFrame({q: pd.Series([items[i] for i in rows]) for q, rows in rows_of.items()})
    utility = pd.DataFrame({q: pd.Series(relevance[rows]) for q, rows in rows_of.items()})
    ctr = pd.DataFrame({q: pd.Series(ctr_values[rows]) for q, rows in rows_of.items()})
    return ranking, dict(zip(items, frame["group"])), utility, ctr


def one_depth(n_queries: int, depth: int, repeat: int) -> dict:
    import ir_measures

    import pairmeasures as pm

    run, qrels = make_run(n_queries, depth)
    family = measures(depth)

    def ours():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
            return list(ir_measures.iter_calc(family, qrels, run))

    t_ours = best_of(ours, repeat)
    values = {(str(m.measure), m.query_id): m.value for m in ours()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        degenerate = {str(m): set(q for q, v in zip(*_degenerate(m, run, qrels)) if v) for m in family}

    inputs = fairranktune_inputs(run, qrels)
    calls = fairranktune_calls()
    theirs: dict = {}
    start = time.perf_counter()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for measure in family:
            call = calls[measure.NAME]
            theirs.update({(str(measure), query): guarded(call, r, g, u, c) for query, r, g, u, c in inputs})
    t_theirs = time.perf_counter() - start

    differences = {}
    for measure in family:
        name = str(measure)
        pairs = [(values[name, q], theirs[name, q]) for q, *_ in inputs if q not in degenerate[name]]
        ours_v, theirs_v = np.array(pairs).T
        differences[name] = float(np.max(np.abs(ours_v - theirs_v)))

    # NDKL and IAA have no pooled form; FairRankTune's ARP needs every ranking to rank the same items
    pooled_names = [m for m in family if m.NAME not in ("NDKL", "IAA", "ARP")]
    ranking, groups, utility, ctr = pooled_frames(run, qrels)
    t_pooled_ours = best_of(lambda: [pm.pooled(m, run, qrels) for m in pooled_names], repeat)
    start = time.perf_counter()
    pooled_theirs = {str(m): calls[m.NAME](ranking, groups, utility, ctr) for m in pooled_names}
    t_pooled_theirs = time.perf_counter() - start
    pooled_difference = max(abs(pm.pooled(m, run, qrels) - pooled_theirs[str(m)]) for m in pooled_names)

    print(f"{n_queries} queries x {depth} documents, {len(family)} measures at @{depth}:")
    print(f"  pairmeasures (ir_measures.iter_calc): {t_ours:.3f} s; FairRankTune per query: {t_theirs:.2f} s "
          f"-> {t_theirs / t_ours:.0f}x")
    print(f"  pooled ({len(pooled_names)} measures): pm.pooled {t_pooled_ours:.3f} s; FairRankTune on all "
          f"columns {t_pooled_theirs:.2f} s -> {t_pooled_theirs / t_pooled_ours:.0f}x")
    print(f"  largest difference per query {max(differences.values()):.1e}, pooled {pooled_difference:.1e}")
    return {
        "queries": n_queries, "documents_per_query": depth, "measures": [str(m) for m in family],
        "seconds_pairmeasures": round(t_ours, 4), "seconds_fairranktune_per_query": round(t_theirs, 3),
        "ratio": round(t_theirs / t_ours, 1),
        "pooled_measures": [str(m) for m in pooled_names],
        "seconds_pooled_pairmeasures": round(t_pooled_ours, 4),
        "seconds_pooled_fairranktune": round(t_pooled_theirs, 3),
        "ratio_pooled": round(t_pooled_theirs / t_pooled_ours, 1),
        "largest_difference_per_query": differences, "largest_difference_pooled": pooled_difference,
        "degenerate_queries": {name: len(queries) for name, queries in degenerate.items()},
    }


def _degenerate(measure, run, qrels):
    """Query ids and whether each is degenerate for ``measure`` (FairRankTune divides by zero there)."""
    from pairmeasures.measures.provider import PairEvaluator

    evaluator = PairEvaluator([measure], qrels)
    result = measure.evaluate(evaluator._lists(run))
    return evaluator.query_ids, result.degenerate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--depths", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results = {"fairranktune": _version(), "runs": [one_depth(args.queries, d, args.repeat) for d in args.depths],
               "target_ratio": 10}
    print("saved", save("group_exposure", results))


def _version() -> str:
    from importlib.metadata import version

    return version("fairranktune")


if __name__ == "__main__":
    main()
