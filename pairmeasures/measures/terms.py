"""Term-based gender-bias measures: TExFAIR, TED, AWRF, FaiRR, NFaiRR, RaB and ARaB.

They read each ranked document's text (the run's ``text`` column, or a resource named by
``text=``, e.g. ``corpus:DIR`` or ``irds:DATASET``) and a term list mapping words to groups
(``terms=``: the built-in ``gender`` list or a ``term,group`` file). Texts are tokenised and
counted once per process for all of them (:mod:`pairmeasures.sideinfo.terms`); the formulas are
in :mod:`pairmeasures.math`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from ir_measures import measures

from ..math import (
    DEGENERATE_NFAIRR,
    awrf_lists,
    fairr_lists,
    gender_magnitudes,
    ibbr_magnitudes,
    max_ted,
    neutrality,
    nfairr_lists,
    rank_bias_lists,
    texfair_lists,
)
from ..sideinfo import SideInfoError, resolve, resource_key
from ..sideinfo.memo import Memo
from ..sideinfo.termcount import TermCounter, TermStats, term_counter
from ..sideinfo.termlists import OVERLAPS, parse_targets
from ..sideinfo.tokenizers import TOKENIZERS
from .base import COMMON_PARAMS, MeasureValues, PairMeasure, RangedParam, SideInput, degenerate_causes
from .ranked import RankedLists

__all__ = ["TermMeasure", "TExFAIR", "TED", "AWRF", "FaiRR", "NFaiRR", "RaB", "ARaB"]

TEXT_INPUT = SideInput(column="text", param="text", kind="text", neutral="")

_TERM_PARAMS = {
    **COMMON_PARAMS,
    "missing": measures.ParamInfo(dtype=str, choices=("error", "skip", "neutral"), default="error", desc="a considered document without text: 'error' (default), 'skip' it, or count it as 'neutral' (no terms)"),
    "text": measures.ParamInfo(dtype=str, default=None, desc="resource giving document text ('corpus:DIR[?fields=title+text]', 'irds:DATASET[?fields=...]') instead of the run's text column"),
    "terms": measures.ParamInfo(dtype=str, default="gender", desc="term list: a built-in name ('gender') or a file of 'term,group' lines"),
    "tokenizer": measures.ParamInfo(dtype=str, choices=TOKENIZERS, default="words", desc="'words': lower-case, split at every non-letter/digit (default); 'whitespace': text.lower().split(' ') as the reference code"),
    "overlap": measures.ParamInfo(dtype=str, choices=OVERLAPS, default="error", desc="a term listed for two groups: 'error' (default), count it for 'each' group (NFaiRR reference), or for the 'first' one"),
}
_TARGETS = measures.ParamInfo(dtype=str, default=None, desc="target share per group, e.g. 'female=0.5,male=0.5' (default: equal shares)")


class TermMeasure(PairMeasure):
    """Shared machinery: the term list, targets and term statistics of the considered documents."""

    SIDE_INPUTS = (TEXT_INPUT,)
    SUPPORTED_PARAMS = dict(_TERM_PARAMS)

    def check_params(self) -> None:
        super().check_params()
        lexicon = self.counter().lexicon
        if len(lexicon.groups) < 2:  # one group's share is always 1: every ranking would look fair
            raise ValueError(f"{self}: the term list {lexicon.source!r} has only the group {lexicon.groups[0]!r}; "
                             f"{self.NAME} compares groups, so the list needs terms of at least two groups")
        if "targets" in self.SUPPORTED_PARAMS:
            self.targets()  # an unknown group or shares not summing to 1 fail where they are written

    def counter(self) -> TermCounter:
        return term_counter(self.param("terms"), self.param("tokenizer"), self.param("overlap"))

    def targets(self) -> np.ndarray:
        return parse_targets(self.param("targets"), self.counter().lexicon.groups)

    def stats(self, lists: RankedLists) -> TermStats:
        return self.counter().count(lists.column("text"))


class _TED(TermMeasure):
    r"""Term exposure-based divergence (Abolghasemi et al. 2024, Eq. 8-12): lower is fairer.

    .. math::  \mathrm{TED}@k = \sum_G \left| p(G \mid q, k) - \hat p_G \right| \cdot \mathrm{RBDF}(q, k)

    with :math:`p(G \mid q, k)` the share of term exposure
    :math:`\sum_{r \le k} \frac{\mathrm{tf}(t, d_r)/|d_r|}{\log_2(r + 1)}` on group :math:`G`'s terms
    and RBDF the share of position weight on documents with a group term (``rbdf=False`` drops it).
    """

    __name__ = "TED"
    NAME = __name__
    PRETTY_NAME = "Term Exposure-based Divergence"
    SHORT_DESC = "Gender bias: divergence of group term exposure in the top-k from the targets (lower = fairer)."
    SUPPORTED_PARAMS = {
        **_TERM_PARAMS,
        "targets": _TARGETS,
        "rbdf": measures.ParamInfo(dtype=bool, default=True, desc="multiply the divergence by the rank-biased discounting factor (Eq. 12), so documents without group terms count"),
    }
    DEGENERATE_REASON = "no group term in its documents (the divergence is undefined without RBDF)"

    def _results(self, lists: RankedLists):
        stats = self.stats(lists)
        return texfair_lists(stats.group_counts(), stats.lengths, self.targets(), lists.offsets, self.param("rbdf"))

    def compute(self, lists: RankedLists) -> MeasureValues:
        return self._values(lists, self._results(lists)[0])

    def _values(self, lists: RankedLists, result) -> MeasureValues:
        causes = degenerate_causes(result.degenerate, [(lists.lengths == 0, "no documents")], "no group terms")
        return MeasureValues(values=result.value, degenerate=result.degenerate, causes=causes)


class _TExFAIR(_TED):
    r"""Term exposure-based fairness (Abolghasemi et al. 2024, Eq. 13): higher is fairer.

    .. math::  \mathrm{TExFAIR}@k = \max \mathrm{TED} - \mathrm{TED}@k, \qquad
               \max \mathrm{TED} = 2 \left(1 - \min_G \hat p_G\right)

    (1 - TED for two groups at ½), with TED as in :data:`TED` (RBDF on by default).
    """

    __name__ = "TExFAIR"
    NAME = __name__
    PRETTY_NAME = "Term Exposure-based Fairness"
    SHORT_DESC = "Gender fairness from the exposure of group terms in the whole top-k (higher = fairer)."

    @property
    def DEGENERATE(self) -> float:  # type: ignore[override]  # no group exposure: nothing biased shown
        return max_ted(self.targets())

    def compute(self, lists: RankedLists) -> MeasureValues:
        return self._values(lists, self._results(lists)[1])


class _AWRF(TermMeasure):
    r"""Attention-weighted rank fairness (Sapiezynski et al. 2019; TExFAIR paper Eq. 4-6): lower is fairer.

    .. math::  \mathrm{AWRF}@k = \Delta\!\left( \frac{E}{\lVert E \rVert_1}, \hat p \right), \qquad
               E = \sum_{r \le k} v_r\, a_{d_r}

    Alignment :math:`a_d`: ``exposure`` gives :math:`a^G_d = \sum_{t \in V_G} \mathrm{tf}(t, d)/|d|`
    (then AWRF with log weights and L1 is TED without RBDF), ``share`` gives each document's group
    shares :math:`M^G(d) / \sum_x M^x(d)`, with the target shares for a document without group
    terms (the TExFAIR paper's Eq. 14). Weights :math:`v_r`: ``log`` :math:`1/\log_2(r+1)`,
    ``uniform``, ``geometric`` :math:`p^{r-1}`. Distance :math:`\Delta`: ``l1`` or ``jsd``.
    """

    __name__ = "AWRF"
    NAME = __name__
    PRETTY_NAME = "Attention-Weighted Rank Fairness"
    SHORT_DESC = "Gender bias: distance between the attention-weighted group distribution of the top-k and the targets (lower = fairer)."
    SUPPORTED_PARAMS = {
        **_TERM_PARAMS,
        "targets": _TARGETS,
        "alignment": measures.ParamInfo(dtype=str, choices=("exposure", "share"), default="exposure", desc="document-group association: 'exposure' (term frequency / length, as TExFAIR) or 'share' (group shares of the document's terms; the targets when it has none)"),
        "weights": measures.ParamInfo(dtype=str, choices=("log", "uniform", "geometric"), default="log", desc="attention per rank: 'log' 1/log2(r+1), 'uniform', 'geometric' patience^(r-1)"),
        "patience": RangedParam(dtype=(float, int), default=0.5, low=0, low_open=True, high=1, desc="the continuation probability of weights='geometric'"),
        "distance": measures.ParamInfo(dtype=str, choices=("l1", "jsd"), default="l1", desc="'l1': sum of absolute differences; 'jsd': Jensen-Shannon divergence in bits"),
    }
    DEGENERATE_REASON = "no group exposure at all"

    def compute(self, lists: RankedLists) -> MeasureValues:
        stats = self.stats(lists)
        counts = stats.group_counts()
        targets = self.targets()
        if self.param("alignment") == "exposure":
            with np.errstate(divide="ignore", invalid="ignore"):
                alignment = np.where(stats.lengths[:, None] > 0, counts / stats.lengths[:, None], 0.0)
        else:
            total = counts.sum(axis=1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                alignment = np.where(total > 0, counts / total, targets)
        result = awrf_lists(alignment, targets, lists.offsets, self.param("weights"), self.param("distance"),
                            float(self.param("patience")))
        causes = degenerate_causes(result.degenerate, [(lists.lengths == 0, "no documents")], "no group exposure")
        return MeasureValues(values=result.value, degenerate=result.degenerate, causes=causes)


_NEUTRALITY_PARAMS = {
    **_TERM_PARAMS,
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
        return _COLLECTION_IDEALS.get(slot, version, lambda: self._scan_collection(resource, k))

    def _scan_collection(self, resource: str, k: Optional[int]) -> np.ndarray:
        source = resolve(resource)
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


class _RankBias(TermMeasure):
    """Shared machinery of RaB and ARaB (``AVERAGED``: report ARaB)."""

    AVERAGED = False
    SUPPORTED_PARAMS = {
        **_TERM_PARAMS,
        "variant": measures.ParamInfo(dtype=str, choices=("tc", "tf", "bool", "ibbr"), default="tf", desc="document magnitude: 'tc' term counts, 'tf' ln(count + 1), 'bool' presence (Rekabsaz & Schedl), 'ibbr' sum of ln(count) per word (IBBR Eq. 1)"),
        "contrast": measures.ParamInfo(dtype=str, default="male-female", desc="'A-B': the value is group A's mean magnitude minus group B's (positive = A-leaning)"),
        "component": measures.ParamInfo(dtype=str, default="bias", desc="'bias' (A - B), or a group name of the contrast for that group's mean magnitude alone"),
        "denominator": measures.ParamInfo(dtype=str, choices=("available", "cutoff"), default="available", desc="'available': average over min(k, list length) documents (the reference code); 'cutoff': divide by k"),
    }
    DEGENERATE_REASON = "no ranked documents"

    def check_params(self) -> None:
        super().check_params()
        first, second = self._contrast()
        component = self.param("component")
        if component not in ("bias", first, second):
            raise ValueError(f"{self.NAME}: component={component!r}; expected 'bias', {first!r} or {second!r}")

    def _contrast(self) -> tuple[str, str]:
        first, sep, second = self.param("contrast").partition("-")
        groups = self.counter().lexicon.groups
        if not sep or first not in groups or second not in groups or first == second:
            raise ValueError(f"{self.NAME}: contrast={self.param('contrast')!r}; expected 'A-B' with two different "
                             f"groups of the term list {list(groups)}")
        return first, second

    def magnitudes(self, lists: RankedLists) -> np.ndarray:
        """Per document ``[B - A, B, A]`` (the reference layout, with B = female and A = male)."""
        first, second = self._contrast()
        stats = self.stats(lists)
        if self.param("variant") == "ibbr":
            return ibbr_magnitudes(stats.word_counts(second), stats.word_counts(first))
        counts = stats.group_counts()
        groups = stats.lexicon.groups
        return gender_magnitudes(counts[:, groups.index(second)], counts[:, groups.index(first)], self.param("variant"))

    def compute(self, lists: RankedLists) -> MeasureValues:
        rab_values, arab_values = rank_bias_lists(self.magnitudes(lists), lists.offsets, self.param("cutoff"),
                                                  self.param("denominator"))
        chosen = arab_values if self.AVERAGED else rab_values
        first, _ = self._contrast()
        component = self.param("component")
        if component == "bias":
            values = chosen[:, 2] - chosen[:, 1]
        else:
            values = chosen[:, 2] if component == first else chosen[:, 1]
        degenerate = lists.lengths == 0
        return MeasureValues(values=np.where(degenerate, self.DEGENERATE, values), degenerate=degenerate,
                             causes=degenerate_causes(degenerate, [(degenerate, "no documents")], "no documents"))


class _RaB(_RankBias):
    r"""Rank bias (Rekabsaz & Schedl 2020; IBBR §4): signed, 0 = balanced, positive = male-leaning.

    .. math::  \mathrm{RaB}@t = \frac{1}{t} \sum_{i \le t} \mathrm{mag}_{m}(d_i) - \frac{1}{t} \sum_{i \le t} \mathrm{mag}_{f}(d_i)

    with magnitudes ``tc`` :math:`M`, ``tf`` :math:`\ln(M + 1)`, ``bool`` :math:`\mathrm{sgn}\, M`
    of a group's term count :math:`M`, or ``ibbr`` :math:`\sum_{w} \ln c_w` over the group's words
    present; :math:`t` is min(t, list length) by default, as in the reference code.
    """

    __name__ = "RaB"
    NAME = __name__
    PRETTY_NAME = "Rank Bias"
    SHORT_DESC = "Gender bias: mean male minus female term magnitude of the top-t documents (0 = balanced, + = male-leaning)."


class _ARaB(_RankBias):
    r"""Average rank bias (Rekabsaz & Schedl 2020): the mean of RaB@1 … RaB@t.

    .. math::  \mathrm{ARaB}@t = \frac{1}{t} \sum_{x = 1}^{t} \mathrm{RaB}@x
    """

    __name__ = "ARaB"
    NAME = __name__
    AVERAGED = True
    PRETTY_NAME = "Average Rank Bias"
    SHORT_DESC = "Gender bias: RaB averaged over the cutoffs 1..t (0 = balanced, + = male-leaning)."


TExFAIR = _TExFAIR()
TED = _TED()
AWRF = _AWRF()
FaiRR = _FaiRR()
NFaiRR = _NFaiRR()
RaB = _RaB()
ARaB = _ARaB()
