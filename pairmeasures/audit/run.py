"""``run_audit(request)``: the steps of an audit in order, and nothing else. Each step is a call into its room: the
plan (:mod:`.plan`), the dataset profile (:mod:`pairmeasures.datasets.profile`), the runs (:mod:`.runs`), evaluation
and significance (:mod:`.evaluation`), the polarity axes (:mod:`.axes`) and the trade-off (:mod:`.tradeoff`).
Evaluation outputs are kept on disk by the content they derive from (:class:`~pairmeasures.io.memo.DiskMemo`,
through :class:`EvaluationCache`), so a warm re-run loads no model or index. Nothing here writes an output: the
result is an :class:`~pairmeasures.audit.result.AuditResult` (``pairmeasures audit`` writes it into ``--out``)."""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    from ..analysis.manifest import Manifest
    from .request import AuditRequest
    from .result import AuditResult

__all__ = ["run_audit", "EvaluationCache", "EVALUATIONS_FORMAT"]

#: Version of the cached evaluation outputs and PNGs; a change makes earlier ones unused.
EVALUATIONS_FORMAT = 3


class EvaluationCache:
    """The audit's evaluation cache (``evaluations/`` beside the runs), recording hits and misses in the manifest:
    ``cache(kind, parts, compute)`` is the value ``compute()`` gives, kept by ``kind`` and ``parts``."""

    def __init__(self, manifest: "Manifest"):
        from .. import __version__
        from ..io.memo import DiskMemo
        from .runs import cache_folder

        self.disk = DiskMemo(cache_folder() / "evaluations", [EVALUATIONS_FORMAT, __version__])
        self.manifest = manifest

    def __call__(self, kind: str, parts: Any, compute: Callable[[], Any]) -> Any:
        value, how = self.disk.get(kind, parts, compute)
        self.manifest.cache.setdefault("evaluations", {})[kind] = \
            "not cached: user code (module:attr)" if how == "not cached" else how
        return value

    def bound(self, *prefix: Any) -> Callable[[str, Any, Callable[[], Any]], Any]:
        """This cache with ``prefix`` put before every value's parts (what all of a step's values derive from)."""
        return lambda kind, parts, compute: self(kind, [*prefix, *parts], compute)


