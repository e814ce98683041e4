"""Dense stages: a bi-encoder on the pairmeasures embedding cache.

``bi_encoder()`` is a ``pyterrier_dr.BiEncoder``: used in a pipeline on a result frame with ``query`` and
``text`` it re-ranks (``bm25 >> pt.text.get_text(dataset, "text") >> pm.bi_encoder()``), and with a
``pyterrier_dr.FlexIndex`` it indexes and retrieves densely (``dense_retriever()`` keeps that index
like the PISA index of ``pm.bm25``). Its vectors come from
:class:`~pairmeasures.compute.embed.Embedder`, so texts already embedded for polarity scores are not
embedded again. Needs the ``dense`` extra (``pip install 'pairmeasures[dense]'``).

:class:`DenseReranker` re-ranks (and :meth:`DenseReranker.doc_encoder` adds ``doc_vec``) exactly as the bi-encoder
does, without pyterrier-dr: the audit's ``dense`` re-ranking and ``mmr`` stages use it, so an audit whose vectors are
all cached imports neither pyterrier-dr nor torch (6 CPU-s and ~470 MiB saved; docs/audit.md, "Only what is measured
is embedded"). ``pyterrier_dr`` is imported on first use of ``bi_encoder``, ``CachedBiEncoder`` or
``dense_retriever``.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np
import pandas as pd
import pyterrier as pt

from ..compute.embed import Embedder
from ..compute.engines import current_engine

__all__ = ["CachedBiEncoder", "DenseReranker", "bi_encoder", "dense_reranker", "dense_index",  # noqa: F822 (lazy)
           "dense_retriever"]


def _pyterrier_dr():
    try:
        import pyterrier_dr
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError("the bi-encoder stages need pyterrier-dr: pip install 'pairmeasures[dense]'") from exc
    return pyterrier_dr


_CLASSES: dict = {}
#: Rows scored at once by DenseReranker (their vectors gathered a block at a time, not for the whole run at once).
_ROWS = 8192


def _cached_bi_encoder_class() -> type:
    """``CachedBiEncoder``, defined on first use (it subclasses ``pyterrier_dr.BiEncoder``, which imports torch)."""
    if "CachedBiEncoder" in _CLASSES:
        return _CLASSES["CachedBiEncoder"]
    pyterrier_dr = _pyterrier_dr()

    class CachedBiEncoder(pyterrier_dr.BiEncoder):  # type: ignore[name-defined]
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

    CachedBiEncoder.__module__ = __name__
    _CLASSES["CachedBiEncoder"] = CachedBiEncoder
    return CachedBiEncoder


def __getattr__(name: str) -> Any:
    if name == "CachedBiEncoder":
        return _cached_bi_encoder_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class DocVectors(pt.Transformer):
    """Adds ``doc_vec`` (the embedder's vector of each row's ``text_field``), as the bi-encoder's ``doc_encoder()``."""

    def __init__(self, embedder: Embedder, text_field: str = "text"):
        self.embedder = embedder
        self.text_field = text_field

    def __repr__(self) -> str:
        return f"DenseReranker({self.embedder!r}).doc_encoder()"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=[self.text_field])
        return inp.assign(doc_vec=list(self.embedder.embed(inp[self.text_field].tolist())))


class DenseReranker(pt.Transformer):
    """Re-ranks a result frame with ``query`` and ``text_field`` by the dot product of the ``embedder``'s query and
    document vectors: the scores and ranks of ``pyterrier_dr.BiEncoder`` re-ranking with the same vectors (as
    :func:`bi_encoder` gives), without importing pyterrier-dr or, while every vector is cached, torch.

    ``embedder``: default the offline all-MiniLM-L6-v2, L2-normalised (cosine similarity).
    """

    def __init__(self, embedder: Optional[Embedder] = None, *, text_field: str = "text"):
        self.embedder = embedder if embedder is not None else Embedder(normalize=True)
        self.text_field = text_field

    def __repr__(self) -> str:
        return f"DenseReranker({self.embedder!r})"

    def doc_encoder(self) -> DocVectors:
        """The transformer that adds ``doc_vec`` (for :class:`~pairmeasures.pipelines.mmr.TopKMMR`)."""
        return DocVectors(self.embedder, self.text_field)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.result_frame(inp, extra_columns=["query", self.text_field])
        if len(inp) == 0:
            return pt.model.add_ranks(inp.assign(score=pd.Series(dtype=np.float32)))
        # the sorted distinct queries and each row's among them, as np.unique gives them (pyterrier-dr's query
        # encoder), sorting the distinct texts only
        codes, distinct = pd.factorize(inp["query"].to_numpy())
        order = np.argsort(np.asarray(distinct, dtype=object))
        rank = np.empty(len(order), dtype=np.intp)
        rank[order] = np.arange(len(order))
        queries, inverse = np.asarray(distinct, dtype=object)[order], rank[codes]
        query_vectors = self.embedder.embed(list(queries))
        doc_vectors, doc_index = self.embedder.embed_distinct(inp[self.text_field].tolist())
        inverse = inverse.reshape(-1)
        scores = np.empty(len(inp), dtype=np.result_type(query_vectors, doc_vectors))
        for start in range(0, len(inp), _ROWS):  # per row, as pyterrier-dr's np.sum, a block of rows at a time
            end = start + _ROWS
            scores[start:end] = np.sum(query_vectors[inverse[start:end]] * doc_vectors[doc_index[start:end]], axis=1)
        return pt.model.add_ranks(inp.assign(score=scores))


