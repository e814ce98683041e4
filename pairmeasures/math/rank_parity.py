"""Deprecated: the former home of NDKL, ARP's favoured-pair shares and IAA, now :mod:`pairmeasures.math.parity`
(the family's module name in :mod:`pairmeasures.measures` too).

Importing a name from here still works and warns (:class:`DeprecationWarning`) naming its new module; this module
is removed in pairmeasures 0.3.
"""

from __future__ import annotations

from .._moved import moved_names

_MOVED = {name: "pairmeasures.math.parity" for name in ("ndkl_lists", "favoured_pair_parts", "iaa_lists", "attention")}

__all__ = list(_MOVED)  # each comes from __getattr__ (PEP 562), with its warning


__getattr__, __dir__ = moved_names(__name__, _MOVED, removed_in="0.3")