def run_audit(request: "AuditRequest", *, engine: str = "local", address: Optional[str] = None,
              workers: Optional[int] = None, manifest: Optional["Manifest"] = None,
              opened: Optional[Any] = None) -> "AuditResult":
    """Run ``request``'s systems over its dataset and measure them: an :class:`~pairmeasures.audit.result.AuditResult`.

    ``engine``: where the model work runs, ``"local"`` or ``"ray"`` (``address``: a cluster to join, default a private
    local Ray; ``workers``: its model actors; :mod:`.engine`); the numbers are the same either way. ``opened``: the
    engine's pool already opened by the caller (:func:`~pairmeasures.audit.engine.compute_on`, e.g. around writing
    the outputs too), used and left open; ``engine`` then names it. ``manifest``: the
    :class:`~pairmeasures.analysis.manifest.Manifest` to record steps, timings and cache hits in (default: a new
    one; the result's provenance holds it). Every input is checked before the long work: a ValueError says what to
    fix. The result's ``request`` has the measures it evaluated written out, so running it again gives the same
    per-query values."""
    started = time.perf_counter()
    from ..analysis.manifest import Manifest
    from ..compute.embed import Embedder
    from ..datasets.profile import load_profile, only_queries, polarity_model
    from ..datasets.published_runs import expand_published
    from ..io.frames import ir_frame
    from ..io.memo import CACHE_ENV, value_key, writable_folder
    from ..measures.parsing import parse_measures
    from ..pipelines.specs import SystemContext
    from . import axes, evaluation
    from .engine import compute_on, manifest_entry
    from .plan import check_run_files, choose_measures, plan_systems
    from .request import default_dataset
    from .result import AuditResult, Breakdown, Disparity, Provenance, Statistics
    from .runs import cache_folder, polarity_depth, run_systems, say_unranked_queries
    from .tradeoff import hidden_bases
    from .tradeoff import tradeoff as tradeoff_of

    manifest = Manifest() if manifest is None else manifest
    r = request
    with (compute_on(engine, address, workers) if opened is None else nullcontext(opened)) as pool:
        writable_folder(cache_folder(), CACHE_ENV)  # the runs and evaluations are kept there: stop now if they cannot be
        dataset = r.dataset if r.dataset is not None else default_dataset()
        systems, names = expand_published(r.systems, r.names, dataset, r.data)  # the NFaiRR paper's runs: run: systems
        plan = plan_systems(systems, names, r.baseline, r.resamples, r.tradeoff, r.lambdas)
        with manifest.step("dataset"):
            profile = load_profile(dataset, r.data, r.text)
            dataset_queries = list(profile.queries)
            if r.queries is not None:
                profile = only_queries(profile, r.queries)
        check_run_files(plan, profile, dataset_queries)
        if r.by is not None and r.by not in profile.fields:
            raise ValueError(f"--by {r.by!r}: {profile.name} has no query field {r.by!r}; fields: "
                             f"{', '.join(sorted(profile.fields)) or 'none'}")
        chosen = choose_measures(profile, r.measures)  # every measure string parsed here, once
        reads_polarity = "polarity" in chosen.needs or plan.reads_polarity
        embedder = Embedder(r.model) if reads_polarity else None
        polarity = polarity_model(profile, r.positive, embedder) if reads_polarity else None
        context = SystemContext(source=profile.corpus, data=r.data, text=profile.text,
                                polarity_model=None if polarity is None else polarity.model, model=r.model,
                                num_results=r.num_results, k=r.k, engine=pool)

        hidden, base_names = hidden_bases(plan.systems, plan.bases)
        # the trade-off's bias measure: the Duo measure shown (by its leaderboard name), else Duo@10
        trade_name = next((s for s in chosen.shown if s.split("(")[0].split("@")[0] == "Duo"), None)
        trade_bias = chosen.shown.get(trade_name) if trade_name is not None else None
        if plan.bases and trade_bias is None:
            trade_name, trade_bias = "Duo@10", parse_measures(["Duo@10"])[0]
        depth = polarity_depth(chosen.shown.values(), 50 if r.curves and chosen.bias_families() else None,
                               [(int(dict(stage.options).get("k", r.k)), trade_bias) for _, stage in plan.bases.values()])
        everything, run_keys = run_systems({**plan.systems, **hidden}, profile, context, polarity, manifest, depth)
        say_unranked_queries({name: everything[name] for name in plan.systems}, profile)
        # the one place where PyTerrier's runs become ir_measures frames: everything below measures these
        runs = {name: ir_frame(everything[name], f"run of system {name!r}") for name in plan.systems}
        ties = evaluation.ties_in_top(runs, chosen.deepest_cutoff())
        keys = {name: run_keys[name] for name in plan.systems}
        qrels_key = value_key(profile.qrels)
        memo = EvaluationCache(manifest)

        with manifest.step("evaluate"):
            def evaluate() -> tuple:
                table = evaluation.per_query(runs, profile.qrels, chosen.shown)
                return table, evaluation.significance(table, plan.baseline, r.correction)

            per_query, tests = memo("evaluate", [keys, qrels_key, chosen.evaluated, plan.baseline, r.correction],
                                    evaluate)
        breakdown = None
        with manifest.step("statistics"):
            summary = evaluation.statistics(per_query, tests, chosen.directions, plan.baseline, r.resamples, r.seed,
                                            list(profile.queries), memo.bound(keys, qrels_key, chosen.evaluated,
                                                                              plan.baseline))
            if r.by is not None:
                cells, small = evaluation.breakdown_cells(per_query, profile.fields[r.by], r.by, r.min_cell,
                                                          memo.bound(keys, qrels_key, chosen.evaluated))
                breakdown = Breakdown(r.by, r.min_cell, cells, tuple(small))
        leaderboard = evaluation.leaderboard_table(summary, chosen.shown, chosen.directions)
        evidence = None  # how well DUO's axes separate the labels, on held-out documents (docs/polarity.md)
        if polarity is not None:
            with manifest.step("polarity axes"):
                evidence = axes.evidence(polarity, profile, r.seed, r.resamples, memo)
            axes.add_column(leaderboard, evidence, chosen.shown)
        disparity = None
        if profile.terms:  # next to RaB: a dataset-level figure, not a per-query measure (docs/ibbr.md)
            found = memo("delta a-prf", [keys, qrels_key, r.resamples, r.seed],
                         lambda: evaluation.delta_a_prf(runs, profile.qrels, r.resamples, r.seed))
            disparity = {system: Disparity.from_record(record) for system, record in found.items()}
            leaderboard[evaluation.DELTA_A_PRF] = [disparity[s].value for s in leaderboard["system"]]
            leaderboard[evaluation.DELTA_A_PRF_INTERVAL] = [disparity[s].interval_text() for s in leaderboard["system"]]
        families = chosen.bias_families()
        curves = None
        if r.curves and families:
            with manifest.step("cut-off curves"):
                curves = memo("cutoff curves", [keys, qrels_key, [str(m) for m in families.values()]],
                              lambda: evaluation.cutoff_curves(runs, profile.qrels, families))
        trade = None
        if plan.bases:
            assert trade_name is not None  # set above whenever there are bases
            relevance = chosen.shown["nDCG@10"] if "nDCG@10" in chosen.shown else parse_measures(["nDCG@10"])[0]
            with manifest.step("trade-off"):
                trade = tradeoff_of(plan.bases, base_names, everything, run_keys, profile.qrels, relevance, trade_bias,
                                    trade_name, plan.lambdas, r.seed, r.resamples, context, memo)

        statistics = Statistics(summary, plan.baseline, r.correction, r.resamples, r.seed, r.min_cell, breakdown)
        provenance = Provenance(manifest, profile, plan.systems, None if polarity is None else polarity.source,
                                embedder, manifest_entry(engine, address, pool), started)
        return AuditResult(request=r.with_measures(list(chosen.shown)), measures=chosen, per_query=per_query,
                           leaderboard=leaderboard, statistics=statistics, ties=ties, provenance=provenance,
                           disparity=disparity, curves=curves, axes=evidence, tradeoff=trade)
