"""A whole run as ranked lists: one flat, sorted set of arrays with per-query offsets.

Built once per evaluation from the run DataFrame (factorise query ids, sort once, cut at the
deepest cutoff any measure needs) and shared by every measure, which narrows it with
:meth:`RankedLists.head` and :meth:`RankedLists.select` and hands arrays to :mod:`pairmeasures.math`.

Ties: documents of one query are ordered by score descending, then, by default, by document id
descending, as trec_eval (and therefore pytrec_eval's nDCG) does; with the tie policy ``"system"``
(a measure's ``ties='system'``), documents of equal score keep the order the system showed: the run's
``rank`` column (PyTerrier's, 0-based; a TREC file's rank field), else the run's row order.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable, Mapping, Optional

import numpy as np

from ..io.frames import PYTERRIER_NAMES
from ..io.repeats import repeat_in_blocks
from ..math import list_index, list_lengths

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RankedLists", "build_ranked_lists", "RunInputError", "user_stacklevel"]


class RunInputError(ValueError):
    """The run cannot be evaluated as given (a missing column, a NaN score, a duplicate document...)."""


@dataclass(frozen=True)
class RankedLists:
    """Ranked lists of many queries, rows in rank order, list ``q`` owning rows ``offsets[q]:offsets[q+1]``.

    Every judged query has a list, possibly empty. ``ranks`` are 0-based positions in the
    system's full ranking (before any filtering), ``relevance`` is the qrel of each row (NaN when
    unjudged, or when no measure asked for relevance), ``columns`` holds the run's side columns
    (``polarity``, ``group``, ...) for the same rows.
    """

    query_ids: np.ndarray
    offsets: np.ndarray
    doc_ids: np.ndarray
    scores: np.ndarray
    ranks: np.ndarray
    relevance: np.ndarray
    columns: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def lengths(self) -> np.ndarray:
        """Number of documents in each list."""
        return list_lengths(self.offsets)

    @property
    def row_query(self) -> np.ndarray:
        """For every row, the index of its list."""
        return list_index(self.offsets)

    def __len__(self) -> int:
        return int(self.doc_ids.shape[0])

    def row_query_ids(self) -> np.ndarray:
        """Query id of every row."""
        return self.query_ids[self.row_query]

    def describe(self, row: int) -> str:
        """Human-readable name of a row, for error messages."""
        return f"document {self.doc_ids[row]!r} of query {self.query_ids[self.row_query[row]]!r}"

    def select(self, keep: np.ndarray) -> "RankedLists":
        """The same lists restricted to the rows where ``keep`` is true (order kept)."""
        keep = np.asarray(keep, dtype=bool)
        counts = np.bincount(self.row_query[keep], minlength=self.query_ids.size)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return RankedLists(
            query_ids=self.query_ids,
            offsets=offsets,
            doc_ids=self.doc_ids[keep],
            scores=self.scores[keep],
            ranks=self.ranks[keep],
            relevance=self.relevance[keep],
            columns={name: values[keep] for name, values in self.columns.items()},
        )

    def head(self, cutoff: Optional[int]) -> "RankedLists":
        """The top ``cutoff`` documents of every system ranking (all of them for ``None``)."""
        if cutoff is None:
            return self
        return self.select(self.ranks < cutoff)

    def prefix_lengths(self, cutoffs: Iterable[int]) -> np.ndarray:
        """``(lists, J)``: how many documents of each list :meth:`head` keeps at each cut-off (a prefix of the list,
        since its rows are in rank order)."""
        return np.stack([np.bincount(self.row_query[self.ranks < k], minlength=self.query_ids.size)
                         for k in cutoffs], axis=1).astype(np.int64)

    def with_columns(self, **columns: np.ndarray) -> "RankedLists":
        """A copy with extra (or replaced) per-row columns."""
        return replace(self, columns={**self.columns, **columns})

    def column(self, name: str) -> np.ndarray:
        """The per-row values of a side column; a clear error when the run lacks it."""
        if name not in self.columns:
            raise RunInputError(f"the run has no {name!r} column")
        return self.columns[name]


def id_problem(frame: "pd.DataFrame", source: str) -> Optional[str]:
    """Why the ``query_id``/``doc_id`` columns of ``frame`` (the ``source``: run or qrels) cannot match as
    text, or ``None``: a missing id (named by row), or ids that pandas turned into floats."""
    for column in ("query_id", "doc_id"):
        problem = missing_id_problem(frame, source, column, np.flatnonzero(frame[column].isna().to_numpy()))
        if problem:
            return problem
    return float_id_problem(frame, source)


def missing_id_problem(frame: "pd.DataFrame", source: str, column: str, rows: np.ndarray) -> Optional[str]:
    """The error for ``rows`` (positions in ``frame``) whose ``column`` id is missing, or ``None``."""
    if not rows.size:
        return None
    row = int(rows[0])
    other = "doc_id" if column == "query_id" else "query_id"
    example = frame[other].iloc[row:row + 1].tolist()[0]
    return (f"the {source} has a missing {column} at row {row} ({other} {example!r}"
            + (f", and {rows.size - 1} more rows" if rows.size > 1 else "")
            + "); every row needs a query id and a document id: drop or fill those rows")


def float_id_problem(frame: "pd.DataFrame", source: str) -> Optional[str]:
    """The error for id columns that pandas turned into floats (1 -> 1.0 matches nothing), or ``None``."""
    import pandas as pd

    for column, other in (("query_id", "doc_id"), ("doc_id", "query_id")):
        if len(frame) and pd.api.types.is_float_dtype(frame[column].dtype):
            return (f"the {column} column of the {source} holds floats (e.g. {frame[column].iloc[:1].tolist()[0]!r} "
                    f"for {other} {frame[other].iloc[:1].tolist()[0]!r}): ids that look like numbers, which pandas "
                    "turns into floats when the column has a missing value, so 1 becomes 1.0 and matches nothing. "
                    "Read ids as text, e.g. pd.read_csv(..., dtype={'" + column + "': str})")
    return None


def relevance_problem(qrels: "pd.DataFrame") -> Optional[str]:
    """Why the ``relevance`` column of ``qrels`` is not integer labels, or ``None``."""
    import pandas as pd

    values = pd.to_numeric(qrels["relevance"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values)))
    if not bad.size:
        return None
    row = int(bad[0])
    query, doc, label = (qrels[c].iloc[row:row + 1].tolist()[0] for c in ("query_id", "doc_id", "relevance"))
    return (f"the qrels' relevance of document {doc!r} of query {query!r} is {label!r}" + (f" (and {bad.size - 1} more)" if bad.size > 1 else "")
            + "; relevance labels must be integers (graded judgements such as 0, 1, 2)")


#: The columns ir_measures reads, by frame, and PyTerrier's names for them.
_REQUIRED = {"run": ("query_id", "doc_id", "score"), "qrels": ("query_id", "doc_id", "relevance")}


def missing_columns_problem(found: Iterable[str], source: str) -> Optional[str]:
    """Why a ``source`` frame (``"run"`` or ``"qrels"``) with the columns ``found`` lacks a column ir_measures
    reads, or ``None``: PyTerrier's names to rename, missing ids, a run without scores, qrels without labels."""
    found = [str(c) for c in found]
    required = _REQUIRED[source]
    missing = [c for c in required if c not in found]
    if not missing:
        return None
    has = "have" if source == "qrels" else "has"
    renames = {PYTERRIER_NAMES[c]: c for c in missing if PYTERRIER_NAMES.get(c) in found}
    if renames:
        return (f"the {source} {has} PyTerrier's column names (found {found}): rename "
                + ", ".join(f"{theirs} -> {ours}" for theirs, ours in renames.items())
                + f", e.g. {source}.rename(columns={renames!r}); pt.Experiment does this for you")
    names = ", ".join(repr(c) for c in missing)
    if "query_id" in missing or "doc_id" in missing:
        frame = "a run" if source == "run" else "qrels"
        return f"the {source} {has} no {names} column (found {found}); ir_measures reads {frame} with the columns " + ", ".join(required)
    if source == "run":
        return (f"the run has no 'score' column (found {found}); a run needs a score per document, which orders its "
                "ranking: the fifth column of a TREC run file, ScoredDoc(query_id, doc_id, score), or the score "
                "column of PyTerrier results"
                + ("; to keep the order of its 'rank' column, add score = -rank" if "rank" in found else ""))
    return (f"the qrels have no 'relevance' column (found {found}); qrels need a relevance label per judged "
            "document: the fourth column of a TREC qrels file, or Qrel(query_id, doc_id, relevance)")


