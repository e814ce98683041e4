"""A run evaluated on one task of a suite, as ``benchmark run``, ``benchmark submit`` and ``leaderboard verify``
all do it (docs/leaderboard.md, "Run my system"): the run cut to the task's depth and written as TREC text (what a
record stores beside it), that text read back (:func:`run_frame`), the side columns the task's measures read added
from the dataset (``text``, the gold ``group``, ``polarity`` from the polarity model fitted on the labelled
documents, as the audit fits it), and every measure evaluated through ``ir_measures`` with pairmeasures' measures
(the provider ``ir_measures`` chooses, as ``pairmeasures eval`` does: a record's values are ``eval``'s on the same
run file with the same side columns).

:func:`request` is what identifies a record's result before anything runs (the suite, the task, the system, its
spec, the measures, the depth, the data's pins): a finished record with the same request and an intact run is not
made again.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from ..io.frames import ir_names

if TYPE_CHECKING:
    import pandas as pd

    from ..datasets.profile import Profile
    from .suites import Suite, Task, TaskPins

__all__ = ["Evaluated", "TaskData", "cut_to_depth", "data_advice", "evaluate_run", "make_record", "open_task",
           "request", "run_frame"]


#: The modules whose versions a record stores (those imported when it is made).
VERSIONED = ("ir_measures", "pytrec_eval", "numpy", "pandas", "scipy", "pyterrier", "pyterrier_pisa", "pyterrier_dr",
             "sentence_transformers", "torch", "transformers", "ir_datasets")


def request(suite: "Suite", task: "Task", system: str, spec: Optional[str], kind: str, pins: dict,
            identity: Optional[str] = None) -> dict:
    """What a record of ``system`` on ``task`` is made from (its ``request``): JSON-able, compared as a whole to
    decide whether a finished record still holds. ``spec``: the canonical system spec (None for a transformer given
    from Python or a submitted run file); ``identity``: the spec with the content of what its stages read
    (``System.identity()``: a ``run:`` file by its sha256, a model folder by a fingerprint; a changed file makes
    another request); ``pins``: those of the data here (:meth:`TaskPins.pins`)."""
    return {"suite": suite.name, "version": suite.version, "task": task.id, "system": system, "kind": kind,
            "spec": spec, "identity": identity, "dataset": task.dataset if not task.folder else os.fspath(task.dataset),
            "folder": task.folder, "ir_datasets": list(task.ir_datasets), "text": task.text, "measures": list(task.measures), "depth": task.depth,
            "pins": pins}


def data_advice(task: "Task", here: "TaskPins") -> str:
    """What a task whose data is not here lacks, and how to get it (one line)."""
    if here.problem:
        return here.problem
    parts = []
    if here.missing:
        folders = sorted({name.split("/")[0] for name in here.missing})
        where = (f"the folder {task.dataset}" if task.folder else
                 f"{', '.join(f + ('/' if '.' not in f else '') for f in folders)} of a mirror laid out like "
                 "shared/data, named by $PAIRMEASURES_DATA or --data DIR (docs/datasets.md)")
        parts.append(f"missing {', '.join(here.missing)}: put them into {where}")
    if here.ir_datasets_missing:
        from ..datasets import ir_datasets_home

        parts.append(f"ir_datasets lacks {', '.join(here.ir_datasets_missing)} under {ir_datasets_home()}: fetch "
                     "them where there is network access ('pairmeasures datasets export ID docs' downloads them; "
                     "ir_datasets checks their md5) or copy its msmarco-passage/ folder from a machine that has "
                     "them, then run again (docs/msmarco.md)")
    return "; ".join(parts)


@dataclass
class TaskData:
    """A task opened here: its ``profile`` (queries, qrels, labels, documents), its ``measures`` (parsed, in the
    task's order) and, once a measure reads ``polarity``, the polarity model (made on first use)."""

    task: "Task"
    profile: "Profile"
    measures: list
    _polarity: Any = None

    @property
    def query_ids(self) -> list:
        """The task's queries, in the dataset's order: the ``query_ids`` of every record of the task."""
        return list(self.profile.queries)

    def polarity_model(self):
        """The task's polarity model, made on first use: the axes fitted on the labelled documents when two
        perspectives are labelled, else on each run's candidates (as the audit's default). The measures score with
        it, and re-rankers that read polarity (``duogreedy``, ``least``) rank with it, as in the audit."""
        from ..compute.embed import Embedder
        from ..datasets.profile import polarity_model

        if self._polarity is None:
            self._polarity = polarity_model(self.profile, embedder=Embedder()).model
        return self._polarity

    def polarity_scorer(self, depth: Optional[int]):
        """The scorer of the ``polarity`` column with :meth:`polarity_model`, to each query's top ``depth``."""
        from ..pipelines.polarity import PolarityScorer

        return PolarityScorer(self.polarity_model(), errors="skip", depth=depth)


def open_task(task: "Task", data: Optional[str | os.PathLike] = None) -> TaskData:
    """The task's dataset read here (``data``: a mirror folder, default ``$PAIRMEASURES_DATA``), its measures
    parsed and their resources checked."""
    import ir_measures

    from ..datasets.profile import load_profile
    from ..measures import PairMeasure

    measures = [ir_measures.parse_measure(text) for text in task.measures]
    for measure in measures:
        if isinstance(measure, PairMeasure):
            measure.check_resources()
    profile = load_profile(task.dataset, data, text=task.text)
    return TaskData(task, profile, measures)


def cut_to_depth(run: "pd.DataFrame", depth: int) -> "pd.DataFrame":
    """``qid, docno, rank, score`` of the top ``depth`` of each query of a PyTerrier run (by ``rank`` where it has
    one, else by score, highest first, ties by document id), ranks renumbered 1..n."""
    import pandas as pd

    missing = [c for c in ("qid", "docno", "score") if c not in run.columns]
    if missing:
        raise ValueError(f"the run lacks the columns {', '.join(missing)}: a system must return qid, docno and score")
    frame = pd.DataFrame({"qid": run["qid"].astype(str), "docno": run["docno"].astype(str),
                          "score": run["score"].astype(np.float64)})
    keys = ["qid", "rank", "docno"] if "rank" in run.columns else ["qid", "score", "docno"]
    if "rank" in run.columns:
        frame["rank"] = run["rank"].to_numpy()
    order = frame.sort_values(keys, ascending=[True, "rank" in run.columns, True], kind="mergesort")
    order = order[order.groupby("qid", sort=False).cumcount() < depth]
    order = order.assign(rank=order.groupby("qid", sort=False).cumcount() + 1)
    return order[["qid", "docno", "rank", "score"]].reset_index(drop=True)


def run_frame(text: str) -> "pd.DataFrame":
    """``qid, docno, rank, score`` of a run's TREC text (as a record stores it: ``qid Q0 docno rank score tag``)."""
    import pandas as pd

    rows = [line.split() for line in text.splitlines() if line.strip()]
    return pd.DataFrame({"qid": [r[0] for r in rows], "docno": [r[2] for r in rows],
                         "rank": np.array([int(r[3]) for r in rows], dtype=np.int64),
                         "score": np.array([float(r[4]) for r in rows], dtype=np.float64)})


@dataclass(frozen=True)
class Evaluated:
    """A run's values on a task: ``measures`` (mean, None where no query was measured), ``n`` and ``per_query``
    (``{"query_ids", "values"}``, None where a query was not measured), keyed by the task's measure strings."""

    measures: dict
    n: dict
    per_query: dict


def _side_columns(data: TaskData, frame: "pd.DataFrame") -> "pd.DataFrame":
    """``frame`` with the side columns the task's measures read from the run."""
    from ..measures import PairMeasure

    columns: set = set()
    polarity_depths: list = []
    for measure in data.measures:
        if isinstance(measure, PairMeasure):
            reads = set(measure.run_columns()) | set(measure.optional_run_columns())
            columns |= reads
            if "polarity" in reads:
                polarity_depths.append(measure.depth())
    profile = data.profile
    if columns & {"text", "polarity"}:
        frame = frame.assign(text=profile.texts(frame["docno"]))
    if "group" in columns and profile.labels is not None:
        import pandas as pd

        labels = profile.labels.drop_duplicates(["query_id", "doc_id"], keep="last")
        index = pd.MultiIndex.from_arrays([labels["query_id"], labels["doc_id"]])
        found = index.get_indexer(pd.MultiIndex.from_arrays([frame["qid"], frame["docno"]]))
        groups = np.append(labels["group"].to_numpy(dtype=object), np.array([None], dtype=object))
        frame = frame.assign(group=groups[found])
    if "polarity" in columns:
        import warnings

        from ..compute.embed import embedding_purpose

        depth = None if any(d is None for d in polarity_depths) else max(polarity_depths)
        queries = frame["qid"].map(profile.queries)
        frame = frame.assign(query=queries.where(queries.notna(), "").astype(object))
        with warnings.catch_warnings(), embedding_purpose("polarity"):
            warnings.simplefilter("ignore", RuntimeWarning)
            frame = data.polarity_scorer(depth)(frame)
    return frame


def evaluate_run(data: TaskData, frame: "pd.DataFrame") -> Evaluated:
    """The task's measures on ``frame`` (:func:`run_frame`'s columns, cut to the depth), through ``ir_measures``."""
    import ir_measures

    missing = data.profile.corpus.missing(frame["docno"])
    if missing:
        raise ValueError(f"the run names {len(missing)} documents that are not in {data.task.dataset}, e.g. "
                         f"{missing[0]!r}: a system must rank the task's documents")
    annotated = ir_names(_side_columns(data, frame))
    annotated = annotated.drop(columns=[c for c in ("query",) if c in annotated.columns])
    qrels = data.profile.qrels
    ids = data.query_ids
    position = {q: i for i, q in enumerate(ids)}
    values: dict[str, list[Optional[float]]] = {str(m): [None] * len(ids) for m in data.measures}
    for metric in ir_measures.iter_calc(data.measures, qrels, annotated):
        at = position.get(str(metric.query_id))
        value = float(metric.value)
        if at is not None and np.isfinite(value):
            values[str(metric.measure)][at] = value
    names = dict(zip(map(str, data.measures), data.task.measures))
    values = {names[m]: column for m, column in values.items()}
    means, n = {}, {}
    for measure, column in values.items():
        measured = [float(v) for v in column if v is not None]
        n[measure] = len(measured)
        means[measure] = float(np.mean(measured)) if measured else None
    return Evaluated(means, n, {"query_ids": ids, "values": values})


def make_record(suite: "Suite", task: "Task", system: str, spec: Optional[str], kind: str, pins: dict,
                evaluated: Evaluated, asked: dict) -> dict:
    """A record (docs/leaderboard.md, "Records") of ``evaluated``; ``asked``: its :func:`request`."""
    import sys

    from ..analysis.manifest import versions

    return {"system": system, "task": task.id, "suite": suite.ref, "kind": kind, "spec": spec,
            "measures": evaluated.measures, "n": evaluated.n, "per_query": evaluated.per_query, "request": asked,
            "pins": pins, "versions": versions([m for m in VERSIONED if m in sys.modules]), "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
