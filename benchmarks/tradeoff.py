"""DuoGreedy against MMR on real data: nDCG@10 and Duo@10 over Lambda, and the DUO each reaches at equal
relevance cost.

For each dataset the base run is ``bm25>>dense`` built with ``pairmeasures.pipelines.specs.build_system``
(first-stage depth 100) and annotated as ``pairmeasures audit`` does: document ``text``, the gold ``group``
and ``polarity`` from the audit's polarity model (a per-query axis fitted on the labelled documents when the
labels are two perspectives, else on the candidates); queries without a fitted axis (no polarity: on the
Wiki-Balance sample, those with documents of one perspective only) are left out. Both methods re-rank that one run's top 10:
``pm.DuoGreedy(Lambda, k=10)`` on polarity, ``pm.TopKMMR(Lambda, k=10, encoder=...)`` on the bi-encoder's
document vectors. ``pairmeasures.audit.curves.tradeoff_curve`` gives the means with paired-bootstrap 95%
intervals (Duo@10 over the queries it measures: ``degenerate='exclude', missing='skip'`` as in the audit) and
``equal_cost`` the Duo@10 each method reaches when it gives up at most 0.01, 0.02, 0.05 nDCG@10. Where the
dataset has gold labels, the same re-rankings are also judged by rKL@10 on them (``gold_*``): DUO is
DuoGreedy's own objective, measured with the polarity it re-ranks by.

Writes results/tradeoff.json and results/tradeoff_<dataset>.png.

Usage: PAIRMEASURES_CACHE_DIR=/tmp/pmcache-ev python benchmarks/tradeoff.py [--data DIR] [--only procon ...]
"""

from __future__ import annotations

import argparse
import functools
import json
import time
import warnings
from pathlib import Path

from _common import RESULTS, data_option, save

#: name -> dataset id or folder under --data (as in benchmarks/audits.py)
DATASETS = {
    "perspectrum": "pair/perspectrum",
    "procon": "pair/procon",
    "wiki-balance-sample": "{data}/wiki-balance-sample",
    "grep-biasir": "pair/grep-biasir",
}
LAMBDAS = (0, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95, 1)
DROPS = (0.01, 0.02, 0.05)
RELEVANCE, BIAS = "nDCG@10", "Duo(degenerate='exclude', missing='skip')@10"
GOLD = "rKL(degenerate='exclude', missing='skip')@10"


def base_run(dataset: str, data: str):
    """The annotated ``bm25>>dense`` run, the qrels and the bi-encoder (for MMR's vectors)."""
    import pandas as pd

    import pairmeasures as pm
    from pairmeasures.compute.embed import Embedder
    from pairmeasures.datasets.profile import load_profile, polarity_model
    from pairmeasures.pipelines.specs import System, SystemContext

    profile = load_profile(dataset, data)
    polarity = polarity_model(profile, embedder=Embedder())
    model = polarity.model
    polarity_from = "candidates" if model.fit is None else "labelled documents"
    context = SystemContext(source=profile.corpus, data=data, text=profile.text, polarity_model=model)
    topics = pd.DataFrame({"qid": list(profile.queries), "query": list(profile.queries.values())})
    run = System.parse("bm25>>dense").build(context).transform(topics)[["qid", "docno", "score", "rank"]]
    run = run.assign(text=profile.texts(run["docno"]), query=[profile.queries[q] for q in run["qid"]])
    if profile.labels is not None:
        gold = dict(zip(zip(profile.labels["query_id"], profile.labels["doc_id"]), profile.labels["group"]))
        run = run.assign(group=[gold.get(pair) for pair in zip(run["qid"], run["docno"])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        run = pm.PolarityScorer(model, errors="skip")(run)
    # DuoGreedy needs every document's polarity: keep the queries whose axis could be fitted (all but
    # Wiki-Balance's queries with documents of one perspective only)
    unscored = run.loc[run["polarity"].isna(), "qid"].unique()
    run = run[~run["qid"].isin(unscored)].reset_index(drop=True)
    qrels = profile.qrels[profile.qrels["query_id"].isin(set(run["qid"]))]
    return run, qrels, profile, pm.bi_encoder(), polarity_from


def equal_costs(curve, bias: str) -> dict:
    """Each method's point at each relevance cost in DROPS, and which reaches the lower bias (or "tie")."""
    from pairmeasures.audit.curves import equal_cost

    costs: dict = {}
    for drop in DROPS:
        table = equal_cost(curve, "DuoGreedy", "MMR", drop)
        costs[str(drop)] = {row.method: {"Lambda": round(row.Lambda, 3), "nDCG@10": round(row.relevance, 4),
                                         bias: round(row.bias, 4)} for row in table.itertuples()}
        a, b = (costs[str(drop)][m][bias] for m in ("DuoGreedy", "MMR"))
        costs[str(drop)]["lower"] = "tie" if a == b else "DuoGreedy" if a < b else "MMR"
    return costs


def records(curve) -> list:
    return [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}
            for row in curve.to_dict(orient="records")]


def mmr(Lambda: float, encoder):
    import pairmeasures as pm

    return pm.TopKMMR(Lambda, k=10, encoder=encoder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--only", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()

    import pairmeasures as pm
    from pairmeasures.apps.plots import save_png, tradeoff
    from pairmeasures.audit.curves import tradeoff_curve

    data = str(Path(args.data).resolve())
    previous = RESULTS / "tradeoff.json"
    results: dict = json.loads(previous.read_text())["results"] if previous.is_file() else {}
    for name in args.only:
        start = time.perf_counter()
        run, qrels, profile, encoder, polarity_from = base_run(DATASETS[name].format(data=data), data)
        methods = {"DuoGreedy": lambda Lambda: pm.DuoGreedy(Lambda, k=10),
                   "MMR": functools.partial(mmr, encoder=encoder.doc_encoder())}
        curve = tradeoff_curve(run, qrels, methods, LAMBDAS, relevance=RELEVANCE, bias=BIAS,
                               resamples=args.resamples)
        png = RESULTS / f"tradeoff_{name}.png"
        save_png(tradeoff(curve, "nDCG@10", "Duo@10"), png)
        costs = equal_costs(curve, "Duo@10")
        results[name] = {
            "dataset": profile.name, "queries": len(profile.queries), "judged": int(profile.qrels["query_id"].nunique()),
            "reranked": int(run["qid"].nunique()), "measured": int(qrels["query_id"].nunique()),
            "polarity_fitted_on": polarity_from, "base": "bm25>>dense", "k": 10, "bias": BIAS,
            "curve": records(curve), "equal_cost": costs, "png": str(png.relative_to(RESULTS.parent.parent)),
        }
        if profile.labels is not None:  # the same re-rankings judged by the gold labels
            gold = tradeoff_curve(run, qrels, methods, LAMBDAS, relevance=RELEVANCE, bias=GOLD, resamples=args.resamples)
            results[name].update({"gold_bias": GOLD, "gold_curve": records(gold),
                                  "gold_equal_cost": equal_costs(gold, "rKL@10")})
        results[name]["seconds"] = round(time.perf_counter() - start, 1)
        print(name, json.dumps(costs, indent=1), flush=True)
        print("saved", save("tradeoff", dict(sorted(results.items()))), flush=True)


if __name__ == "__main__":
    main()
