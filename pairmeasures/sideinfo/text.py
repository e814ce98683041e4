"""Document text resources for the term-based measures: ``corpus:DIR`` and ``irds:DATASET``.

A :class:`TextSource` supplies each ranked document's text; :func:`corpus_scheme` reads it from a
BEIR folder's ``corpus.jsonl``, :func:`irds_scheme` from an ``ir_datasets`` docs store.
"""

from __future__ import annotations

from typing import Iterator, Mapping, Optional

import numpy as np

from . import SideInfoError, resource_options

__all__ = ["TextSource", "corpus_scheme", "irds_scheme"]


class TextSource:
    """Document text for the term-based measures (``text='corpus:DIR'`` or ``text='irds:ID'``)."""

    provides = "text"

    def __init__(self, name: str, texts: Optional[Mapping[str, str]] = None, loader=None, iterator=None):
        self.name = name
        self._texts = texts
        self._loader = loader
        self._iterator = iterator

    def lookup(self, query_ids: np.ndarray, doc_ids: np.ndarray, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        ids = [str(d) for d in doc_ids]
        if self._texts is not None:
            found = [self._texts.get(d) for d in ids]
        else:
            unique = list(dict.fromkeys(ids))
            loaded = self._loader(unique)
            found = [loaded.get(d) for d in ids]
        out = np.empty(len(found), dtype=object)
        out[:] = found
        return out

    def iter_texts(self) -> Iterator[str]:
        """Every document's text, for a whole-collection background."""
        if self._texts is not None:
            return iter(self._texts.values())
        return self._iterator()

    def __repr__(self) -> str:
        return f"TextSource({self.name!r})"


def _fields_option(argument: str, scheme: str) -> tuple[str, str]:
    location, options = resource_options(argument, ("fields",), scheme)
    return location, options.get("fields", "text")


def corpus_scheme(argument: str) -> TextSource:
    """``corpus:DIR[?fields=text|title|title+text]``: document text from a BEIR folder's corpus.jsonl."""
    from .beir import check_text_field, read_beir

    location, fields = _fields_option(argument, "corpus")
    check_text_field(fields)
    try:
        data = read_beir(location)
    except FileNotFoundError as exc:
        raise SideInfoError(f"corpus:{argument}: {exc}") from None
    return TextSource(f"corpus:{argument}", texts={d: data.document_text(d, fields) for d in data.corpus})


def irds_scheme(argument: str) -> TextSource:
    """``irds:DATASET[?fields=title+text]``: document text from an ir_datasets dataset's docs store."""
    import ir_datasets

    dataset_id, fields = _fields_option(argument, "irds")
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError as exc:
        raise SideInfoError(f"irds:{argument}: ir_datasets has no dataset {dataset_id!r} ({exc})") from None
    if not dataset.has_docs():
        raise SideInfoError(f"irds:{argument}: dataset {dataset_id!r} has no documents")
    names = fields.split("+")
    missing = [f for f in names if f not in dataset.docs_cls()._fields]
    if missing:
        raise SideInfoError(f"irds:{argument}: documents have no field(s) {missing}; fields: {list(dataset.docs_cls()._fields)}")

    def text_of(doc) -> str:
        return " ".join(str(getattr(doc, f)) for f in names if getattr(doc, f)).strip()

    def load(doc_ids: list[str]) -> dict:
        return {d: text_of(doc) for d, doc in dataset.docs_store().get_many(doc_ids).items()}

    return TextSource(f"irds:{argument}", loader=load, iterator=lambda: (text_of(d) for d in dataset.docs_iter()))

