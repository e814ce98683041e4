"""What system specs are built against: :class:`SystemContext`, and the stages it inserts or shares."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, TypeVar

if TYPE_CHECKING:
    from ..compute.engines import ComputeEngine
    from ..datasets.corpus import Corpus
    from ..sideinfo.polarity import PolarityModel

__all__ = ["SystemContext"]

T = TypeVar("T")


@dataclass
class SystemContext:
    """What specs are built against: the corpus ``source`` (a pairmeasures dataset id such as ``"pair/procon"``,
    a BEIR-layout folder, or a :class:`~pairmeasures.datasets.corpus.Corpus`), its mirror ``data``, the document
    ``text`` field(s), the polarity model of inserted :class:`PolarityScorer` stages (``None``: fitted on each
    query's candidates), the dense ``model`` folder (``None``: the offline default), first-stage depth
    ``num_results``, the default ``k`` of re-rankers and where BM25 and dense indexes are kept (``index_dir``;
    ``None``: the cache directory) and the compute ``engine`` (``None``: this process; the audit's Ray pool with
    ``--engine ray``) that stages spending model time per query run on (:meth:`on_engine`). Every system built in one context shares its corpus, text lookups, polarity
    scorer and encoders."""

    source: "str | os.PathLike | Corpus"
    data: Optional[str | os.PathLike] = None
    text: str = "text"
    polarity_model: Optional["PolarityModel"] = None
    model: Optional[str] = None
    num_results: int = 100
    k: int = 10
    index_dir: Optional[str | os.PathLike] = None
    #: Where model work runs: ``None`` (this process), or the compute engine of ``--engine ray``
    #: (:class:`~pairmeasures.compute.raypool.RayPool`), which stages that spend model time per query run on.
    engine: Optional["ComputeEngine"] = None
    _shared: dict = field(default_factory=dict, init=False, repr=False)

    def shared(self, key: str, make: Callable[[], T]) -> T:
        """One object per key for every system built in this context (text lookups, scorers, encoders)."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]

    @property
    def corpus(self) -> "Corpus":
        """The corpus of ``source``, resolved once (:func:`~pairmeasures.datasets.corpus.open_corpus`)."""
        from ..datasets.corpus import open_corpus

        return self.shared("corpus", lambda: open_corpus(self.source, self.data))

    def on_engine(self, key: str, stage):
        """``stage`` (a PyTerrier transformer that spends model time per query) where the context's engine runs such
        work: ``stage`` itself in this process; over query partitions of the engine's Ray otherwise
        (:class:`~pairmeasures.pipelines.onray.OnRay`), one per ``key``."""
        if self.engine is None:
            return stage
        from .onray import OnRay

        return self.shared(f"{key} on the engine", lambda: OnRay(stage, self.engine))

    def document_text(self):
        """The stage that adds document ``text`` (inserted before stages that read it)."""
        from .text import DocumentText

        return self.shared("text", lambda: DocumentText(self.corpus, text=self.text))

    def polarity_scorer(self, depth: Optional[int] = None):
        """The stage that adds ``polarity`` with the context's polarity model (inserted before stages that read it), to
        each query's top ``depth`` rows (``None``: every row): one per depth, all on one model."""
        from ..sideinfo.polarity import PolarityModel
        from .polarity import PolarityScorer

        model = self.shared("polarity model", lambda: self.polarity_model or PolarityModel())
        return self.shared(f"polarity:{depth}", lambda: PolarityScorer(model, errors="skip", depth=depth))

    def bi_encoder(self, model: Optional[str] = None):
        """The bi-encoder re-ranker of ``model`` (default: the context's), one per model: a
        :class:`~pairmeasures.pipelines.dense.DenseReranker` (pyterrier-dr's scores without importing it)."""
        from .dense import dense_reranker

        model = model if model is not None else self.model
        return self.shared(f"bi_encoder:{model}", lambda: dense_reranker(model))
