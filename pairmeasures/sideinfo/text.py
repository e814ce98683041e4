"""Document text resources for the term-based measures: ``corpus:DIR`` (and ``irds:DATASET``).

A :class:`TextSource` supplies each ranked document's text; :func:`corpus_scheme` reads it from a
BEIR folder's ``corpus.jsonl`` (by id, from its on-disk store); :mod:`pairmeasures.sideinfo.irds` from an
``ir_datasets`` docs store.
"""

from __future__ import annotations

from functools import partial
from typing import Iterator, Mapping, Optional

import numpy as np

from . import SideInfoError, resource_options

__all__ = ["TextSource", "corpus_scheme"]


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


def corpus_scheme(argument: str) -> TextSource:
    """``corpus:DIR[?fields=text|title|title+text]``: document text from a BEIR folder's corpus.jsonl, read as a
    :class:`~pairmeasures.io.beirfolder.StoredFolder` (checked whole, once, into its on-disk store); a lookup
    fetches the texts of the documents asked for only."""
    from ..io.beir import check_text_field
    from ..io.beirfolder import StoredFolder

    location, options = resource_options(argument, ("fields",), "corpus")
    fields = check_text_field(options.get("fields", "text"))
    data = StoredFolder(location)
    try:
        data.tables()  # the folder checked now (files, every line), as a resource is checked when it is named
    except FileNotFoundError as exc:
        raise SideInfoError(f"corpus:{argument}: {exc}") from None
    return TextSource(f"corpus:{argument}", loader=data.text_loader(fields), iterator=partial(data.iter_texts, fields))
