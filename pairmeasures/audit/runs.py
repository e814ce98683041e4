"""Building and caching an audit's runs: each system's run (from the run cache or run now)
and the side columns the bias measures read (``text``, gold ``group``, ``polarity``)."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Optional, Sequence

if TYPE_CHECKING:
    import pandas as pd

    from ..analysis.manifest import Manifest
    from ..datasets.profile import PolarityChoice, Profile
    from ..pipelines.specs import System, SystemContext

__all__ = ["RUNS_FORMAT", "annotate", "run_systems", "run_steps", "cache_folder", "say_unranked_queries", "polarity_depth",
           "PolarityDepth"]

#: Version of the cached run files; a change makes earlier ones unused.
RUNS_FORMAT = 1


def cache_folder() -> Path:
    """The folder of the audit's caches (``runs/``, ``evaluations/``): beside the embedding cache."""
    from ..compute.cache import default_cache_path

    return default_cache_path().parent


def annotate(run: "pd.DataFrame", profile: "Profile", scorer=None, system: str = "") -> "pd.DataFrame":
    """The run with the side columns the bias measures read: ``text``, ``query``, ``group`` (gold label of the pair;
    None where unlabelled) and, with a ``scorer``, ``polarity`` (NaN for a query whose axis cannot be fitted, and
    below the scorer's ``depth``). ``system``: its name, for the error about documents the dataset lacks."""
    import numpy as np
    import pandas as pd

    from ..compute.embed import embedding_purpose

    missing = profile.corpus.missing(run["docno"])
    if missing:
        raise ValueError(f"{f'system {system!r}: ' if system else ''}the run names {len(missing)} documents that are not "
                         f"in {profile.name}, e.g. {missing[0]!r}; systems must rank this dataset's documents")
    # The side columns a system brought are not trusted: a stage may have written another text field, its own
    # polarity (another model, another depth) or no gold group. Every system is measured on the same side
    # information, the dataset's text and labels and the audit's one polarity model, so they are made here again.
    run = run.drop(columns=[c for c in ("text", "group", "polarity", "query") if c in run.columns])
    queries = run["qid"].map(profile.queries)  # a hash join, not a Python loop over the rows
    run = run.assign(text=profile.texts(run["docno"]), query=queries.where(queries.notna(), "").astype(object))
    if profile.labels is not None:
        labels = profile.labels
        pairs = pd.MultiIndex.from_arrays([labels["query_id"], labels["doc_id"]])
        last = ~pairs.duplicated(keep="last")  # the last label of a pair counts, as a dict built from the rows would
        found = pairs[last].get_indexer(pd.MultiIndex.from_arrays([run["qid"], run["docno"]]))
        groups = np.append(labels["group"].to_numpy(dtype=object)[last], np.array([None], dtype=object))  # -1: none
        run = run.assign(group=groups[found])
    if scorer is not None:
        with warnings.catch_warnings(), embedding_purpose("polarity"):
            warnings.simplefilter("ignore", RuntimeWarning)
            run = scorer(run)
    return run


class PolarityDepth(NamedTuple):
    """How deep each run's rows get a polarity (``None``: every row; ``0``: none) and why."""

    depth: Optional[int]
    why: str


def _read_depth(measure) -> Optional[int]:
    """How deep ``measure`` reads its side columns: its cut-off when it reads only the documents above it
    (:meth:`~pairmeasures.PairMeasure.prepare` as the base class does it), else ``None`` (every row)."""
    from ..measures import PairMeasure

    kind = type(measure)
    if kind.evaluate is not PairMeasure.evaluate or kind.prepare is not PairMeasure.prepare:
        return None
    cutoff = measure.param("cutoff") if "cutoff" in measure.SUPPORTED_PARAMS else None
    return None if cutoff is None else int(cutoff)