def bi_encoder(model: Optional[str | os.PathLike] = None, *, normalize: bool = True, text_field: str = "text",
               **embedder_options):
    """A ``pyterrier_dr`` bi-encoder (a ``CachedBiEncoder``) for a sentence-transformers model folder (default: the
    offline all-MiniLM-L6-v2), reading and filling the embedding cache; ``embedder_options`` go to
    :class:`Embedder` (``batch_size``, ``device``, ``cache``, ``backend``)."""
    return _cached_bi_encoder_class()(Embedder(None if model is None else str(model), normalize=normalize,
                                               **embedder_options), text_field=text_field)


def dense_reranker(model: Optional[str | os.PathLike] = None, *, normalize: bool = True, text_field: str = "text",
                   **embedder_options) -> DenseReranker:
    """:class:`DenseReranker` for a model folder (default: the offline all-MiniLM-L6-v2), as :func:`bi_encoder`."""
    return DenseReranker(Embedder(None if model is None else str(model), normalize=normalize, **embedder_options),
                         text_field=text_field)


def dense_index(source: str | os.PathLike, model: Optional[str | os.PathLike] = None, *, text: str = "text",
                data: Optional[str | os.PathLike] = None, index_dir: Optional[str | os.PathLike] = None,
                **embedder_options) -> tuple:
    """``(encoder, folder)``: the ``bi_encoder(model)`` of :func:`dense_retriever` and the folder of its
    ``pyterrier_dr.FlexIndex`` of ``source``, built once per corpus content and model (see
    :func:`~pairmeasures.pipelines.retrieval.cached_index`). Inside ``pairmeasures audit --engine ray`` the corpus is
    first embedded in one job of the Ray pool."""
    from .retrieval import cached_index

    pyterrier_dr = _pyterrier_dr()
    encoder = bi_encoder(model, text_field="text", **embedder_options)

    def build(folder, documents) -> None:
        (encoder >> pyterrier_dr.FlexIndex(str(folder)).indexer()).index(documents)

    def prepare() -> None:
        pool = current_engine()
        if pool is not None and hasattr(pool, "embed"):
            # audit --engine ray: the corpus in one pool job, not one per indexing batch; the indexer reads the cache
            from .corpus_cache import fill_cache

            fill_cache(source, encoder.embedder, text=text, data=data)

    folder = cached_index(source, "flex", build, text=text, data=data, index_dir=index_dir,
                          variant=encoder.embedder.key[:12], prepare=prepare)
    return encoder, folder


def dense_retriever(source: str | os.PathLike, model: Optional[str | os.PathLike] = None, *, num_results: int = 1000,
                    text: str = "text", data: Optional[str | os.PathLike] = None,
                    index_dir: Optional[str | os.PathLike] = None, **embedder_options):
    """Dense retrieval over ``source`` (a pairmeasures dataset id or a BEIR-layout folder): ``bi_encoder(model)``
    with a ``pyterrier_dr.FlexIndex`` of the corpus (:func:`dense_index`), scanned exactly (``np_retriever``)."""
    encoder, folder = dense_index(source, model, text=text, data=data, index_dir=index_dir, **embedder_options)
    return encoder >> _pyterrier_dr().FlexIndex(str(folder)).np_retriever(num_results=num_results)
