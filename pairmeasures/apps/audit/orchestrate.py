"""``audit()``: the steps of an audit in order, and nothing else. Each step is a call into its room: the plan
(:mod:`.plan`), the dataset profile (:mod:`pairmeasures.datasets.profile`), the runs (:mod:`.runs`), evaluation
and significance (:mod:`.evaluation`), the trade-off (:mod:`.tradeoff`) and the outputs (:mod:`.outputs`).
Evaluation outputs and PNGs are kept on disk by the content they derive from (:class:`~pairmeasures.sideinfo.memo.
DiskMemo`), so a warm re-run loads no model, index or plotting library."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from .tradeoff import DEFAULT_LAMBDAS, EQUAL_COST_DROPS

__all__ = ["audit", "EVALUATIONS_FORMAT"]

#: Version of the cached evaluation outputs and PNGs; a change makes earlier ones unused.
EVALUATIONS_FORMAT = 3


class _Memo:
    """The audit's evaluation cache (``evaluations/`` beside the runs), recording hits and misses in the manifest."""

    def __init__(self, manifest):
        from ... import __version__
        from ...sideinfo.memo import DiskMemo
        from .runs import cache_folder

        self.disk = DiskMemo(cache_folder() / "evaluations", [EVALUATIONS_FORMAT, __version__])
        self.manifest = manifest

    def __call__(self, kind: str, parts: Any, compute: Callable[[], Any]) -> Any:
        value, how = self.disk.get(kind, parts, compute)
        self.manifest.cache.setdefault("evaluations", {})[kind] = \
            "not cached: user code (module:attr)" if how == "not cached" else how
        return value

    def bound(self, *prefix: Any) -> Callable[[str, Any, Callable[[], Any]], Any]:
        """This memo with ``prefix`` put before every value's parts (what all of a step's values derive from)."""
        return lambda kind, parts, compute: self(kind, [*prefix, *parts], compute)