def polarity_depth(measures, curves: Optional[int] = None, tradeoff: Sequence[tuple] = ()) -> PolarityDepth:
    """How deep an audit's runs need a ``polarity`` column, and why: the deepest cut-off of the ``measures`` that
    read the run's ``polarity`` (``None`` when one reads every row, e.g. ``Duo`` without a cut-off), ``curves``
    (the cut-off curves' deepest k, drawn for those measures' families) and ``tradeoff``: ``(k, bias measure)`` of
    each DuoGreedy-vs-MMR trade-off, whose DuoGreedy re-ranks the base run's top k by its ``polarity`` column and
    whose bias measure reads the re-ranked top (within the base's top ``max(k, cut-off)``). ``0`` when nothing
    reads it."""
    from ..measures import PairMeasure

    readers = [m for m in measures if isinstance(m, PairMeasure) and "polarity" in m.run_columns()]
    reasons, depths = [], []
    for measure in readers:
        depth = _read_depth(measure)
        depths.append(depth)
        reasons.append(f"{measure} reads {'every row' if depth is None else f'the top {depth}'}")
    if readers and curves is not None:
        depths.append(int(curves))
        reasons.append(f"the cut-off curves read the top {curves}")
    for k, bias in tradeoff:
        read = _read_depth(bias)
        depth = None if read is None else max(int(k), read)
        depths.append(depth)
        reasons.append(f"the DuoGreedy-vs-MMR trade-off (k={k}, {bias}) reads "
                       f"{'every row' if depth is None else f'the top {depth}'}")
    if not depths:
        return PolarityDepth(0, "no measure reads polarity: none is computed for the runs")
    deepest = None if any(d is None for d in depths) else max(d for d in depths if d is not None)
    return PolarityDepth(deepest, "; ".join(reasons))


def run_systems(systems: dict, profile: "Profile", context: "SystemContext", polarity: Optional[PolarityChoice],
                manifest: "Manifest", depth: Optional[PolarityDepth] = None) -> tuple[dict, dict]:
    """Each system's annotated run (``systems``: name -> System), from the run cache or built and run now (with a
    progress bar), and each run's cache key (None for user code). ``polarity``: the audit's polarity model when a
    measure or a stage reads polarity; ``depth`` (:func:`polarity_depth`; default: every row): how deep each run then
    gets its ``polarity`` column (NaN below, where no measure reads it), recorded in the manifest's ``embedded``."""
    import pandas as pd

    from .. import __version__
    from ..compute.embed import folder_fingerprint
    from ..io.memo import DiskMemo
    from ..io.progress import progress_bar
    from ..pipelines.polarity import PolarityScorer

    depth = depth if depth is not None else PolarityDepth(None, "every row (no depth given)")
    scorer = None
    if polarity is not None and depth.depth != 0:
        scorer = PolarityScorer(polarity.model, errors="skip", depth=depth.depth)
    scored_depth = "none" if scorer is None else scorer.effective_depth
    model = context.model
    model_key = None if model is None else (folder_fingerprint(Path(model).expanduser())
                                            if Path(model).expanduser().is_dir() else model)
    memo = DiskMemo(cache_folder() / "runs", [RUNS_FORMAT, __version__])
    topics = pd.DataFrame({"qid": list(profile.queries), "query": list(profile.queries.values())})
    keys, paths = {}, {}
    for name, system in systems.items():
        identity = system.identity()
        keys[name] = None if identity is None else hashlib.sha256(json.dumps(
            [identity, profile.run_key(), context.num_results, context.k, model_key,
             polarity.model.embedder.key if polarity else None, polarity.key() if polarity else None,
             scored_depth]).encode()
        ).hexdigest()
        paths[name] = None if keys[name] is None else memo.path("run", keys[name])
    cached: dict = {}
    for name, path in paths.items():
        if path is not None:
            found, run = memo.load(path)
            if found:
                cached[name] = run
    # every system is built (so checked) before any runs; a warm audit whose runs are all cached builds none
    pipelines = {} if len(cached) == len(systems) else {name: system.steps(context) for name, system in systems.items()}
    ranked: dict = {}  # what the steps of each prefix gave (bm25 for every bm25>>..., bm25>>dense for its re-rankers)
    runs = {}
    for name in progress_bar(list(systems), desc="systems", unit="system", leave=False):
        key, path = keys[name], paths[name]
        if name in cached:
            runs[name] = cached[name].assign(text=lambda f: profile.texts(f["docno"]))
            manifest.cached(name, True, key or "")
            continue
        with manifest.step(f"run {name}"):
            run = run_steps(systems[name], pipelines[name], topics, ranked if keys[name] is not None else None)
            # only the ranking is kept: the side columns are the audit's, the same for every system (annotate)
            keep = [c for c in ("qid", "docno", "score", "rank") if c in run.columns]
            run = annotate(run[keep], profile, scorer, system=name)
        manifest.cached(name, False, key or "not cached: user code (module:attr)")
        rerankers = [stage.name for stage in systems[name].stages[1:] if stage.type.needs & {"vectors", "polarity"}
                     or stage.name == "dense"]
        if rerankers:
            manifest.embedding_reason(f"run {name}", f"re-ranking by {', '.join(rerankers)}: each stage embeds the rows "
                                      "it reads (dense: every row it re-ranks; duogreedy, mmr: each query's top k)")
        if path is not None:
            memo.store(path, run.drop(columns=["text"]))
        runs[name] = run
    if scorer is not None:
        effective = scorer.effective_depth
        why = depth.why if effective is not None or depth.depth is None else \
            "every row: the axes are fitted on each run's candidates, so all of them are embedded"
        manifest.embedding_reason("polarity", f"polarity of the rows the measures read: {why}",
                                  depth=effective, rows=scorer.rows, rows_scored=scorer.scored)
    elif polarity is not None:
        manifest.embedding_reason("polarity", depth.why, depth=0, rows=0, rows_scored=0)
    return runs, keys


