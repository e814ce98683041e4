"""Deprecated: the former home of rND, rKL and rRD, now :mod:`pairmeasures.math.group` (the family's module name
in :mod:`pairmeasures.measures` too).

Importing a name from here still works and warns (:class:`DeprecationWarning`) naming its new module; this module
is removed in pairmeasures 0.3. ``pairmeasures.math.<name>`` is unchanged.
"""

from __future__ import annotations

from .._moved import moved_names

_MOVED = {name: "pairmeasures.math.group" for name in (
    "GROUP_MEASURES", "GroupFairnessResult", "group_fairness_lists", "group_fairness_raw", "group_fairness_bounds",
    "prefix_disparity", "rnd", "rkl", "rrd", "DEGENERATE_GROUP_FAIRNESS",
)}

__all__ = list(_MOVED)  # each comes from __getattr__ (PEP 562), with its warning


__getattr__, __dir__ = moved_names(__name__, _MOVED, removed_in="0.3")
