"""``most(+1|-1)`` and ``least``: the most and the least biased orderings (:class:`~..duogreedy.BiasedOrdering`;
polarity inserted)."""

from __future__ import annotations

from .registry import Stage, StageType, register_stage


def most(stage: Stage, context=None, position: int = 0):
    from ..duogreedy import BiasedOrdering

    pole = stage.args[0] if stage.args else None
    if pole not in (None, 1, -1):
        raise ValueError(f"the pole must be +1 or -1 (or none: most), got {pole!r}")
    return BiasedOrdering("most", pole=pole)


def least(stage: Stage, context=None, position: int = 0):
    from ..duogreedy import BiasedOrdering

    return BiasedOrdering("least")


MOST = register_stage(StageType(
    "most", "most(+1|-1)", "the most biased ordering, toward that pole if given (pm.BiasedOrdering; polarity inserted)",
    "bm25>>most(+1)", most, usage="most(+1)", arguments=1, needs={"text", "polarity"}, validate=most))

LEAST = register_stage(StageType(
    "least", "least", "the least biased ordering, DUO = 0 (pm.BiasedOrdering; polarity inserted)", "bm25>>least",
    least, needs={"text", "polarity"}))
