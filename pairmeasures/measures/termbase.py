"""Shared machinery of the term-based measures: :class:`TermMeasure`, their parameters and text input.

They read each ranked document's text (the run's ``text`` column, or a resource named by
``text=``, e.g. ``corpus:DIR`` or ``irds:DATASET``: :mod:`pairmeasures.sideinfo.text`) and a term
list mapping words to groups (``terms=``: the built-in ``gender`` list or a ``term,group`` file:
:mod:`pairmeasures.sideinfo.termlists`). Texts are tokenised and counted once per process for all
of them (:mod:`pairmeasures.sideinfo.termcount`); the formulas are in :mod:`pairmeasures.math`.
The measures, one family per module: :mod:`~pairmeasures.measures.texfair` (TExFAIR, TED),
:mod:`~pairmeasures.measures.awrf` (AWRF), :mod:`~pairmeasures.measures.fairr` (FaiRR, NFaiRR),
:mod:`~pairmeasures.measures.rab` (RaB, ARaB).
"""

from __future__ import annotations

import numpy as np
from ir_measures import measures

from ..math import gender_magnitudes, ibbr_magnitudes
from ..sideinfo.termcount import TermCounter, TermStats, term_counter
from ..sideinfo.termlists import OVERLAPS, parse_targets
from ..sideinfo.tokenizers import TOKENIZERS
from .base import COMMON_PARAMS, PairMeasure, SideInput
from .ranked import RankedLists

__all__ = ["TermMeasure", "TEXT_INPUT", "TERM_PARAMS", "TARGETS_PARAM"]

#: The documents' text: the run's ``text`` column, or the resource named by ``text=``.
TEXT_INPUT = SideInput(column="text", param="text", kind="text", neutral="")

#: Parameters every term-based measure takes.
TERM_PARAMS = {
    **COMMON_PARAMS,
    "missing": measures.ParamInfo(dtype=str, choices=("error", "skip", "neutral"), default="skip", desc="a considered document without text: 'skip' it (default; counted and said in one warning per measure and run), raise an 'error' naming the first, or count it as 'neutral' (no terms)"),
    "text": measures.ParamInfo(dtype=str, default=None, desc="resource giving document text ('irds:DATASET[?fields=title+text]', 'corpus:DIR[?fields=...]') instead of the run's text column"),
    "terms": measures.ParamInfo(dtype=str, default="gender", desc="term list: a built-in name ('gender') or a file of 'term,group' lines"),
    "tokenizer": measures.ParamInfo(dtype=str, choices=TOKENIZERS, default="words", desc="'words': lower-case, split at every non-letter/digit (default); 'whitespace': text.lower().split(' ') as the reference code"),
    "overlap": measures.ParamInfo(dtype=str, choices=OVERLAPS, default="error", desc="a term listed for two groups: 'error' (default), count it for 'each' group (NFaiRR reference), or for the 'first' one"),
}
#: The ``targets`` parameter of the measures that compare group shares with targets.
TARGETS_PARAM = measures.ParamInfo(dtype=str, default=None, desc="target share per group, e.g. 'female=0.5,male=0.5' (default: equal shares)")


class TermMeasure(PairMeasure):
    """Shared machinery: the term list, targets and term statistics of the considered documents."""

    SIDE_INPUTS = (TEXT_INPUT,)
    SUPPORTED_PARAMS = dict(TERM_PARAMS)

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

    def contrast(self) -> tuple[str, str]:
        """The two groups ``(A, B)`` of the ``contrast='A-B'`` parameter (RaB, ARaB, PRF), checked against the term list."""
        first, sep, second = self.param("contrast").partition("-")
        groups = self.counter().lexicon.groups
        if not sep or first not in groups or second not in groups or first == second:
            raise ValueError(f"{self.NAME}: contrast={self.param('contrast')!r}; expected 'A-B' with two different "
                             f"groups of the term list {list(groups)}")
        return first, second

    def magnitudes(self, lists: RankedLists) -> np.ndarray:
        """Per document ``[B - A, B, A]`` (the reference layout, with B = female and A = male) for the ``variant``
        parameter: term counts ``tc``/``tf``/``bool`` (Rekabsaz & Schedl) or ``ibbr`` (IBBR Eq. 1)."""
        first, second = self.contrast()
        stats = self.stats(lists)
        if self.param("variant") == "ibbr":
            return ibbr_magnitudes(stats.word_counts(second), stats.word_counts(first))
        counts = stats.group_counts()
        groups = stats.lexicon.groups
        return gender_magnitudes(counts[:, groups.index(second)], counts[:, groups.index(first)], self.param("variant"))

