"""Dense stages from ``pyterrier-dr``: a bi-encoder on the pairmeasures embedding cache.

``bi_encoder()`` is a ``pyterrier_dr.BiEncoder``: used in a pipeline on a result frame with ``query`` and
``text`` it re-ranks (``bm25 >> pt.text.get_text(dataset, "text") >> pm.bi_encoder()``), and with a
``pyterrier_dr.FlexIndex`` it indexes and retrieves densely (``dense_retriever()`` keeps that index
like the PISA index of ``pm.bm25``). Its vectors come from
:class:`~pairmeasures.sideinfo.embed.Embedder`, so texts already embedded for polarity scores are not
embedded again. Needs the ``dense`` extra (``pip install 'pairmeasures[dense]'``).
"""

from __future__ import annotations

import os
from typing import Optional

import numpy as np

try:
    import pyterrier_dr
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("the bi-encoder stages need pyterrier-dr: pip install 'pairmeasures[dense]'") from exc

from ..sideinfo.embed import Embedder


class CachedBiEncoder(pyterrier_dr.BiEncoder):
    """A ``pyterrier_dr`` bi-encoder whose query and document vectors are ``embedder``'s (cached) embeddings.

    ``embedder``: an :class:`Embedder` (default: the offline all-MiniLM-L6-v2, L2-normalised, so that
    pyterrier-dr's dot product is the cosine similarity the model was trained for).
    """

    def __init__(self, embedder: Optional[Embedder] = None, *, text_field: str = "text", verbose: bool = False):
        self.embedder = embedder if embedder is not None else Embedder(normalize=True)
        super().__init__(batch_size=self.embedder.batch_size, text_field=text_field, verbose=verbose)
        self.model_name = self.embedder.model_name  # pyterrier-dr compares encoders by it

    def __repr__(self) -> str:
        return f"CachedBiEncoder({self.embedder!r})"

    def encode_queries(self, texts, batch_size: Optional[int] = None) -> np.ndarray:
        return self.embedder.embed(list(texts))

    def encode_docs(self, texts, batch_size: Optional[int] = None) -> np.ndarray:
        return self.embedder.embed(list(texts))

    def encode_queries_torch(self, texts, batch_size: Optional[int] = None):
        import torch

        return torch.from_numpy(self.encode_queries(texts, batch_size))


def bi_encoder(model: Optional[str | os.PathLike] = None, *, normalize: bool = True, text_field: str = "text",
               **embedder_options) -> CachedBiEncoder:
    """A ``pyterrier_dr`` bi-encoder for a sentence-transformers model folder (default: the offline
    all-MiniLM-L6-v2), reading and filling the embedding cache; ``embedder_options`` go to
    :class:`Embedder` (``batch_size``, ``device``, ``cache``, ``backend``)."""
    return CachedBiEncoder(Embedder(None if model is None else str(model), normalize=normalize, **embedder_options),
                           text_field=text_field)


def dense_retriever(source: str | os.PathLike, model: Optional[str | os.PathLike] = None, *, num_results: int = 1000,
                    text: str = "text", data: Optional[str | os.PathLike] = None,
                    index_dir: Optional[str | os.PathLike] = None, **embedder_options):
    """Dense retrieval over ``source`` (a pairmeasures dataset id or a BEIR-layout folder): ``bi_encoder(model)``
    with a ``pyterrier_dr.FlexIndex`` of the corpus, built once per corpus content and model (see
    :func:`~pairmeasures.pipelines.retrieval.cached_index`) and scanned exactly (``np_retriever``)."""
    from .retrieval import cached_index

    encoder = bi_encoder(model, text_field="text", **embedder_options)

    def build(folder, documents) -> None:
        (encoder >> pyterrier_dr.FlexIndex(str(folder)).indexer()).index(documents)

    folder = cached_index(source, "flex", build, text=text, data=data, index_dir=index_dir,
                          variant=encoder.embedder.key[:12])
    return encoder >> pyterrier_dr.FlexIndex(str(folder)).np_retriever(num_results=num_results)
