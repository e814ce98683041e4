"""Side inputs: what a measure reads besides the run's ranking (polarity scores, group labels, text), from a run column
or from a resource a parameter names, and how it reaches :meth:`PairMeasure.compute` checked.

A measure declares its side inputs (:class:`SideInput`); :meth:`PairMeasure.prepare` attaches each with
:func:`attach`, which converts the values to the kind's shape and names the measure, query, document and origin of
the first one that is missing or cannot be right. The provider names the run columns a run lacks
(:func:`missing_side_columns`). Documents without a side input that ``missing='skip'`` (the default) or ``'neutral'``
lets through are counted: into the notes the provider collects (:func:`noting_left_out`), which it says in one
warning per measure and run, or, outside the provider, in a :class:`MissingSideInfoWarning` at once.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, NoReturn, Optional, Sequence

import numpy as np

from .. import sideinfo
from .ranked import RankedLists, RunInputError, user_stacklevel

if TYPE_CHECKING:
    from .base import PairMeasure

__all__ = ["SideInput", "MissingSideInfoWarning", "attach", "source_for", "resource_example", "missing_side_columns",
           "label_key", "LeftOutDocuments", "noting_left_out"]


class MissingSideInfoWarning(UserWarning):
    """Some considered documents had no side information: skipped (``missing='skip'``, the default) or counted as
    neutral (``missing='neutral'``). Where queries were also left out, the one warning is a
    :class:`~pairmeasures.DegenerateQueryWarning` that counts both."""


@dataclass(frozen=True)
class LeftOutDocuments:
    """The considered documents :func:`attach` found without the side input ``column`` (from ``origin``) and
    ``skipped`` (else counted as neutral): the documents were cut at ``depth`` (the measure's cut-off, ``None``: the
    whole ranking); ``ranks`` are every considered document's rank, ``absent`` marks those without one, and
    ``documents`` and ``queries`` name those, for examples."""

    column: str
    origin: str
    skipped: bool
    depth: Optional[int]
    ranks: np.ndarray
    absent: np.ndarray
    documents: np.ndarray
    queries: np.ndarray

    def at(self, cutoff: Optional[int]) -> tuple[int, int, str]:
        """``(absent, considered, an example)`` among the documents ranked above ``cutoff`` (``None``: all)."""
        above = np.ones(self.ranks.size, dtype=bool) if cutoff is None else self.ranks < cutoff
        rows = np.flatnonzero(above[self.absent])  # the absent documents above the cut-off, in rank order per query
        example = f"document {self.documents[rows[0]]!r} of query {self.queries[rows[0]]!r}" if rows.size else ""
        return int(rows.size), int(np.count_nonzero(above)), example

    def sentence(self, cutoff: Optional[int]) -> str:
        """What was left out above ``cutoff``, in words; empty when nothing was."""
        absent, considered, example = self.at(cutoff)
        if not absent:
            return ""
        what = "were skipped" if self.skipped else "count as neutral"
        return (f"{absent} of {considered} considered documents have no {self.column} in {self.origin} and {what} "
                f"(e.g. {example})")


#: Where :func:`attach` puts what it left out: the list the provider collects into, else ``None`` (warn at once).
_NOTES: ContextVar[Optional[list[LeftOutDocuments]]] = ContextVar("pairmeasures_left_out", default=None)


@contextmanager
def noting_left_out() -> Iterator[list[LeftOutDocuments]]:
    """Inside the block, :func:`attach` adds what it leaves out (or counts as neutral) to the list yielded instead of
    warning: the provider says it in its one warning per measure and run."""
    notes: list[LeftOutDocuments] = []
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)


@dataclass(frozen=True)
class SideInput:
    """A side input a measure reads: from the run column ``column``, or from the resource named by
    the measure parameter ``param`` when it is set. ``kind`` is ``"scores"`` (floats, or one
    sequence of floats per document for several axes), ``"labels"`` (any hashable) or ``"text"``
    (strings). ``neutral`` is the value a document without one gets under ``missing='neutral'``
    (for measures that offer that choice)."""

    column: str
    param: str
    kind: str
    neutral: Any = None


#: Resources a side input of each kind can name, for error messages.
_EXAMPLE_RESOURCES = {"scores": ("tsv:FILE", "pca:DIR"), "labels": ("tsv:FILE", "beir:DIR"),
                      "text": ("corpus:DIR", "irds:DATASET")}


#: What to name instead, by side-input kind, when a resource provides the wrong kind.
_RESOURCES_OF = {
    "scores": "a resource of numbers (pca:irds:DATASET or pca:DIR, or a tsv: file of numeric columns)",
    "labels": "a resource of labels (irds:DATASET with gold labels, beir:DIR, or a tsv: file with one label column)",
    "text": "a text resource (irds:DATASET or corpus:DIR), or give the run a 'text' column",
}


def resource_example(measure: PairMeasure, side: SideInput) -> str:
    """How to name a resource for ``side`` instead of a run column, e.g. ``rKL(group='tsv:FILE' | 'beir:DIR')``."""
    return f"{measure.NAME}({side.param}={' | '.join(repr(r) for r in _EXAMPLE_RESOURCES[side.kind])})"


def label_key(value) -> str:
    """A group label's canonical text, so ``protected='1'`` matches 1, 1.0 and '1'."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def attach(measure: PairMeasure, lists: RankedLists, side: SideInput) -> RankedLists:
    """``lists`` with the side input ``side`` of ``measure`` attached as a column, checked: from the run's column, or
    from the resource its parameter names; a document without one is an error, skipped or neutral as ``missing=``
    says (:meth:`PairMeasure.prepare` calls it for each side input)."""
    spec = measure.param(side.param)
    source = None
    if spec is None:
        raw = lists.column(side.column)
        origin = f"the run's {side.column!r} column"
    else:
        source = source_for(measure, side)
        raw = source.lookup(lists.row_query_ids(), lists.doc_ids, lists.columns)
        origin = f"resource {spec!r}"
    values, present = _convert(raw, side, lists, measure, origin)
    if side.kind == "text":
        _check_text(values, present, lists, measure, origin)
    elif side.kind == "labels":
        _check_labels(values, present, lists, measure, origin, side.column)
    if not present.all():
        absent = np.flatnonzero(~present)
        policy = measure.param("missing")
        if policy in ("skip", "neutral"):
            _note(measure, lists, side.column, origin, present, skipped=policy == "skip")
        if policy == "skip":
            lists = lists.select(present)
            values = values[present]
        elif policy == "neutral":
            values = values.copy()
            values[absent] = side.neutral
        else:
            row = int(absent[0])
            explain = getattr(source, "missing_reason", None)
            reason = explain(str(lists.row_query_ids()[row]), str(lists.doc_ids[row])) if explain else None
            raise RunInputError(
                f"{measure}: no {side.column} for {lists.describe(row)} in {origin}" + (f" ({reason})" if reason else "")
                + f"; {absent.size} of {present.size} considered documents lack one. Provide it, "
                f"set rel= to consider only judged documents, or pass missing='skip'"
                + (" or 'neutral'." if "neutral" in (measure.SUPPORTED_PARAMS["missing"].choices or ()) else ".")
            )
    if side.kind == "scores":
        _check_scores(values, lists, measure, origin, side.column)
    return lists.with_columns(**{side.column: values})


