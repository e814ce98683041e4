"""A PyTerrier transformer that adds document text to result frames, from a dataset or a BEIR-layout folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import pandas as pd
import pyterrier as pt

from ..sideinfo.beir import check_text_field, record_text

__all__ = ["DocumentText"]


class DocumentText(pt.Transformer):
    """Adds a ``text`` column holding each document's ``text`` field(s) (``"text"``, ``"title"`` or
    ``"title+text"``), looked up in ``source``: a pairmeasures dataset id (``"pair/procon"``, read from
    ``data`` or ``$PAIRMEASURES_DATA``) or a BEIR-layout folder. The corpus is read once, on first use."""

    def __init__(self, source: str | os.PathLike, *, text: str = "text", data: Optional[str | os.PathLike] = None):
        self.source = source
        self.text = check_text_field(text)
        self.data = data
        self._texts: Optional[dict] = None

    def __repr__(self) -> str:
        return f"DocumentText({str(self.source)!r}, text={self.text!r})"

    def _lookup(self) -> dict:
        if self._texts is None:
            folder = Path(self.source).expanduser()
            if folder.is_dir():
                from ..sideinfo.beir import read_beir

                beir = read_beir(folder)
                self._texts = {doc_id: beir.document_text(doc_id, self.text) for doc_id in beir.corpus}
            else:
                from .. import datasets

                dataset = datasets.load(str(self.source).removeprefix("irds:"), self.data)
                self._texts = {doc.doc_id: record_text(doc._asdict(), self.text) for doc in dataset.docs_iter()}
        return self._texts

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.result_frame(inp)
        texts = self._lookup()
        docnos = inp["docno"].tolist()
        missing = next((d for d in docnos if d not in texts), None)
        if missing is not None:
            raise KeyError(f"DocumentText: document {missing!r} is not in the corpus of {str(self.source)!r}; the "
                           "run and the dataset do not match")
        return inp.assign(text=[texts[d] for d in docnos])
