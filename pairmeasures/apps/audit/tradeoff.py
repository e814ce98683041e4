"""The audit's DuoGreedy-vs-MMR trade-off: for each system with a ``duogreedy(...)`` stage, both methods re-rank the
run of the system before that stage at every Lambda (:mod:`pairmeasures.apps.curves`), and the bias each reaches
at a small relevance cost is compared."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from ...pipelines.specs import SystemContext

__all__ = ["DEFAULT_LAMBDAS", "EQUAL_COST_DROPS", "tradeoff", "tradeoff_document", "hidden_bases"]

#: The Lambdas of the DuoGreedy-vs-MMR trade-off curve without ``--lambdas``.
DEFAULT_LAMBDAS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
#: Relevance drops at which the trade-off compares the two methods' bias (:func:`~pairmeasures.apps.curves.equal_cost`).
EQUAL_COST_DROPS = (0.01, 0.02, 0.05)


def hidden_bases(systems: dict, bases: dict) -> tuple[dict, dict]:
    """``(systems to run besides the audited ones, name -> the run name of each trade-off base)``: a base that is
    not itself an audited system (by canonical spec) runs as ``"base SPEC"``."""
    audited = {system.canonical: name for name, system in systems.items()}
    hidden = {f"base {base.spec}": base for base, _ in bases.values() if base.canonical not in audited}
    names = {name: audited.get(base.canonical, f"base {base.spec}") for name, (base, _) in bases.items()}
    return hidden, names


def tradeoff(bases: dict, base_names: dict, runs: dict, run_keys: dict, qrels: "pd.DataFrame", relevance: str,
             bias: str, lambdas: list, seed: int, resamples: int, context: "SystemContext", memo) -> dict:
    """DuoGreedy(Lambda, k) on the base run (its ``polarity`` the audit's) against TopKMMR(Lambda, k) on the audit's
    bi-encoder, per system with a duogreedy stage: ``{"curve", "equal_cost", "relevance", "bias"}``; each curve kept
    through ``memo(kind, parts, compute)``."""
    import pandas as pd

    from ...sideinfo.embed import Embedder
    from ...sideinfo.memo import value_key
    from ..curves import equal_cost, tradeoff_curve

    encoder_key = Embedder(context.model).key
    qrels_key = value_key(qrels)
    curves, costs = [], []
    for name, (base, stage) in bases.items():
        options = dict(stage.options)
        k, mode = int(options.get("k", context.k)), str(options.get("mode", "greedy"))
        base_run = runs[base_names[name]]

        def compute(base_run=base_run, k=k, mode=mode):
            from ...pipelines.duogreedy import DuoGreedy
            from ...pipelines.mmr import TopKMMR

            encoder = context.bi_encoder().doc_encoder()
            methods = {"DuoGreedy": lambda value: DuoGreedy(value, k, mode=mode),
                       "MMR": lambda value: TopKMMR(value, k, encoder=encoder)}
            return tradeoff_curve(base_run, qrels, methods, lambdas, relevance=relevance, bias=bias, seed=seed,
                                  resamples=resamples)

        curve = memo(f"trade-off {name}", [run_keys[base_names[name]], qrels_key, relevance, bias, lambdas, k, mode,
                                           encoder_key, seed, resamples], compute)
        curves.append(curve.assign(system=name, base=base.spec, k=k)[["system", "base", "k", *curve.columns]])
        for drop in EQUAL_COST_DROPS:
            costs.append(equal_cost(curve, "DuoGreedy", "MMR", drop).assign(system=name, relevance_drop=drop))
    cost = pd.concat(costs, ignore_index=True)
    return {"curve": pd.concat(curves, ignore_index=True), "relevance": relevance, "bias": bias,
            "equal_cost": cost[["system", "relevance_drop", "method", "Lambda", "relevance", "bias"]]}


def tradeoff_document(trade: dict) -> dict:
    """The ``tradeoff`` section of leaderboard.json: per system its base, curve and equal-cost points."""
    from .outputs import json_safe

    systems = {}
    for name, curve in trade["curve"].groupby("system", sort=False):
        cost = trade["equal_cost"][trade["equal_cost"]["system"] == name]
        systems[name] = {
            "base": curve["base"].iloc[0], "k": int(curve["k"].iloc[0]),
            "curve": json_safe(curve.drop(columns=["system", "base", "k"]).to_dict(orient="records")),
            "equal_cost": {f"{drop:g}": {row["method"]: json_safe({c: float(row[c]) for c in ("Lambda", "relevance", "bias")})
                                         for row in part.to_dict(orient="records")}
                           for drop, part in cost.groupby("relevance_drop", sort=False)},
        }
    return {"relevance": trade["relevance"], "bias": trade["bias"], "methods": ["DuoGreedy", "MMR"], "systems": systems}