def _note(measure: PairMeasure, lists: RankedLists, column: str, origin: str, present: np.ndarray,
          skipped: bool) -> None:
    """Count the considered documents without ``column``: into the provider's notes, else in a warning now."""
    absent = ~present
    note = LeftOutDocuments(column=column, origin=origin, skipped=skipped, depth=measure.depth(),
                            ranks=np.asarray(lists.ranks), absent=absent, documents=lists.doc_ids[absent],
                            queries=lists.row_query_ids()[absent])
    notes = _NOTES.get()
    if notes is not None:
        notes.append(note)
        return
    stop = "pass missing='error' to stop at the first one"
    warnings.warn(f"{measure}: {note.sentence(None)}; {stop}", MissingSideInfoWarning, stacklevel=user_stacklevel())


def source_for(measure: PairMeasure, side: SideInput):
    """The resource the parameter of ``side`` names, resolved and of the kind ``side`` needs (its ``for_kind`` part
    for a resource of several kinds); an error naming ``measure`` and what to name instead otherwise."""
    spec = measure.param(side.param)
    try:
        source = sideinfo.resolve(spec)
    except sideinfo.SideInfoError as exc:  # a resource's own error, e.g. a damaged line: keep its type
        exc.args = (f"{measure}: {exc}",)
        raise
    except OSError as exc:  # e.g. a file that does not exist
        raise sideinfo.SideInfoError(f"{measure}: {exc}") from exc
    offered = sideinfo.kinds(source, side.kind)
    kind = side.kind if side.kind in offered else "scores" if side.kind == "labels" and "scores" in offered else None
    if kind is None:
        reason = getattr(source, "kind_reason", "")
        needs = side.kind if side.column == side.kind else f"{side.kind} ({side.column})"
        raise RunInputError(f"{measure}: resource {spec!r} provides document {' and '.join(offered)}, but {side.param}= "
                            f"needs {needs}" + (f" ({reason})" if reason else "")
                            + f"; name {_RESOURCES_OF[side.kind]} instead")
    for_kind = getattr(source, "for_kind", None)
    if for_kind is None:
        return source
    try:
        return for_kind(kind)
    except sideinfo.SideInfoError as exc:
        exc.args = (f"{measure}: {exc}",)
        raise


