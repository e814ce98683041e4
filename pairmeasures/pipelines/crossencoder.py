"""A re-ranker for any sentence-transformers ``CrossEncoder`` (a local folder or a hub name).

No cross-encoder weights install offline with pairmeasures: give the folder of one you have (the
tests use a tiny model they initialise themselves).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import pyterrier as pt


class CrossEncoderReranker(pt.Transformer):
    """Re-ranks a result frame with ``query`` and ``text`` by a sentence-transformers ``CrossEncoder``
    loaded from ``model`` (a local folder or a hub name): ``score`` is its prediction for (query, text)."""

    def __init__(self, model: str | os.PathLike, *, text_field: str = "text", batch_size: int = 32,
                 device: Optional[str] = None):
        self.model = str(model)
        if self.model.startswith((".", "/", "~")) and not Path(self.model).expanduser().is_dir():
            raise FileNotFoundError(f"cross-encoder folder {self.model!r} does not exist: give the folder of a "
                                    "sentence-transformers CrossEncoder (none installs offline with pairmeasures)")
        self.text_field = text_field
        self.batch_size = batch_size
        self.device = device
        self._encoder = None

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.model!r})"

    def _load(self):
        if self._encoder is None:
            from sentence_transformers import CrossEncoder

            self._encoder = CrossEncoder(self.model, device=self.device)
        return self._encoder

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.result_frame(inp, extra_columns=["query", self.text_field])
        if len(inp) == 0:
            return pt.model.add_ranks(inp.assign(score=np.zeros(0)))
        pairs = list(zip(inp["query"].tolist(), inp[self.text_field].tolist()))
        scores = np.asarray(self._load().predict(pairs, batch_size=self.batch_size, show_progress_bar=False),
                            dtype=np.float64)
        if scores.ndim != 1:
            raise ValueError(f"the CrossEncoder {self.model!r} gives {scores.shape[1]} scores per (query, text); "
                             "a re-ranker needs a model with one (num_labels=1)")
        return pt.model.add_ranks(inp.assign(score=scores))


def cross_encoder(model: str | os.PathLike, *, text_field: str = "text", batch_size: int = 32,
                  device: Optional[str] = None) -> CrossEncoderReranker:
    """A re-ranker for the sentence-transformers ``CrossEncoder`` in ``model`` (see :class:`CrossEncoderReranker`)."""
    return CrossEncoderReranker(model, text_field=text_field, batch_size=batch_size, device=device)
