"""The audit's DuoGreedy-vs-MMR trade-off: for each system with a ``duogreedy(...)`` stage, both methods re-rank the
run of the system before that stage at every Lambda (:mod:`pairmeasures.audit.curves`), and the bias each reaches
at a small relevance cost is compared. The measures come as objects (parsed once, with the audit's others)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from ..pipelines.specs import SystemContext
    from .result import Tradeoff

__all__ = ["EQUAL_COST_DROPS", "tradeoff", "hidden_bases", "top_ranked"]

#: Relevance drops at which the trade-off compares the two methods' bias (:func:`~pairmeasures.audit.curves.equal_cost`).
EQUAL_COST_DROPS = (0.01, 0.02, 0.05)


def hidden_bases(systems: dict, bases: dict) -> tuple[dict, dict]:
    """``(systems to run besides the audited ones, name -> the run name of each trade-off base)``: a base that is
    not itself an audited system (by canonical spec) runs as ``"base SPEC"``."""
    audited = {system.canonical: name for name, system in systems.items()}
    hidden = {f"base {base.spec}": base for base, _ in bases.values() if base.canonical not in audited}
    names = {name: audited.get(base.canonical, f"base {base.spec}") for name, (base, _) in bases.items()}
    return hidden, names


def tradeoff(bases: dict, base_names: dict, runs: dict, run_keys: dict, qrels: "pd.DataFrame", relevance,
             bias, bias_name: str, lambdas: list, seed: int, resamples: int, context: "SystemContext",
             memo) -> "Tradeoff":
    """DuoGreedy(Lambda, k) on the base run (its ``polarity`` the audit's) against TopKMMR(Lambda, k) on the audit's
    bi-encoder, per system with a duogreedy stage (``relevance``, ``bias``: measure objects; ``bias_name``: the bias
    measure as the leaderboard names it); each curve kept through ``memo(kind, parts, compute)``."""
    import pandas as pd

    from ..compute.embed import Embedder
    from ..io.memo import value_key
    from .curves import equal_cost, reads_depth, tradeoff_curve
    from .result import Tradeoff, TradeoffBase

    encoder_key = Embedder(context.model).key
    qrels_key = value_key(qrels)
    curves, costs = [], []
    for name, (base, stage) in bases.items():
        options = dict(stage.options)
        k, mode = int(options.get("k", context.k)), str(options.get("mode", "greedy"))
        base_run = runs[base_names[name]]

        def compute(base_run=base_run, k=k, mode=mode):
            from ..pipelines.duogreedy import DuoGreedy
            from ..pipelines.mmr import TopKMMR

            encoder = context.bi_encoder().doc_encoder()
            methods = {"DuoGreedy": lambda value: DuoGreedy(value, k, mode=mode),
                       "MMR": lambda value: TopKMMR(value, k, encoder=encoder)}
            depths = [reads_depth(relevance), reads_depth(bias)]
            depth = None if None in depths else max(k, *depths)
            return tradeoff_curve(top_ranked(base_run, depth), qrels, methods, lambdas, relevance=relevance,
                                  bias=bias, seed=seed, resamples=resamples)

        curve = memo(f"trade-off {name}", [run_keys[base_names[name]], qrels_key, str(relevance), str(bias), lambdas, k,
                                           mode, encoder_key, seed, resamples], compute)
        curves.append(curve.assign(system=name, base=base.spec, k=k)[["system", "base", "k", *curve.columns]])
        for drop in EQUAL_COST_DROPS:
            costs.append(equal_cost(curve, "DuoGreedy", "MMR", drop).assign(system=name, relevance_drop=drop))
    cost = pd.concat(costs, ignore_index=True)
    return Tradeoff(curve=pd.concat(curves, ignore_index=True),
                    equal_cost=cost[["system", "relevance_drop", "method", "Lambda", "relevance", "bias"]],
                    relevance=str(relevance), bias=bias_name, lambdas=tuple(lambdas),
                    bases=tuple(TradeoffBase(name, base.spec, base_names[name]) for name, (base, _) in bases.items()))


def top_ranked(run: "pd.DataFrame", depth) -> "pd.DataFrame":
    """The rows of a PyTerrier run among each query's first ``depth`` by ``rank`` (in the order both re-rankers sort
    by: query, then rank, stable), in the run's order; the run itself for ``depth`` None, without a ``qid`` or
    ``rank`` column, or when nothing is cut. DuoGreedy and TopKMMR reorder each query's first k and keep the rest
    below in order, so with ``depth`` at least k and at least as deep as the measures read, the curve is the same
    from these rows: the rows below are never read (at 100 results and k = 10, nine tenths of each re-ranking)."""
    import numpy as np

    if depth is None or not {"qid", "rank"} <= set(run.columns) or len(run) <= depth:
        return run
    ordered = run.assign(_row=np.arange(len(run))).sort_values(["qid", "rank"], kind="stable")
    rows = ordered["_row"].to_numpy()[ordered.groupby("qid", sort=False).cumcount().to_numpy() < depth]
    keep = np.zeros(len(run), dtype=bool)
    keep[rows] = True
    return run if keep.all() else run[keep]