def audit(dataset: str | os.PathLike, systems: Sequence[str], out: str | os.PathLike, *,
          measures: Optional[Sequence[str]] = None, baseline: Optional[str] = None, by: Optional[str] = None,
          correction: str = "holm", resamples: int = 10_000, seed: int = 0, min_cell: int = 10,
          data: Optional[str | os.PathLike] = None, text: Optional[str] = None, num_results: int = 100, k: int = 10,
          model: Optional[str] = None, positive: Optional[str] = None, force: bool = False,
          names: Optional[Sequence[str]] = None, plots: bool = True, tradeoff: bool = True,
          lambdas: Sequence[float] = DEFAULT_LAMBDAS, queries: Optional[str | os.PathLike] = None,
          command: Optional[list] = None, engine: str = "local", address: Optional[str] = None,
          workers: Optional[int] = None, absolute_paths: bool = False) -> dict:
    """Run ``systems`` (specs; ``names`` default to the specs) over ``dataset`` and write the audit into ``out``.

    With ``tradeoff``, each system with a ``duogreedy(...)`` stage also gets the DuoGreedy-vs-MMR trade-off over
    ``lambdas``, re-ranking the run of the spec before that stage. ``queries`` (a file of query ids, one a line,
    ``#`` comments: e.g. the held-out split of a training run) audits those queries only. ``engine``: where the
    model work runs, ``"local"`` or ``"ray"`` (``address``: a cluster to join, default a private local Ray;
    ``workers``: its model actors; :mod:`.engine`). The manifest, leaderboard.json and report write paths relative
    to ``out`` (:class:`~pairmeasures.analysis.manifest.PathRecord`), or absolute with ``absolute_paths``. Returns ``{"leaderboard":
    frame, "summary": frame, "tradeoff": frame or None, "out": path, "manifest": dict}``. Every input is checked
    before the long work; the folder appears only when everything was written.
    """
    started = time.perf_counter()
    from ...analysis.manifest import Manifest, PathRecord
    from ...datasets.profile import load_profile, only_queries, polarity_model
    from ...datasets.published_runs import expand_published
    from ...pipelines.specs import SystemContext
    from ...sideinfo.embed import Embedder
    from ...sideinfo.memo import CACHE_ENV, value_key, writable_folder
    from . import axes, evaluation, outputs
    from .engine import compute_on, manifest_entry
    from .plan import check_run_files, choose_measures, plan_systems
    from .runs import cache_folder, polarity_depth, run_systems, say_unranked_queries
    from .tradeoff import hidden_bases
    from .tradeoff import tradeoff as tradeoff_of

    out = Path(out).expanduser()
    manifest = Manifest(command=list(command) if command is not None else Manifest().command,
                        paths=PathRecord(out, absolute_paths))
    with compute_on(engine, address, workers) as pool, \
            outputs.claim_out(out, force) as claim:  # --out locked and checked, before any work, until it is written
        writable_folder(cache_folder(), CACHE_ENV)  # the runs and evaluations are kept there: stop now if they cannot be
        systems, names = expand_published(systems, names, dataset, data)  # the NFaiRR paper's runs, as run: systems
        plan = plan_systems(systems, names, baseline, resamples, tradeoff, lambdas)
        with manifest.step("dataset"):
            profile = load_profile(dataset, data, text)
            dataset_queries = list(profile.queries)
            if queries is not None:
                profile = only_queries(profile, queries)
        check_run_files(plan, profile, dataset_queries)
        if by is not None and by not in profile.fields:
            raise ValueError(f"--by {by!r}: {profile.name} has no query field {by!r}; fields: "
                             f"{', '.join(sorted(profile.fields)) or 'none'}")
        chosen = choose_measures(profile, measures)
        reads_polarity = "polarity" in chosen.needs or plan.reads_polarity
        embedder = Embedder(model) if reads_polarity else None
        polarity = polarity_model(profile, positive, embedder) if reads_polarity else None
        context = SystemContext(source=profile.corpus, data=data, text=profile.text,
                                polarity_model=None if polarity is None else polarity.model, model=model,
                                num_results=num_results, k=k, ray_pool=pool)

        hidden, base_names = hidden_bases(plan.systems, plan.bases)
        # the trade-off's bias measure: the Duo measure shown (by its leaderboard name), else Duo@10
        trade_name = next((s for s in chosen.shown if s.split("(")[0].split("@")[0] == "Duo"), None)
        trade_bias = chosen.shown.get(trade_name) if trade_name is not None else None
        if plan.bases and trade_bias is None:
            from ..evaluate import parse_measures

            trade_name, trade_bias = "Duo@10", parse_measures(["Duo@10"])[0]
        depth = polarity_depth(chosen.shown.values(), 50 if plots and chosen.bias_families() else None,
                               [(int(dict(stage.options).get("k", k)), trade_bias) for _, stage in plan.bases.values()])
        everything, run_keys = run_systems({**plan.systems, **hidden}, profile, context, polarity, manifest, depth)
        runs = {name: everything[name] for name in plan.systems}
        say_unranked_queries(runs, profile)
        ties = evaluation.ties_in_top(runs, chosen.deepest_cutoff())
        keys = {name: run_keys[name] for name in plan.systems}
        qrels_key = value_key(profile.qrels)
        memo = _Memo(manifest)

        with manifest.step("evaluate"):
            def evaluate() -> tuple:
                table = evaluation.per_query(runs, profile.qrels, chosen.shown)
                return table, evaluation.significance(table, plan.baseline, correction)

            per_query, tests = memo("evaluate", [keys, qrels_key, chosen.evaluated, plan.baseline, correction], evaluate)
        cells, small = None, ()
        with manifest.step("statistics"):
            summary = evaluation.statistics(per_query, tests, chosen.directions, plan.baseline, resamples, seed,
                                            list(profile.queries), memo.bound(keys, qrels_key, chosen.evaluated,
                                                                              plan.baseline))
            if by is not None:
                cells, small = evaluation.breakdown_cells(per_query, profile.fields[by], by, min_cell,
                                                          memo.bound(keys, qrels_key, chosen.evaluated))
        leaderboard = evaluation.leaderboard_table(summary, chosen.shown, chosen.directions)
        evidence = None  # how well DUO's axes separate the labels, on held-out documents (docs/polarity.md)
        if polarity is not None:
            with manifest.step("polarity axes"):
                evidence = axes.evidence(polarity, profile, seed, resamples, memo)
            axes.add_column(leaderboard, evidence, chosen.shown)
        disparity = None
        if profile.terms:  # next to RaB: a dataset-level figure, not a per-query measure (docs/ibbr.md)
            disparity = memo("delta a-prf", [keys, qrels_key, resamples, seed],
                             lambda: evaluation.delta_a_prf(runs, profile.qrels, resamples, seed))
            leaderboard[evaluation.DELTA_A_PRF] = [disparity[s]["value"] for s in leaderboard["system"]]
            leaderboard[evaluation.DELTA_A_PRF_INTERVAL] = [evaluation.interval_text(disparity[s])
                                                            for s in leaderboard["system"]]
        families = chosen.bias_families()
        curves = None
        if plots and families:
            with manifest.step("cut-off curves"):
                curves = memo("cutoff curves", [keys, qrels_key, list(families)],
                              lambda: evaluation.cutoff_curves(runs, profile.qrels, families))
        trade = None
        if plan.bases:
            assert trade_name is not None  # set above whenever there are bases
            with manifest.step("trade-off"):
                trade = tradeoff_of(plan.bases, base_names, everything, run_keys, profile.qrels, "nDCG@10", trade_name,
                                    plan.lambdas, seed, resamples, context, memo)
                trade["bias"] = trade_name  # the leaderboard's name, not the evaluated measure string

        results = outputs.Results(leaderboard, summary, per_query, chosen.shown, chosen.directions, cells, tuple(small), by,
                                  curves, trade, disparity, ties, axes=evidence)
        statistics = {"baseline": plan.baseline, "correction": correction, "resamples": resamples, "seed": seed,
                      "by": by, "min_cell": min_cell}
        record = outputs.manifest_record(
            profile, plan.specs, plan.systems, results,
            None if polarity is None else polarity.source, embedder, statistics,
            {"num_results": num_results, "k": k, "model": model},
            None if trade is None else {
                "lambdas": plan.lambdas, "relevance": trade["relevance"], "bias": trade["bias"],
                "equal_cost_drops": list(EQUAL_COST_DROPS),
                "systems": {name: {"base": base.spec, "base_run": base_names[name]} for name, (base, _) in plan.bases.items()}},
            manifest.paths)
        record["polarity_axes"] = axes.manifest_entry(evidence)
        record["engine"] = manifest_entry(engine, address, pool)

        def finish() -> None:
            manifest.timings["total"] = round(time.perf_counter() - started, 3)

        outputs.write_outputs(claim, results, profile, plan.specs, statistics, plots, manifest, record, memo, finish)
        return {"leaderboard": leaderboard, "summary": summary, "tradeoff": None if trade is None else trade["curve"],
                "out": out, "manifest": manifest.as_dict()}
