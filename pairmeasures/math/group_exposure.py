"""Deprecated: the former home of the group-exposure position weights, now :mod:`pairmeasures.math.exposure` (the
family's module name in :mod:`pairmeasures.measures` too); the helpers it shared with AWRF's group form went to
:mod:`pairmeasures.math.group_combos` (``per_group``, ``positions``) and :mod:`pairmeasures.math.awrf`
(``geometric_attention``).

Importing a name from here still works and warns (:class:`DeprecationWarning`) naming its new module; this module
is removed in pairmeasures 0.3.
"""

from __future__ import annotations

from .._moved import moved_names

_MOVED = {
    "log_exposure": "pairmeasures.math.exposure",
    "rbp_exposure": "pairmeasures.math.exposure",
    "geometric_attention": "pairmeasures.math.awrf",
    "per_group": "pairmeasures.math.group_combos",
    "positions": "pairmeasures.math.group_combos",
}

__all__ = list(_MOVED)  # each comes from __getattr__ (PEP 562), with its warning


__getattr__, __dir__ = moved_names(__name__, _MOVED, removed_in="0.3")
