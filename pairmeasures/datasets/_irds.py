"""The pairmeasures datasets as ir_datasets datasets (imported only together with ir_datasets).

Every handler asks :func:`~pairmeasures.datasets._loaders.load_tables` for the records when it is
used, so where the files come from (``data=``, ``PAIRMEASURES_DATA``, the cache, a download) is
decided at first use, not at registration, and a change of ``PAIRMEASURES_DATA`` takes effect.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import ir_datasets
from ir_datasets.datasets.base import Dataset, FilteredQrels
from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries
from ir_datasets.indices import Docstore

from .._atomic import write_atomically
from ._catalogue import SPECS
from ._irdsfiles import ensure_irds_files
from ._loaders import DatasetSpec, Tables, load_tables
from ._records import GroupLabel, Qrel, Query
from ._resources import DatasetError, cache_root


class _Records:
    """One dataset's records, bound to a mirror folder (``data``) or to the default resolution."""

    def __init__(self, spec: DatasetSpec, data: Optional[str | os.PathLike]):
        self.spec, self.data = spec, data

    def tables(self) -> Tables:
        return load_tables(self.spec, self.data)


class _RecordIter:
    """An iterator over records that can also be sliced, as ir_datasets' ``docs_iter()[a:b]``."""

    def __init__(self, records: tuple):
        self._records, self._position = records, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self._position >= len(self._records):
            raise StopIteration
        self._position += 1
        return self._records[self._position - 1]

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _RecordIter(self._records[key])
        return self._records[key]


class _Docstore(Docstore):
    """Documents by id, from the records in memory."""

    def __init__(self, records: _Records):
        super().__init__(records.spec.doc_cls, "doc_id")
        self._records = records
        self._index: tuple[str, dict] = ("", {})

    def get_many_iter(self, doc_ids):
        tables = self._records.tables()
        if self._index[0] != tables.key:
            self._index = (tables.key, {doc.doc_id: doc for doc in tables.docs})
        found = self._index[1]
        return (found[doc_id] for doc_id in doc_ids if doc_id in found)


class PairDocs(BaseDocs):
    def __init__(self, records: _Records):
        self._records = records

    def docs_iter(self):
        return _RecordIter(self._records.tables().docs)

    def docs_count(self) -> int:
        return len(self._records.tables().docs)

    def docs_cls(self):
        return self._records.spec.doc_cls

    def docs_store(self, field: str = "doc_id", options=None) -> _Docstore:
        if field != "doc_id":
            raise ValueError(f"{self._records.spec.id} documents are stored by doc_id, not {field!r}")
        return _Docstore(self._records)

    def docs_namespace(self) -> str:
        return self._records.spec.id

    def docs_lang(self) -> str:
        return "en"


class PairQueries(BaseQueries):
    def __init__(self, records: _Records):
        self._records = records

    def queries_iter(self):
        return iter(self._records.tables().queries)

    def queries_cls(self):
        return Query

    def queries_namespace(self) -> str:
        return self._records.spec.id

    def queries_lang(self) -> str:
        return "en"


class PairQrels(BaseQrels):
    def __init__(self, records: _Records):
        self._records = records

    def qrels_iter(self):
        return iter(self._records.tables().qrels)

    def qrels_cls(self):
        return Qrel

    def qrels_defs(self) -> dict:
        return self._records.spec.qrels_defs


class PairLabels:
    """Gold labels and query metadata, reached through the dataset (``dataset.labels_iter()``)."""

    def __init__(self, records: _Records):
        self._records = records

    def labels_iter(self):
        """:class:`GroupLabel` records: the gold group of each judged (query, document) pair."""
        return iter(self._labels())

    def labels_cls(self):
        return GroupLabel

    def labels_path(self) -> Path:
        """The labels as a TSV file (``query-id``, ``corpus-id``, ``group``). Measures read them by the
        dataset's id, the same name on every machine: ``pm.rKL(group="irds:pair/procon")``."""
        tables = self._records.tables()
        path = cache_root() / ".parsed" / f"{self._records.spec.id.replace('/', '-')}-{tables.key}.labels.tsv"
        if not path.is_file():
            labels = self._labels()
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, "query-id\tcorpus-id\tgroup\n" +
                             "".join(f"{label.query_id}\t{label.doc_id}\t{label.group}\n" for label in labels))
        return path

    def query_info_iter(self):
        """Metadata of each query (topic and domains, split, category...): see :meth:`query_info_cls`."""
        return iter(self._records.tables().query_info)

    def query_info_cls(self):
        return self._records.spec.query_info_cls

    def _labels(self) -> tuple:
        labels = self._records.tables().labels
        if labels is None:
            raise DatasetError(f"{self._records.spec.id} has no gold labels here: add labels.tsv (query-id, corpus-id, "
                               "group) to its mirror folder")
        return labels


class _Checked:
    """ir_datasets' handler of another dataset's ``kind`` (``docs``, ``qrels``) for a dataset reading them from there
    (``documents_from``), made by ``make()`` on first use, once its files (those of ``kind``) are there
    (:func:`~._irdsfiles.ensure_irds_files`: ir_datasets fetches those missing, announced on stderr; a
    DatasetUnavailableError naming them where that fails). Nothing of ir_datasets' dataset is touched before, so
    registering the sets touches nothing: any call of msmarco-passage's collection, even ``docs_handler()``, runs
    ir_datasets' migration, which writes ``irds_version.txt`` and deletes a ``collection.tsv`` it did not mark."""

    def __init__(self, spec: DatasetSpec, kind: str, make):
        self._spec, self._kind, self._make, self._handler = spec, kind, make, None

    def __getattr__(self, name: str):
        if not name.startswith(f"{self._kind}_"):  # what the other handlers of the dataset answer
            raise AttributeError(name)
        if name == f"{self._kind}_handler":  # this checked handler, not the bare one
            return lambda: self
        if self._handler is None:  # made once the files are there
            ensure_irds_files(self._spec.id, tuple(f for f in self._spec.documents_files if f.kind == self._kind))
            self._handler = self._make()
        return getattr(self._handler, name)


def build(spec: DatasetSpec, data: Optional[str | os.PathLike] = None) -> Dataset:
    """The ir_datasets dataset of ``spec``, reading from ``data`` (else ``PAIRMEASURES_DATA``, the cache, a download)."""
    records = _Records(spec, data)
    if spec.documents_from:
        base = spec.documents_from
        docs = _Checked(spec, "docs", lambda: ir_datasets.load(base).docs_handler())
        judged = _Checked(spec, "qrels", lambda: FilteredQrels(ir_datasets.load(base).qrels_handler(),
                                                               lambda: {q.query_id for q in records.tables().queries}))
        return Dataset(docs, PairQueries(records), judged)
    return Dataset(PairDocs(records), PairQueries(records), PairQrels(records), PairLabels(records))


def register() -> None:
    """Register every pairmeasures dataset with ir_datasets (once)."""
    known = set(ir_datasets.registry)
    for spec in SPECS:
        if spec.id not in known:
            ir_datasets.registry.register(spec.id, build(spec))
