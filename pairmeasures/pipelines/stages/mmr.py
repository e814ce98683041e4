"""``mmr(LAMBDA[, k=K])``: re-ranks the top K by maximal marginal relevance on the bi-encoder's document vectors
(:class:`~..mmr.TopKMMR`; the vectors come from the context's bi-encoder)."""

from __future__ import annotations

from .registry import Stage, StageType, register_stage


def make(stage: Stage, k: int, encoder=None):
    from ..mmr import TopKMMR

    return TopKMMR(stage.args[0], dict(stage.options).get("k", k), encoder=encoder)


def build(stage: Stage, context, position: int):
    return make(stage, context.k, context.bi_encoder().doc_encoder())


def validate(stage: Stage) -> None:
    make(stage, 10)


MMR = register_stage(StageType(
    "mmr", "mmr(LAMBDA[, k=K])", "re-rank the top K by maximal marginal relevance on the bi-encoder's document vectors "
    "(pm.TopKMMR; vectors inserted)", "bm25>>dense>>mmr(0.5)", build, usage="mmr(0.5, k=10)", arguments=1,
    required=1, options=("k",), needs={"text", "vectors"}, validate=validate))
