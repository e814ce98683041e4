"""Resources named by an ``ir_datasets`` dataset id: ``irds:DATASET[?fields=title+text]``.

One resource serves whichever kind a measure needs: document text from the dataset's docs store
(``TExFAIR(text="irds:pair/grep-biasir?fields=title+text")``) and its gold group labels by (query,
document) (``rKL(group="irds:pair/procon")``); ``pca:irds:DATASET`` fits polarity axes on its labelled
documents (:meth:`pairmeasures.sideinfo.polarity.FitSet.from_dataset`). The name is the same on every
machine: where the files are is ir_datasets' concern (for the ``pair/...`` datasets, ``PAIRMEASURES_DATA``
or the download cache), so these resources are cached by name.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from . import SideInfoError, resource_options
from .text import TextSource
from .tsv import KeyedValues

__all__ = ["DatasetSource", "DatasetLabelSource", "load_dataset", "dataset_text", "irds_scheme"]


def load_dataset(dataset_id: str):
    """The ir_datasets dataset ``dataset_id``; an unknown id is a :class:`SideInfoError` listing the
    ``pair/...`` datasets."""
    import ir_datasets

    try:
        return ir_datasets.load(dataset_id)
    except KeyError:
        pairs = [name for name in ir_datasets.registry if name.startswith("pair/")]
        raise SideInfoError(f"ir_datasets has no dataset {dataset_id!r}; pairmeasures registers {', '.join(pairs)} "
                            "(any other ir_datasets id works too)") from None


def dataset_text(dataset, name: str, text_of: Callable) -> TextSource:
    """Document text from ``dataset``'s docs store, ``text_of(document record)`` per document."""
    def load(doc_ids: list[str]) -> dict:
        return {d: text_of(doc) for d, doc in dataset.docs_store().get_many(doc_ids).items()}

    return TextSource(name, loader=load, iterator=lambda: (text_of(d) for d in dataset.docs_iter()))


class DatasetLabelSource(KeyedValues):
    """The gold group labels of a dataset (its ``labels_iter()``: ``query_id``, ``doc_id``, ``group``)."""

    provides = "labels"

    def __init__(self, dataset, dataset_id: str):
        import pandas as pd

        labels = list(dataset.labels_iter())
        self.kind_reason = f"dataset {dataset_id!r} has gold group labels"
        self.values = np.asarray([label.group for label in labels], dtype=object)
        self.by_query = True
        self._index = pd.MultiIndex.from_arrays([np.asarray([label.query_id for label in labels], dtype=object),
                                                 np.asarray([label.doc_id for label in labels], dtype=object)])
        if not self._index.is_unique:
            query_id, doc_id = self._index[self._index.duplicated()][0]
            raise SideInfoError(f"dataset {dataset_id!r} labels query {query_id!r} and document {doc_id!r} twice")
        self.name = dataset_id

    def __repr__(self) -> str:
        return f"DatasetLabelSource({self.name!r})"


class DatasetSource:
    """``irds:DATASET``: the document text and the gold labels of a dataset, whichever a measure needs.

    ``provides`` lists the kinds the dataset has (``"text"`` with documents, ``"labels"`` with
    ``labels_iter()``); :meth:`for_kind` gives the source of one kind, built on first use.
    """

    def __init__(self, name: str, dataset, dataset_id: str, fields: str):
        self.name, self.dataset, self.dataset_id, self.fields = name, dataset, dataset_id, fields
        has_labels = hasattr(dataset, "labels_iter")
        self.provides = tuple(kind for kind, has in (("text", dataset.has_docs()), ("labels", has_labels)) if has)
        if not self.provides:
            raise SideInfoError(f"{name}: dataset {dataset_id!r} has neither documents nor gold labels")
        lacks = [what for what, has in (("documents", dataset.has_docs()), ("gold labels", has_labels)) if not has]
        self.kind_reason = f"dataset {dataset_id!r} has no {' and no '.join(lacks)}" if lacks else ""
        if dataset.has_docs():
            names = fields.split("+")
            known = list(dataset.docs_cls()._fields)
            if any(f not in known for f in names):
                raise SideInfoError(f"{name}: documents have no field(s) {[f for f in names if f not in known]}; "
                                    f"fields: {known}")
        self._kinds: dict = {}

    def for_kind(self, kind: str):
        """The source of document ``text`` or gold ``labels``, built once."""
        if kind not in self._kinds:
            self._kinds[kind] = self._text() if kind == "text" else self._labels()
        return self._kinds[kind]

    def _text(self) -> TextSource:
        names = self.fields.split("+")

        def text_of(doc) -> str:
            return " ".join(str(getattr(doc, f)) for f in names if getattr(doc, f)).strip()

        return dataset_text(self.dataset, self.name, text_of)

    def _labels(self) -> DatasetLabelSource:
        try:
            return DatasetLabelSource(self.dataset, self.dataset_id)
        except ValueError as exc:  # e.g. the dataset's own error: a mirror folder without labels.tsv
            raise SideInfoError(f"{self.name}: {exc}") from exc

    def __repr__(self) -> str:
        return f"DatasetSource({self.name!r})"


def irds_scheme(argument: str) -> DatasetSource:
    """``irds:DATASET[?fields=title+text]``: the text (``fields``, default ``text``) and gold labels of an
    ir_datasets dataset."""
    dataset_id, options = resource_options(argument, ("fields",), "irds")
    try:
        dataset = load_dataset(dataset_id)
    except SideInfoError as exc:
        raise SideInfoError(f"irds:{argument}: {exc}") from None
    return DatasetSource(f"irds:{argument}", dataset, dataset_id, options.get("fields", "text"))
