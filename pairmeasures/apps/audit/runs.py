"""Building and caching an audit's runs: each system's run (from the run cache or run now)
and the side columns the bias measures read (``text``, gold ``group``, ``polarity``)."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import pandas as pd

    from ...analysis.manifest import Manifest
    from ...datasets.profile import PolarityChoice, Profile
    from ...pipelines.specs import SystemContext

__all__ = ["RUNS_FORMAT", "annotate", "run_systems", "cache_folder", "say_unranked_queries"]

#: Version of the cached run files; a change makes earlier ones unused.
RUNS_FORMAT = 1


def cache_folder() -> Path:
    """The folder of the audit's caches (``runs/``, ``evaluations/``): beside the embedding cache."""
    from ...sideinfo.cache import default_cache_path

    return default_cache_path().parent


def annotate(run: "pd.DataFrame", profile: "Profile", scorer=None, system: str = "") -> "pd.DataFrame":
    """The run with the side columns the bias measures read: ``text``, ``query``, ``group`` (gold label of the pair;
    None where unlabelled) and, with a ``scorer``, ``polarity`` (NaN for a query whose axis cannot be fitted).
    ``system``: its name, for the error about documents the dataset lacks."""
    missing = profile.corpus.missing(run["docno"])
    if missing:
        raise ValueError(f"{f'system {system!r}: ' if system else ''}the run names {len(missing)} documents that are not "
                         f"in {profile.name}, e.g. {missing[0]!r}; systems must rank this dataset's documents")
    run = run.drop(columns=[c for c in ("text", "group", "polarity", "query") if c in run.columns])
    run = run.assign(text=profile.texts(run["docno"]), query=[profile.queries.get(q, "") for q in run["qid"]])
    if profile.labels is not None:
        gold = dict(zip(zip(profile.labels["query_id"], profile.labels["doc_id"]), profile.labels["group"]))
        run = run.assign(group=[gold.get(pair) for pair in zip(run["qid"], run["docno"])])
    if scorer is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            run = scorer(run)
    return run


def run_systems(systems: dict, profile: "Profile", context: "SystemContext", polarity: Optional[PolarityChoice],
                manifest: "Manifest") -> tuple[dict, dict]:
    """Each system's annotated run (``systems``: name -> System), from the run cache or built and run now (with a
    progress bar), and each run's cache key (None for user code). ``polarity``: the audit's polarity model when a
    measure or a stage reads polarity (every run then gets its ``polarity`` column)."""
    import pandas as pd

    from ... import __version__
    from ...pipelines.polarity import PolarityScorer
    from ...sideinfo.embed import folder_fingerprint
    from ...sideinfo.memo import DiskMemo
    from ...sideinfo.progress import progress_bar

    scorer = PolarityScorer(polarity.model, errors="skip") if polarity is not None else None
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
             polarity.model.embedder.key if polarity else None, polarity.key() if polarity else None]).encode()
        ).hexdigest()
        paths[name] = None if keys[name] is None else memo.path("run", keys[name])
    cached: dict = {}
    for name, path in paths.items():
        if path is not None:
            found, run = memo.load(path)
            if found:
                cached[name] = run
    # every system is built (so checked) before any runs; a warm audit whose runs are all cached builds none
    pipelines = {} if len(cached) == len(systems) else {name: system.build(context) for name, system in systems.items()}
    runs = {}
    for name in progress_bar(list(systems), desc="systems", unit="system", leave=False):
        key, path = keys[name], paths[name]
        if name in cached:
            runs[name] = cached[name].assign(text=lambda f: profile.texts(f["docno"]))
            manifest.cached(name, True, key or "")
            continue
        with manifest.step(f"run {name}"):
            run = pipelines[name].transform(topics)
            keep = [c for c in ("qid", "docno", "score", "rank") if c in run.columns]
            run = annotate(run[keep], profile, scorer, system=name)
        manifest.cached(name, False, key or "not cached: user code (module:attr)")
        if path is not None:
            memo.store(path, run.drop(columns=["text"]))
        runs[name] = run
    return runs, keys


def say_unranked_queries(runs: dict, profile: "Profile") -> None:
    """An :class:`~pairmeasures.sideinfo.InputWarning` per system (``runs``: name -> run) without results for some
    audited queries, with the count: they count as empty rankings, which a relevance measure scores 0 and a bias
    measure leaves out (counted as excluded)."""
    from ...sideinfo import InputWarning
    from ...sideinfo.runfiles import examples

    for name, run in runs.items():
        lacking = set(profile.queries) - set(run["qid"])
        if lacking:
            warnings.warn(f"system {name!r} has no results for {len(lacking)} of the {len(profile.queries)} queries "
                          f"audited (e.g. {examples(lacking)}); they count as empty rankings: 0 for relevance measures, "
                          "excluded from bias measures", InputWarning, stacklevel=2)
