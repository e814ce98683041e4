"""A PyTerrier transformer that adds a ``polarity`` column to result frames."""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np
import pandas as pd
import pyterrier as pt

from ..sideinfo.polarity import PolarityModel

__all__ = ["PolarityScorer"]


class PolarityScorer(pt.Transformer):
    """Adds ``polarity`` (a float, or a list of floats for several axes) to each retrieved document.

    Document text comes from the ``text_field`` column; when the frame lacks it and a
    ``dataset`` is given, it is fetched with ``pt.text.get_text``. Axes are fitted per query by
    the :class:`~pairmeasures.sideinfo.polarity.PolarityModel` (on its fit set, or on the
    retrieved documents themselves) and embeddings are cached, so scoring several pipelines over
    one corpus embeds each document once. ``errors="skip"`` leaves NaN for queries whose axes
    cannot be fitted (reported in one warning) instead of raising.
    """

    def __init__(self, model: PolarityModel, *, text_field: str = "text", dataset=None, errors: str = "raise"):
        if errors not in ("raise", "skip"):
            raise ValueError(f"errors must be 'raise' or 'skip', got {errors!r}")
        self.model = model
        self.text_field = text_field
        self.dataset = dataset
        self.errors = errors

    def __repr__(self) -> str:
        return f"PolarityScorer({self.model.embedder.model_name!r}, components={self.model.components})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        if self.text_field not in inp.columns and self.dataset is not None:
            inp = pt.text.get_text(self.dataset, self.text_field)(inp)
        pt.validate.result_frame(inp, extra_columns=[self.text_field])
        if len(inp) == 0:
            return inp.assign(polarity=pd.Series(dtype=float if self.model.components == 1 else object))
        before = set(self.model.skipped)
        texts = inp[self.text_field].tolist()
        wrong = next((row for row, text in enumerate(texts) if not isinstance(text, str)), None)
        if wrong is not None:
            value = texts[wrong]
            what = "missing" if pd.api.types.is_scalar(value) and pd.isna(value) else f"a {type(value).__name__}"
            raise ValueError(f"PolarityScorer: the {self.text_field!r} of document {inp['docno'].iloc[wrong]!r} of "
                             f"query {inp['qid'].iloc[wrong]!r} is {what}, not a string; fill or decode it (or drop "
                             "the row) before scoring")
        scores = self.model.score(inp["qid"].to_numpy(), texts, errors=self.errors)
        skipped = [q for q in self.model.skipped if q not in before]
        if skipped:
            warnings.warn(f"PolarityScorer: {len(skipped)} queries got no polarity (NaN): "
                          f"{self.model.skipped[skipped[0]]}", RuntimeWarning, stacklevel=2)
        values: Optional[object] = scores if scores.ndim == 1 else list(np.asarray(scores))
        return inp.assign(polarity=values)
