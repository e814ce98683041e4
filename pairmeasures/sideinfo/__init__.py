"""Layer 2: side information a measure needs besides qrels and run (polarity scores, group labels, text).

A measure reads a side input from a run column (``polarity``, ``group``, ``text``) or, when one of its
parameters names a *resource*, from a :class:`SideInfoSource` resolved here. Resources are named
``scheme:argument``; built-in schemes:

``tsv:PATH``
    A tab-separated file with a header: ``corpus-id`` (or ``doc_id`` / ``docno``), optionally
    ``query-id`` (or ``query_id`` / ``qid``) when values depend on the query, and one value
    column (labels or numbers) or several numeric ones (one per polarity axis). ``tsv:PATH#name``
    picks the value column ``name``. Columns of finite numbers only provide scores, else labels;
    malformed rows, empty cells and repeated keys are errors naming the file and line.
``beir:DIR``
    The gold group labels of a BEIR-layout folder, ``DIR/labels.tsv`` (``query-id``,
    ``corpus-id``, ``group``), read with the whole folder by :func:`pairmeasures.sideinfo.beir.read_beir`.
``pca:DIR[?model=M&components=m&text=title+text&positive=LABEL]``
    Polarity computed from text: per query, axes fitted on the labelled (else judged)
    documents of the BEIR folder ``DIR`` (:mod:`pairmeasures.sideinfo.polarity`); documents
    are embedded from the run's ``text`` column, else from ``DIR``'s corpus.
``corpus:DIR[?fields=title+text]`` and ``irds:DATASET[?fields=title+text]``
    Document text for the term-based measures, from a BEIR folder's ``corpus.jsonl`` or an
    ``ir_datasets`` docs store (:mod:`pairmeasures.sideinfo.text`).

A source declares what it provides in ``provides`` (``"scores"``, ``"labels"`` or ``"text"``);
a measure refuses a resource of another kind (scores serve as labels, never as text).
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
    """Values from a tab-separated file keyed by document id, or by (query id, document id).

    ``provides`` is ``"scores"`` when every value column holds finite numbers only, else
    ``"labels"`` (one column, values as written); ``kind_reason`` says why, naming a cell.
    """

    def __init__(self, path: str | os.PathLike, value_column: Optional[str] = None):
        from .beir import DataFileError, read_table

        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise SideInfoError(f"side-information file {str(self.path)!r} does not exist")
        header, line_numbers, columns = read_table(self.path)
        query_key = next((k for k in _QUERY_KEYS if k in header), None)
        doc_key = next((k for k in _DOC_KEYS if k in header), None)
        if doc_key is None:
            raise DataFileError(self.path, 1, f"needs a document id column, one of {_DOC_KEYS}; found {header}")
        values = [c for c in header if c not in (query_key, doc_key)]
        if value_column is not None:
            if value_column not in values:
                raise SideInfoError(f"{str(self.path)!r} has no value column {value_column!r}; found {values}")
            values = [value_column]
        if not values:
            raise DataFileError(self.path, 1, f"has no value column besides its ids ({header})")
        lines = np.asarray(line_numbers, dtype=np.int64)
        keys = [query_key, doc_key] if query_key is not None else [doc_key]
        for name in keys + values:
            empty = np.flatnonzero(np.asarray(columns[name], dtype=object) == "")
            if empty.size:
                raise DataFileError(self.path, int(lines[empty[0]]), f"empty {name!r}; leave out a document without a value")
        table, first_bad = _numbers(lines, columns, values)
        if first_bad is not None and len(values) > 1:
            raise DataFileError(self.path, first_bad[0], f"several value columns must all be numeric (polarity axes): "
                                                         f"{first_bad[1]!r} is {first_bad[2]!r}, not a finite number")
        if first_bad is None:
            self.provides = "scores"
            self.kind_reason = f"column(s) {', '.join(map(repr, values))} of {str(self.path)!r} hold numbers only"
            self.values = table[:, 0] if len(values) == 1 else table
        else:
            self.provides = "labels"
            self.kind_reason = f"{self.path}:{first_bad[0]}: {first_bad[1]!r} is {first_bad[2]!r}, not a finite number"
            self.values = np.asarray(columns[values[0]], dtype=object)
        self.by_query = query_key is not None
        self._index = _key_index(self.path, lines, [np.asarray(columns[k], dtype=object) for k in keys])

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


def _numbers(lines: np.ndarray, columns: Mapping[str, list], names: list) -> tuple:
    """The columns ``names`` as a float table, and ``None``; or ``None`` and the first cell that is
    not a finite number as ``(line, column, value)``."""
    table = np.empty((lines.size, len(names)))
    for position, name in enumerate(names):
        try:
            table[:, position] = np.asarray(columns[name], dtype=np.float64)
            bad = np.flatnonzero(~np.isfinite(table[:, position]))
        except ValueError:
            bad = np.flatnonzero([not _is_finite_number(v) for v in columns[name]])
        if bad.size:
            return None, (int(lines[bad[0]]), name, columns[name][bad[0]])
    return table, None


def _is_finite_number(text: str) -> bool:
    try:
        return bool(np.isfinite(float(text)))
    except ValueError:
        return False


def _key_index(path: Path, lines: np.ndarray, keys: list):
    """A pandas index of the key column(s); a key listed twice names both lines."""
    import pandas as pd

    index = pd.MultiIndex.from_arrays(keys) if len(keys) > 1 else pd.Index(keys[0])
    if not index.is_unique:
        from .beir import DataFileError

        repeated = int(np.flatnonzero(index.duplicated())[0])
        first = next(row for row in range(repeated) if index[row] == index[repeated])
        what = "document" if len(keys) == 1 else "(query, document)"
        raise DataFileError(path, int(lines[repeated]), f"{what} {index[repeated]!r} already has a value on line "
                                                        f"{int(lines[first])}; keep one value per {what}")
    return index


def tsv_scheme(argument: str) -> TsvSource:
    """``tsv:PATH`` or ``tsv:PATH#COLUMN``."""
    path, _, column = argument.partition("#")
    return TsvSource(path, column or None)


class BeirLabelSource(TsvSource):
    """The gold group labels of a BEIR-layout folder, read strictly with the rest of the folder
    (:func:`pairmeasures.sideinfo.beir.read_beir`): labels of unknown queries or documents are errors."""

    provides = "labels"

    def __init__(self, folder: str | os.PathLike):
        import pandas as pd

        from .beir import existing, read_beir

        data = read_beir(folder)
        if data.labels is None:
            raise SideInfoError(f"{str(data.path)!r} has no labels.tsv (nor labels.tsv.gz; columns query-id, corpus-id, "
                                "group)")
        self.path = existing(data.path, "labels.tsv")
        self.kind_reason = f"{str(self.path)!r} holds gold group labels"
        self.values = data.labels["group"].to_numpy(dtype=object)
        self.by_query = True
        self._index = pd.MultiIndex.from_arrays([data.labels[c].to_numpy(dtype=object) for c in ("query_id", "doc_id")])


def beir_scheme(argument: str) -> BeirLabelSource:
    """``beir:DIR``: the gold labels ``DIR/labels.tsv`` of a BEIR-layout folder."""
    try:
        return BeirLabelSource(argument)
    except FileNotFoundError as exc:
        raise SideInfoError(f"beir:{argument}: {exc}") from None
