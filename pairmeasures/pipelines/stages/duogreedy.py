"""``duogreedy(LAMBDA[, k=K][, mode=exact])``: re-ranks the top K for lower DUO (:class:`~..duogreedy.DuoGreedy`;
polarity inserted)."""

from __future__ import annotations

from .registry import Stage, StageType, register_stage


def make(stage: Stage, k: int):
    from ..duogreedy import DuoGreedy

    options = dict(stage.options)
    return DuoGreedy(stage.args[0], options.get("k", k), mode=options.get("mode", "greedy"))


def build(stage: Stage, context, position: int):
    return make(stage, context.k)


def validate(stage: Stage) -> None:
    make(stage, 10)


DUOGREEDY = register_stage(StageType(
    "duogreedy", "duogreedy(LAMBDA[, k=K][, mode=exact])", "re-rank the top K for lower DUO (pm.DuoGreedy; polarity "
    "inserted)", "bm25>>duogreedy(0.5, k=20)", build, usage="duogreedy(0.5, k=10)", arguments=1, required=1,
    options=("k", "mode"), needs={"text", "polarity"}, validate=validate))