def run_steps(system: "System", steps: list, topics: "pd.DataFrame", ranked: Optional[dict] = None) -> "pd.DataFrame":
    """``system``'s run: its :meth:`~pairmeasures.pipelines.specs.System.steps` in turn on ``topics``. ``ranked``
    (prefix -> frame, for systems whose runs are reproducible: their cache key is known) holds what the steps of
    every prefix run so far gave; the longest prefix found there is not run again (the audit's ``bm25>>dense``,
    ``bm25>>dense>>duogreedy(0.5)`` and ``bm25>>dense>>mmr(0.5)`` retrieve with bm25 once and re-rank with dense
    once), and what this system's steps give is added."""
    start, frame = 0, topics
    if ranked is not None:  # (frames kept and handed on as copies: a stage that changes its input in place changes
        # its copy only, pandas copying on write)
        start = next((done for done in range(len(steps), 0, -1) if system.prefix(done) in ranked), 0)
        frame = ranked[system.prefix(start)].copy(deep=False) if start else topics
    for done in range(start + 1, len(steps) + 1):
        frame = steps[done - 1].transform(frame)
        if ranked is not None:
            ranked[system.prefix(done)] = frame.copy(deep=False)
    return frame


def say_unranked_queries(runs: dict, profile: "Profile") -> None:
    """An :class:`~pairmeasures.sideinfo.InputWarning` per system (``runs``: name -> run) without results for some
    audited queries, with the count: they count as empty rankings, which a relevance measure scores 0 and a bias
    measure leaves out (counted as excluded)."""
    from ..io.runfiles import examples
    from ..sideinfo import InputWarning

    for name, run in runs.items():
        lacking = set(profile.queries) - set(run["qid"].unique())  # the distinct ids, not every row of the run
        if lacking:
            warnings.warn(f"system {name!r} has no results for {len(lacking)} of the {len(profile.queries)} queries "
                          f"audited (e.g. {examples(lacking)}); they count as empty rankings: 0 for relevance measures, "
                          "excluded from bias measures", InputWarning, stacklevel=2)