def missing_side_columns(measures: Sequence[PairMeasure], found: list[str]) -> Optional[str]:
    """For each side column the run lacks: which measures read it, and the resources they could name instead (a
    sentence for the error the provider and :func:`~pairmeasures.pooled` raise); ``None`` when none is missing."""
    readers: dict[str, dict[str, str]] = {}  # column -> {measure name: resource example}
    for measure in sorted(measures, key=str):
        for side in measure.side_inputs():
            if side.column in measure.run_columns() and side.column not in found:
                readers.setdefault(side.column, {})[str(measure)] = measure.resource_example(side)
    sentences: list[str] = []
    for column, named in readers.items():
        verb = "reads" if len(named) == 1 else "read"
        add = ("add it with pt.text.get_text(dataset, 'text') in the pipeline" if column == "text" else
               "give the run that column (a DataFrame or a PyTerrier transformer can; TREC run files and ScoredDoc "
               "tuples cannot)")
        lacks = f"which it lacks (found {found})" if not sentences else "which it lacks too"
        sentences.append(f"{', '.join(named)} {verb} the run's {column!r} column, {lacks}: {add}, "
                         f"or name a resource in the measure: {', '.join(dict.fromkeys(named.values()))}.")
    return " ".join(sentences) or None


def _check_text(values: np.ndarray, present: np.ndarray, lists: RankedLists, measure: PairMeasure, origin: str) -> None:
    import pandas as pd

    if pd.api.types.infer_dtype(values[present], skipna=False) in ("string", "empty"):
        return
    wrong = np.flatnonzero(present & np.array([not isinstance(v, str) for v in values], dtype=bool))
    if wrong.size:
        row = int(wrong[0])
        raise RunInputError(f"{measure}: the text of {lists.describe(row)} in {origin} is a "
                            f"{type(values[row]).__name__}, not a string")


def _check_labels(values: np.ndarray, present: np.ndarray, lists: RankedLists, measure: PairMeasure, origin: str,
                  name: str) -> None:
    """Group labels are single values (text, numbers): a list, set or dict names the measure, query and document."""
    import pandas as pd

    if pd.api.types.infer_dtype(values[present], skipna=False) in ("string", "integer", "floating", "mixed-integer-float",
                                                                   "boolean", "empty"):
        return
    for row in np.flatnonzero(present).tolist():
        value = values[row]
        try:
            hash(value)
        except TypeError:
            raise RunInputError(f"{measure}: the {name} of {lists.describe(row)} in {origin} is a {type(value).__name__} "
                                f"({value!r}); a {name} is one label per document (text or a number): give each document "
                                "one, e.g. its first") from None