#: The packages between a user's call (``ir_measures.calc_aggregate``, ``pt.Experiment``) and a measure.
_EVALUATING_PACKAGES = frozenset({"pairmeasures", "ir_measures", "pyterrier", "pandas"})


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` in the calling function that names the user's call: the first
    frame outside pairmeasures and the libraries that evaluate through it (1, the caller, if there is none)."""
    import sys
    from types import FrameType

    frame: Optional[FrameType] = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] in _EVALUATING_PACKAGES:
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 1


def _first_rows(run: "pd.DataFrame", rows: np.ndarray, limit: int = 3) -> str:
    shown = [f"document {run['doc_id'].iloc[r]!r} of query {run['query_id'].iloc[r]!r}" for r in rows[:limit]]
    more = f" and {rows.size - limit} more" if rows.size > limit else ""
    return ", ".join(shown) + more


def _score_order(row_query: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Positions of judged rows, by query (in ``row_query`` order) then score descending; ties unresolved.

    Runs are usually grouped by query and sorted by score already (TREC files, PyTerrier results):
    then only the query blocks are reordered, with no sort of the rows.
    """
    candidates = np.flatnonzero(row_query >= 0)
    if candidates.size == 0:
        return candidates
    query, score = row_query[candidates], scores[candidates]
    changes = np.flatnonzero(query[1:] != query[:-1]) + 1
    starts = np.concatenate([[0], changes])
    sorted_within = np.all((score[1:] <= score[:-1]) | (query[1:] != query[:-1]))
    if sorted_within and np.unique(query[starts]).size == starts.size:  # one block per query
        lengths = np.diff(np.concatenate([starts, [query.size]]))
        blocks = np.argsort(query[starts], kind="stable")
        block_offsets = np.concatenate([[0], np.cumsum(lengths[blocks])[:-1]])
        within = np.arange(query.size) - np.repeat(block_offsets, lengths[blocks])
        return candidates[np.repeat(starts[blocks], lengths[blocks]) + within]
    return candidates[np.lexsort((-score, query))]


def _break_ties(order: np.ndarray, ranks: np.ndarray, row_query: np.ndarray, scores: np.ndarray,
                doc_ids: np.ndarray, depth: Optional[int], shown: Optional[np.ndarray] = None) -> None:
    """Reorder, in place, runs of equal (query, score) rows by document id descending, or, with ``shown`` (each
    row's place in the system's order), by that place ascending.

    With a ``depth``, only rows that can reach it matter: those ranked above it and those tied
    with the last row above it.
    """
    sorted_query = row_query[order]
    sorted_score = scores[order]
    if depth is None:
        positions = np.arange(order.size)
    else:
        at_boundary = np.flatnonzero(ranks == depth - 1)
        boundary_score = np.full(int(sorted_query.max(initial=-1)) + 1, np.nan)
        boundary_score[sorted_query[at_boundary]] = sorted_score[at_boundary]
        positions = np.flatnonzero((ranks < depth) | (sorted_score == boundary_score[sorted_query]))
    query, score = sorted_query[positions], sorted_score[positions]
    tied_next = (query[1:] == query[:-1]) & (score[1:] == score[:-1]) & (positions[1:] == positions[:-1] + 1)
    if not tied_next.any():
        return
    in_tie = np.concatenate([tied_next, [False]]) | np.concatenate([[False], tied_next])
    tie_id = np.cumsum(np.concatenate([[True], ~tied_next])) - 1
    import pandas as pd

    positions, tie_id = positions[in_tie], tie_id[in_tie]
    if shown is not None:
        permutation = np.lexsort((shown[order[positions]], tie_id))
    else:
        frame = pd.DataFrame({"tie": tie_id, "doc": doc_ids[order[positions]].astype(str)})
        permutation = frame.sort_values(["tie", "doc"], ascending=[True, False], kind="stable").index.to_numpy()
    order[positions] = order[positions][permutation]


def _shown_order(run: "pd.DataFrame", row_query: np.ndarray) -> np.ndarray:
    """Each row's place in the order the system showed: its ``rank`` (a number for every ranked row), else its row
    position in the run."""
    import pandas as pd

    if "rank" not in run.columns:
        return np.arange(len(run), dtype=np.float64)
    shown = pd.to_numeric(run["rank"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.flatnonzero((row_query >= 0) & ~np.isfinite(shown))
    if bad.size:
        raise RunInputError(f"ties='system' orders documents of equal score by the run's rank column, which is missing "
                            f"or not a number for {_first_rows(run, bad)}; give every row its rank (or drop the column "
                            "to use the row order)")
    return shown


def _twice_problem(run: "pd.DataFrame", doc_column: np.ndarray, order: np.ndarray, offsets: np.ndarray) -> Optional[str]:
    """The error for a document the run ranks twice for one query (``doc_column``: the run's ``doc_id``s; ``order``:
    the judged rows, by query, whose lists start at ``offsets``), wherever the two rows are (a ranking lists each
    document once); None when there is none. Rows without a document id are left to the check of missing ids."""
    import pandas as pd

    docs = doc_column[order]
    found = repeat_in_blocks(docs, offsets.tolist())
    if found is not None and pd.isna(docs[found[1]]):  # two rows without an id: not a document ranked twice
        docs = np.where(pd.isna(docs), np.array([object() for _ in range(docs.size)], dtype=object), docs)
        found = repeat_in_blocks(docs, offsets.tolist())
    if found is None:
        return None
    first, second = sorted(int(order[position]) for position in found)
    scores = run["score"].iloc[[first, second]].tolist()
    return (f"the run ranks the same document twice for {_first_rows(run, np.array([second]))} (rows {first} and "
            f"{second} of the frame, " + (f"score {scores[0]!r} both times" if scores[0] == scores[1] else
                                          f"scores {scores[0]!r} and {scores[1]!r}")
            + "); a ranking lists each document once: drop duplicate (query, document) rows first, e.g. "
              "run.drop_duplicates(['query_id', 'doc_id'])")


def build_ranked_lists(run: "pd.DataFrame", query_ids: np.ndarray, depth: Optional[int], columns: list[str],
                       relevance: Optional["QrelsLookup"] = None, ties: str = "trec_eval") -> RankedLists:
    """Sort ``run`` once into :class:`RankedLists` for the judged ``query_ids``.

    ``depth`` keeps the top ``depth`` documents per query (all for ``None``); ``columns`` are the
    side columns to carry (the provider has checked that the run has them); ``relevance`` attaches qrels to the kept
    rows; ``ties``: how documents of equal score are ordered (``"trec_eval"`` or ``"system"``: see the module).
    """
    import pandas as pd

    query_ids = np.asarray(query_ids, dtype=object)
    n_queries = query_ids.size
    if len(run) == 0:  # "no results", even when the frame arrives without its side columns
        return RankedLists(
            query_ids=query_ids,
            offsets=np.zeros(n_queries + 1, dtype=np.int64),
            doc_ids=np.empty(0, dtype=object),
            scores=np.empty(0),
            ranks=np.empty(0, dtype=np.int64),
            relevance=np.empty(0),
            columns={name: np.empty(0, dtype=object) for name in columns},
        )
    problem = missing_columns_problem(run.columns, "run")
    if problem:
        raise RunInputError(problem)

    codes, uniques = pd.factorize(run["query_id"], use_na_sentinel=True)
    problem = missing_id_problem(run, "run", "query_id", np.flatnonzero(codes < 0)) or float_id_problem(run, "run")
    if problem:
        raise RunInputError(problem)
    judged = pd.Index(query_ids).get_indexer([str(u) for u in uniques])
    row_query = np.where(codes >= 0, judged[codes], -1) if uniques.size else np.full(len(run), -1)
    scores = pd.to_numeric(run["score"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.flatnonzero((row_query >= 0) & np.isnan(scores))
    if bad.size:
        raise RunInputError(f"the run has missing or non-numeric scores for {_first_rows(run, bad)}; "
                            "every ranked document needs a score")
    order = _score_order(row_query, scores)
    counts = np.bincount(row_query[order], minlength=n_queries)
    full_offsets = np.concatenate([[0], np.cumsum(counts)])
    ranks = np.arange(order.size) - full_offsets[row_query[order]]
    doc_column = run["doc_id"].to_numpy()
    problem = _twice_problem(run, doc_column, order, full_offsets)
    if problem:
        raise RunInputError(problem)
    if ties not in ("trec_eval", "system"):
        raise ValueError(f"ties must be 'trec_eval' or 'system', got {ties!r}")
    shown = _shown_order(run, row_query) if ties == "system" else None
    _break_ties(order, ranks, row_query, scores, doc_column, depth, shown)
    if depth is not None:
        keep = ranks < depth
        order, ranks = order[keep], ranks[keep]
        counts = np.minimum(counts, depth)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    kept_docs = doc_column[order]
    problem = missing_id_problem(run, "run", "doc_id", np.sort(order[pd.isna(kept_docs)]))
    if problem:  # rows below every cutoff cannot change a value and are not checked
        raise RunInputError(problem)
    doc_ids = np.array([str(d) for d in kept_docs], dtype=object)
    kept_query = query_ids[row_query[order]]
    lists = RankedLists(
        query_ids=query_ids,
        offsets=offsets,
        doc_ids=doc_ids,
        scores=scores[order],
        ranks=ranks.astype(np.int64),
        relevance=np.full(order.size, np.nan),
        columns={name: run[name].to_numpy()[order] for name in columns},
    )
    if relevance is not None:
        lists = replace(lists, relevance=relevance.lookup(kept_query, doc_ids))
    return lists


class QrelsLookup:
    """Relevance of (query, document) pairs from a qrels DataFrame (last judgement wins)."""

    def __init__(self, qrels: "pd.DataFrame"):
        import pandas as pd

        frame = pd.DataFrame({
            "query_id": qrels["query_id"].astype(str).to_numpy(),
            "doc_id": qrels["doc_id"].astype(str).to_numpy(),
            "relevance": pd.to_numeric(qrels["relevance"], errors="coerce").to_numpy(dtype=np.float64),
        }).drop_duplicates(["query_id", "doc_id"], keep="last")
        self._index = pd.MultiIndex.from_arrays([frame["query_id"].to_numpy(), frame["doc_id"].to_numpy()])
        self._relevance = frame["relevance"].to_numpy()

    def lookup(self, query_ids: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
        """Relevance per pair; NaN for unjudged pairs."""
        import pandas as pd

        if len(query_ids) == 0:
            return np.empty(0)
        position = self._index.get_indexer(pd.MultiIndex.from_arrays([query_ids, doc_ids]))
        return np.where(position >= 0, self._relevance[np.maximum(position, 0)], np.nan)
