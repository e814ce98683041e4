"""Deprecated: the former home of the term-based measures, now one family per module.

- :mod:`pairmeasures.measures.termbase`: ``TermMeasure`` (shared machinery), ``TEXT_INPUT``;
- :mod:`pairmeasures.measures.texfair`: ``TExFAIR``, ``TED`` (Abolghasemi et al. 2024);
- :mod:`pairmeasures.measures.awrf`: ``AWRF`` (Sapiezynski et al. 2019);
- :mod:`pairmeasures.measures.fairr`: ``FaiRR``, ``NFaiRR`` (Rekabsaz et al. 2021);
- :mod:`pairmeasures.measures.rab`: ``RaB``, ``ARaB`` (Rekabsaz & Schedl 2020).

The measures themselves stay importable from :mod:`pairmeasures` and :mod:`pairmeasures.measures`.
Importing a name from here still works and warns (:class:`DeprecationWarning`) naming its new module.
"""

from __future__ import annotations

from .._moved import moved_names

_MOVED = {
    "TermMeasure": "pairmeasures.measures.termbase",
    "TEXT_INPUT": "pairmeasures.measures.termbase",
    "TExFAIR": "pairmeasures.measures.texfair",
    "TED": "pairmeasures.measures.texfair",
    "AWRF": "pairmeasures.measures.awrf",
    "FaiRR": "pairmeasures.measures.fairr",
    "NFaiRR": "pairmeasures.measures.fairr",
    "RaB": "pairmeasures.measures.rab",
    "ARaB": "pairmeasures.measures.rab",
}

__all__ = list(_MOVED)  # each comes from __getattr__ (PEP 562), with its warning


__getattr__, __dir__ = moved_names(__name__, _MOVED)
