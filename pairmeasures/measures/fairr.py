"""The ``FaiRR`` and ``NFaiRR`` measures: discounted document neutrality (Rekabsaz et al. 2021).

Rekabsaz, Kopeinik, Schedl, *Societal Biases in Retrieved Contents: Measurement Framework and
Adversarial Mitigation for BERT Rankers* (SIGIR 2021), as Eq. 1-3 of the TExFAIR paper.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from ir_measures import measures

from ..io.memo import Memo
from ..math import DEGENERATE_NFAIRR, fairr_lists, neutrality, nfairr_lists
from ..sideinfo import SideInfoError, resource_key
from .base import MeasureValues, RangedParam, SideInput, degenerate_causes
from .ranked import RankedLists
from .registry import register_builtin
from .sideinputs import source_for
from .termbase import TERM_PARAMS, TEXT_INPUT, TermMeasure

__all__ = ["FaiRR", "NFaiRR"]

_NEUTRALITY_PARAMS = {
    **TERM_PARAMS,
    "missing": measures.ParamInfo(dtype=str, choices=("error", "skip", "neutral"), default="neutral", desc="a considered document without text (or without omega): count it as 'neutral', omega = 1 (default, the published intent; the reference code crashes), 'error', or 'skip' it"),
    "targets": measures.ParamInfo(dtype=str, default=None, desc="the balanced share J_G of each group within a document, e.g. 'female=0.5,male=0.5' (default: equal shares)"),
    "tau": RangedParam(dtype=(float, int), default=1, low=0, desc="a document with at most tau group-term occurrences is neutral (omega = 1)"),
    "omega": measures.ParamInfo(dtype=str, default=None, desc="resource giving precomputed neutrality per document (e.g. 'tsv:FILE' of corpus-id, omega) instead of computing it from text"),
}


class _FaiRR(TermMeasure):
    r"""Fairness of retrieval results (Rekabsaz et al. 2021; TExFAIR paper Eq. 1-2).

    .. math::  \mathrm{FaiRR}@k = \sum_{r \le k} \frac{\omega(d_r)}{\log_2(r + 1)}, \qquad
               \omega(d) = 1 - \sum_G \left| \frac{M^G(d)}{\sum_x M^x(d)} - J_G \right| \ \text{if}\ \sum_G M^G(d) > \tau, \text{ else } 1

    Unnormalised: compare systems with NFaiRR. Higher is fairer.
    """

    __name__ = "FaiRR"
    NAME = __name__
    PRETTY_NAME = "Fairness of Retrieval Results"
    SHORT_DESC = "Gender fairness: position-discounted sum of document neutrality (unnormalised; higher = fairer)."
    SUPPORTED_PARAMS = dict(_NEUTRALITY_PARAMS)
    DIRECTION = "higher-fairer"
    RANGE = "at most the sum of 1/log2(r + 1) over r <= k (grows with k)"
    PAGES = ("fairr.md",)
    REFERENCE = ("Rekabsaz, Kopeinik, Schedl: Societal Biases in Retrieved Contents: Measurement Framework and "
                 "Adversarial Mitigation for BERT Rankers, SIGIR 2021")

    def side_inputs(self) -> tuple[SideInput, ...]:
        if self.param("omega") is not None:
            return (SideInput(column="omega", param="omega", kind="scores", neutral=1.0),)
        return self.SIDE_INPUTS

    def omega(self, lists: RankedLists) -> np.ndarray:
        """ω of every row of prepared ``lists``."""
        if self.param("omega") is not None:
            return lists.column("omega")
        return neutrality(self.stats(lists).group_counts(), self.targets(), float(self.param("tau")))

    def compute(self, lists: RankedLists) -> MeasureValues:
        values = fairr_lists(self.omega(lists), lists.offsets)
        return MeasureValues(values=values, degenerate=np.zeros(values.size, dtype=bool))


_COLLECTION_IDEALS = Memo("NFaiRR collection ideals")


class _NFaiRR(_FaiRR):
    r"""Normalised fairness of retrieval results (Rekabsaz et al. 2021; TExFAIR paper Eq. 3).

    .. math::  \mathrm{NFaiRR}@k = \frac{\mathrm{FaiRR}@k}{\mathrm{IFaiRR}@k(S)}

    IFaiRR is the FaiRR of the best ordering of a background set :math:`S`: ``background='run'``
    (default) takes every document the system retrieved for the query (before the cutoff);
    ``'collection'`` every document of the ``text=`` resource, the same for all queries and
    systems (what the TExFAIR paper uses to compare systems). IFaiRR <= 0 gives 0 (degenerate).
    """

    __name__ = "NFaiRR"
    NAME = __name__
    PRETTY_NAME = "Normalised Fairness of Retrieval Results"
    SHORT_DESC = "Gender fairness: FaiRR divided by its ideal over a background set (1 = fairest)."
    SUPPORTED_PARAMS = {
        **_NEUTRALITY_PARAMS,
        "background": measures.ParamInfo(dtype=str, choices=("run", "collection"), default="run", desc="background set S for IFaiRR: 'run' (the documents retrieved for the query) or 'collection' (every document of the text resource)"),
    }
    DEGENERATE = DEGENERATE_NFAIRR
    RANGE = "at most 1; [0, 1] for two groups at equal targets"
    DEGENERATE_REASON = "no document of its background set has a positive neutrality (IFaiRR <= 0)"

    def check_params(self) -> None:
        super().check_params()
        if self.param("background") == "collection" and self.param("text") is None:
            raise ValueError(f"{self.NAME}(background='collection') reads the whole collection: name it with "
                             "text='corpus:DIR' or text='irds:DATASET'")

    def evaluate(self, lists: RankedLists) -> MeasureValues:
        ranking = self.prepare(lists)
        omega = self.omega(ranking)
        k = self.param("cutoff")
        if self.param("background") == "collection":
            ideal_omega = self._collection_ideal(k)
            background = np.tile(ideal_omega, ranking.query_ids.size)
            background_offsets = np.arange(ranking.query_ids.size + 1) * ideal_omega.size
        else:
            full = self.prepare(lists, cutoff=False) if k is not None else ranking
            background, background_offsets = self.omega(full), full.offsets
        result = nfairr_lists(omega, ranking.offsets, background, background_offsets, k)
        causes = degenerate_causes(result.degenerate, [(np.diff(background_offsets) == 0, "no background documents")],
                                   "IFaiRR <= 0 (no background document has a positive neutrality)")
        return MeasureValues(values=result.value, degenerate=result.degenerate, causes=causes)

    def depth(self) -> Optional[int]:
        return None if self.param("background") == "run" else self.param("cutoff")

    def _collection_ideal(self, k: Optional[int]) -> np.ndarray:
        """The k largest neutralities of the collection (all of them without a cutoff).

        ω never exceeds 1, so the scan stops as soon as k documents with ω = 1 are found. Kept per
        process by the text resource's content and the term list's, so editing either recomputes it.
        """
        resource = self.param("text")
        slot = (resource, float(self.param("tau")), tuple(self.targets()), k)
        version = (resource_key(resource), self.counter().lexicon.fingerprint)
        return _COLLECTION_IDEALS.get(slot, version, lambda: self._scan_collection(k))

    def _scan_collection(self, k: Optional[int]) -> np.ndarray:
        source = source_for(self, TEXT_INPUT)
        if not hasattr(source, "iter_texts"):
            raise SideInfoError(f"{self}: resource {self.param('text')!r} cannot list the whole collection")
        best = np.empty(0)
        batch: list[str] = []
        for text in source.iter_texts():
            batch.append(text)
            if len(batch) == 10_000:
                best = self._keep_best(best, batch, k)
                batch = []
                if k is not None and best.size == k and best.min() >= 1.0:
                    break
        return self._keep_best(best, batch, k)

    def _keep_best(self, best: np.ndarray, texts: list[str], k: Optional[int]) -> np.ndarray:
        if not texts:
            return best
        counts = self.counter().count(texts, remember=False).group_counts()
        values = np.concatenate([best, neutrality(counts, self.targets(), float(self.param("tau")))])
        return -np.sort(-values)[:k] if k is not None else values



FaiRR = _FaiRR()
NFaiRR = _NFaiRR()
register_builtin(FaiRR, NFaiRR)
