"""A PyTerrier transformer that adds document text to result frames, from a dataset or a BEIR-layout folder."""

from __future__ import annotations

import os
from typing import Optional

import pandas as pd
import pyterrier as pt

from ..datasets.corpus import Corpus, MissingDocumentsError, open_corpus
from ..io.beir import check_text_field

__all__ = ["DocumentText"]


class DocumentText(pt.Transformer):
    """Adds a ``text`` column holding each document's ``text`` field(s) (``"text"``, ``"title"`` or
    ``"title+text"``), looked up by id in ``source``: a pairmeasures dataset id (``"pair/procon"``, read from
    ``data`` or ``$PAIRMEASURES_DATA``), a BEIR-layout folder, or a
    :class:`~pairmeasures.datasets.corpus.Corpus`. Only the documents of each frame are looked up."""

    def __init__(self, source: "str | os.PathLike | Corpus", *, text: str = "text",
                 data: Optional[str | os.PathLike] = None):
        self.source = source
        self.text = check_text_field(text)
        self.data = data
        self._corpus: Optional[Corpus] = None

    def __repr__(self) -> str:
        name = self.source.name if isinstance(self.source, Corpus) else str(self.source)
        return f"DocumentText({name!r}, text={self.text!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.result_frame(inp)
        if self._corpus is None:
            self._corpus = open_corpus(self.source, self.data)
        try:
            texts = self._corpus.texts(inp["docno"].tolist(), self.text)
        except MissingDocumentsError as error:
            raise KeyError(f"DocumentText: {error}") from None
        return inp.assign(text=texts)