def _present(raw: np.ndarray) -> np.ndarray:
    """Which values are not missing (None, NaN, pandas' NA/NaT): one vectorised pass."""
    import pandas as pd

    if raw.ndim != 1:
        return np.array([not _is_missing(v) for v in raw], dtype=bool)
    return ~np.asarray(pd.isna(raw.astype(object, copy=False)), dtype=bool)


def _is_missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    return type(value).__name__ in ("NAType", "NaTType")  # pandas' missing markers


def _convert(raw, side: SideInput, lists: RankedLists, measure: PairMeasure, origin: str) -> tuple[np.ndarray, np.ndarray]:
    """Side values as an array of the kind's shape, and which rows have one; a value that does not
    convert names the measure, the query and document, and the origin."""
    raw = np.asarray(raw) if not isinstance(raw, np.ndarray) else raw
    if side.kind in ("labels", "text"):
        if raw.ndim != 1:
            raise RunInputError(f"{measure}: {origin} gives {raw.shape[1]} values per document; {side.column} "
                                f"needs one {'label' if side.kind == 'labels' else 'text'} per document")
        return raw.astype(object), _present(raw)
    if raw.dtype != object:
        try:
            values = raw.astype(np.float64)
        except (TypeError, ValueError):
            raw = raw.astype(object)
        else:
            present = ~np.isnan(values) if values.ndim == 1 else ~np.isnan(values).all(axis=1)
            return values, present
    present = _present(raw)
    rows = np.flatnonzero(present)
    if not rows.size:
        return np.full(raw.shape[0], np.nan), present
    try:
        stacked = np.asarray(list(raw[rows]), dtype=np.float64)
    except (TypeError, ValueError):
        stacked = None
    if stacked is None or stacked.ndim > 2:
        _raise_first_unconvertible(raw, rows, side, lists, measure, origin)
    values = np.full((raw.shape[0],) + stacked.shape[1:], np.nan)
    values[present] = stacked
    return values, present


def _raise_first_unconvertible(raw: np.ndarray, rows: np.ndarray, side: SideInput, lists: RankedLists,
                               measure: PairMeasure, origin: str) -> NoReturn:
    """Raise a RunInputError naming the first value that is not a number or a sequence of numbers, or
    the first two documents with different numbers of axes (the slow path of :func:`_convert`)."""
    widths: dict[int, int] = {}  # number of axes (0: a scalar) -> first row with it
    for row in rows.tolist():
        value = raw[row]
        try:
            number = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            number = None
        if number is None or number.ndim > 1 or (number.ndim == 1 and number.size == 0):
            raise RunInputError(f"{measure}: {side.column} values must be numbers or sequences of numbers; "
                                f"{lists.describe(row)} has {value!r} in {origin}")
        widths.setdefault(number.size if number.ndim else 0, row)
        if len(widths) > 1:
            (one, first), (other, second) = widths.items()
            raise RunInputError(
                f"{measure}: {side.column} values mix scalars and sequences, or sequences of lengths {sorted(widths)}: "
                f"{lists.describe(first)} has {_axes(one)}, {lists.describe(second)} {_axes(other)} in {origin}; "
                "give every document the same number of axes")
    raise RunInputError(f"{measure}: {side.column} values in {origin} do not convert to numbers")


def _axes(width: int) -> str:
    return "a number" if width == 0 else f"{width} number(s)"


def _check_scores(values: np.ndarray, lists: RankedLists, measure: PairMeasure, origin: str, name: str) -> None:
    bad = ~np.isfinite(values)
    if bad.ndim == 2:
        bad = bad.any(axis=1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise RunInputError(f"{measure}: non-finite {name} {values[row]} for {lists.describe(row)} in {origin}; "
                            f"{name} values must be finite numbers")

