"""The built-in measures, each registered once by its family module.

A family module (``duo.py``, ``group.py``, ...) creates its measures and registers them in one call, as
ir_measures' measure modules do (``terrierteam/ir_measures: ir_measures/measures/ndcg.py``)::

    rND, rKL, rRD = _rND(), _rKL(), _rRD()
    register_builtin(rND, rKL, rRD)
    __all__ = ["rND", "rKL", "rRD"]

Everything else is derived from :data:`BUILTIN`: :data:`pairmeasures.measures.BUILTIN_MEASURES`, the names and
``__all__`` of :mod:`pairmeasures.measures` and of :mod:`pairmeasures` (``pm.Duo``, ``pm.rKL``, ...), and the
measures the built-in plugin hands to ir_measures (:mod:`pairmeasures.plugins.builtin`), as a third party's plugin
does. Plugins do not call :func:`register_builtin`: they implement the ``pairmeasures_measures`` hook.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import PairMeasure

__all__ = ["BUILTIN", "register_builtin"]

#: Every built-in measure, in registration order: the order in which :mod:`pairmeasures.measures` imports the
#: family modules, which is the order ``pairmeasures measures`` lists them.
BUILTIN: list[PairMeasure] = []


def register_builtin(*measures: PairMeasure) -> None:
    """Register a family's measures as built-ins; a ValueError if a name is taken (measure names are unique)."""
    for measure in measures:
        if any(known.NAME == measure.NAME for known in BUILTIN):
            raise ValueError(f"a built-in measure named {measure.NAME!r} is already registered")
        BUILTIN.append(measure)
