"""Side values from tab-separated files: the ``tsv:`` resources (scores or labels by document, or by
query and document) and the ``beir:`` resources (a BEIR-layout folder's gold labels). Every problem
names the file and line (:mod:`pairmeasures.io.beir` reads the lines)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional

import numpy as np

from ..io.beir import DataFileError, existing, read_table
from ..io.errors import SideInfoError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["KeyedValues", "TsvSource", "BeirLabelSource", "tsv_scheme", "beir_scheme"]

_QUERY_KEYS = ("query-id", "query_id", "qid")
_DOC_KEYS = ("corpus-id", "doc_id", "docno")


class KeyedValues:
    """Values looked up by document id, or by (query id, document id) when ``by_query``: ``values`` (an
    object array of labels, or floats) aligned with ``_index`` (a pandas index of the keys)."""

    values: np.ndarray
    by_query: bool
    _index: "pd.Index"

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


class TsvSource(KeyedValues):
    """Values from a tab-separated file keyed by document id, or by (query id, document id).

    ``provides`` is ``"scores"`` when every value column holds finite numbers only, else
    ``"labels"`` (one column, values as written); ``kind_reason`` says why, naming a cell.
    """

    def __init__(self, path: str | os.PathLike, value_column: Optional[str] = None):
        self.path = Path(path).expanduser()
        if self.path.is_dir():
            hint = (f"; for its gold labels write beir:{path}" if (self.path / "labels.tsv").is_file() else "")
            raise SideInfoError(f"side-information file {str(self.path)!r} is a folder, not a file: name the TSV file "
                                f"inside it (tsv:FOLDER/FILE.tsv){hint}")
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
    (:class:`~pairmeasures.io.beirfolder.StoredFolder`: the documents into the on-disk store, not into
    memory): labels of unknown queries or documents are errors."""

    provides = "labels"

    def __init__(self, folder: str | os.PathLike):
        import pandas as pd

        from ..io.beirfolder import StoredFolder

        data = StoredFolder(folder)
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
