"""Deprecated: the former home of document neutrality, FaiRR and NFaiRR, now :mod:`pairmeasures.math.fairr` (one
module name per family in :mod:`pairmeasures.math` and :mod:`pairmeasures.measures`).

Importing a name from here still works and warns (:class:`DeprecationWarning`) naming its new module; this module
is removed in pairmeasures 0.3. ``pairmeasures.math.<name>`` is unchanged.
"""

from __future__ import annotations

from .._moved import moved_names

_MOVED = {name: "pairmeasures.math.fairr" for name in (
    "DEGENERATE_NFAIRR", "NFaiRRResult", "position_discount", "neutrality", "fairr", "fairr_lists", "ifairr", "nfairr",
    "nfairr_lists", "ranker_agnostic_fairr",
)}

__all__ = list(_MOVED)  # each comes from __getattr__ (PEP 562), with its warning


__getattr__, __dir__ = moved_names(__name__, _MOVED, removed_in="0.3")
