"""Layer 2: side information a measure needs besides qrels and run (polarity scores, group labels, text).

A measure reads a side input from a run column (``polarity``, ``group``, ``text``) or, when one of its
parameters names a *resource*, from a :class:`SideInfoSource` resolved here. Resources are named
``scheme:argument``; built-in schemes:

``tsv:PATH``
    A tab-separated file with a header: ``corpus-id`` (or ``doc_id`` / ``docno``), optionally
    ``query-id`` (or ``query_id`` / ``qid``) when values depend on the query, and one value
    column (labels or numbers) or several numeric ones (one per polarity axis). ``tsv:PATH#name``
    picks the value column ``name``.
``beir:DIR``
    The gold group labels of a BEIR-layout folder, ``DIR/labels.tsv`` (``query-id``,
    ``corpus-id``, ``group``).
``pca:DIR[?model=M&components=m&text=title+text&positive=LABEL]``
    Polarity computed from text: per query, axes fitted on the labelled (else judged)
    documents of the BEIR folder ``DIR`` (:mod:`pairmeasures.sideinfo.polarity`); documents
    are embedded from the run's ``text`` column, else from ``DIR``'s corpus.
``corpus:DIR[?fields=title+text]`` and ``irds:DATASET[?fields=title+text]``
    Document text for the term-based measures, from a BEIR folder's ``corpus.jsonl`` or an
    ``ir_datasets`` docs store (:mod:`pairmeasures.sideinfo.terms`).

Plugins add schemes through the ``pairmeasures_side_info_schemes`` hook. Sources are built once
per process, name and content (:mod:`pairmeasures.sideinfo.memo`): a resource file is read once
however many measures use it, and read again when it changes (its size or modification time).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Mapping, Optional, Protocol, runtime_checkable

import numpy as np

from .memo import Memo, content_key

__all__ = ["SideInfoSource", "TsvSource", "register_scheme", "resolve", "schemes", "SideInfoError", "resource_options",
           "resource_key"]


class SideInfoError(ValueError):
    """A resource cannot be resolved or read."""


@runtime_checkable
class SideInfoSource(Protocol):
    """Something that supplies one side input for ranked documents."""

    def lookup(self, query_ids: np.ndarray, doc_ids: np.ndarray, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        """Values for each (query, document) row, aligned with the inputs.

        ``columns`` holds the run's other per-row columns (e.g. ``text``) for sources that compute
        values. A row without a value gets ``None`` (object arrays) or NaN (float arrays).
        """
        ...


_SCHEMES: dict[str, Callable[[str], SideInfoSource]] = {}
_SOURCES = Memo("side-information sources")

_QUERY_KEYS = ("query-id", "query_id", "qid")
_DOC_KEYS = ("corpus-id", "doc_id", "docno")


def resource_options(argument: str, allowed: tuple, scheme: str) -> tuple[str, dict]:
    """Split ``LOCATION?key=value&...`` into the location and its options (``+`` stays a plus sign,
    so ``text=title+text`` reads as written); an option not in ``allowed`` is an error."""
    from urllib.parse import unquote

    location, _, query = argument.partition("?")
    options = {}
    for pair in filter(None, query.split("&")):
        key, _, value = pair.partition("=")
        options[unquote(key)] = unquote(value)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise SideInfoError(f"{scheme}: resource options are {', '.join(allowed)}; got {unknown}")
    return location, options


def register_scheme(scheme: str, factory: Callable[[str], SideInfoSource]) -> None:
    """Make resources named ``scheme:ARGUMENT`` resolve to ``factory(ARGUMENT)`` (built again when the
    file or folder that ``ARGUMENT`` names, before any ``?options`` or ``#column``, changes)."""
    if not scheme.isidentifier():
        raise ValueError(f"a side-information scheme must be an identifier, got {scheme!r}")
    _SCHEMES[scheme] = factory


def schemes() -> list[str]:
    """Registered scheme names."""
    return sorted(_SCHEMES)


def resource_key(spec: str) -> Optional[tuple]:
    """The content a resource ``scheme:LOCATION[?options][#column]`` was read from: :func:`content_key`
    of ``LOCATION`` when it is a file or folder (every file under it), else ``None`` (e.g. a dataset id)."""
    location = spec.partition(":")[2].partition("?")[0].partition("#")[0]
    return content_key(location) if location else None


def resolve(spec: str) -> SideInfoSource:
    """The source a resource name stands for, built on first use and again when its files change."""
    scheme, sep, argument = spec.partition(":")
    if not sep or scheme not in _SCHEMES:
        raise SideInfoError(
            f"unknown side-information resource {spec!r}: expected SCHEME:ARGUMENT with SCHEME one of "
            f"{schemes()} (plugins can add more)"
        )
    return _SOURCES.get(spec, resource_key(spec), lambda: _SCHEMES[scheme](argument))


class TsvSource:
    """Values from a tab-separated file keyed by document id, or by (query id, document id)."""

    def __init__(self, path: str | os.PathLike, value_column: Optional[str] = None):
        import pandas as pd

        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise SideInfoError(f"side-information file {str(self.path)!r} does not exist")
        frame = pd.read_csv(self.path, sep="\t", dtype=str, keep_default_na=False)
        query_key = next((k for k in _QUERY_KEYS if k in frame.columns), None)
        doc_key = next((k for k in _DOC_KEYS if k in frame.columns), None)
        if doc_key is None:
            raise SideInfoError(f"{str(self.path)!r} needs a document id column, one of {_DOC_KEYS}; "
                                f"found {list(frame.columns)}")
        values = [c for c in frame.columns if c not in (query_key, doc_key)]
        if value_column is not None:
            if value_column not in values:
                raise SideInfoError(f"{str(self.path)!r} has no value column {value_column!r}; found {values}")
            values = [value_column]
        if not values:
            raise SideInfoError(f"{str(self.path)!r} has no value column besides its ids")
        numeric = frame[values].apply(pd.to_numeric, errors="coerce")
        all_numeric = not numeric.isna().any().any()
        if len(values) > 1 and not all_numeric:
            raise SideInfoError(f"{str(self.path)!r}: several value columns must all be numeric (polarity axes)")
        if all_numeric:
            table = numeric.to_numpy(dtype=np.float64)
            self.values = table[:, 0] if len(values) == 1 else table
        else:  # one column of labels
            self.values = frame[values[0]].to_numpy(dtype=object)
        self.by_query = query_key is not None
        keys = [frame[doc_key].to_numpy()] if not self.by_query else [frame[query_key].to_numpy(), frame[doc_key].to_numpy()]
        self._index = pd.MultiIndex.from_arrays(keys) if self.by_query else pd.Index(keys[0])
        if not self._index.is_unique:
            raise SideInfoError(f"{str(self.path)!r} lists a key twice; keep one value per "
                                f"{'(query, document)' if self.by_query else 'document'}")

    def lookup(self, query_ids: np.ndarray, doc_ids: np.ndarray, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        import pandas as pd

        if self.by_query:
            keys = pd.MultiIndex.from_arrays([np.asarray(query_ids, dtype=str), np.asarray(doc_ids, dtype=str)])
        else:
            keys = pd.Index(np.asarray(doc_ids, dtype=str))
        position = self._index.get_indexer(keys) if len(keys) else np.empty(0, dtype=np.int64)
        found = position >= 0
        if self.values.dtype == object:
            out = np.full(position.shape[0], None, dtype=object)
            out[found] = self.values[position[found]]
            return out
        out = np.full((position.shape[0],) + self.values.shape[1:], np.nan)
        out[found] = self.values[position[found]]
        return out

    def __repr__(self) -> str:
        return f"TsvSource({str(self.path)!r})"


def tsv_scheme(argument: str) -> TsvSource:
    """``tsv:PATH`` or ``tsv:PATH#COLUMN``."""
    path, _, column = argument.partition("#")
    return TsvSource(path, column or None)


def beir_scheme(argument: str) -> TsvSource:
    """``beir:DIR``: the gold labels ``DIR/labels.tsv`` of a BEIR-layout folder."""
    folder = Path(argument).expanduser()
    if not (folder / "labels.tsv").is_file():
        raise SideInfoError(f"{str(folder)!r} has no labels.tsv (columns query-id, corpus-id, group)")
    return TsvSource(folder / "labels.tsv", "group")
