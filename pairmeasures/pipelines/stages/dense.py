"""``dense``/``dense(PATH)``: dense retrieval over a pyterrier-dr FlexIndex as the first stage, bi-encoder
re-ranking later (text inserted); ``PATH``: a sentence-transformers folder instead of the context's model."""

from __future__ import annotations

from .models import check_model_folder, model_folder, model_identity
from .registry import Stage, StageType, register_stage


def build(stage: Stage, context, position: int):
    model = model_folder(stage) or context.model
    if position == 0:
        from ..dense import dense_retriever

        return dense_retriever(context.corpus, model, num_results=context.num_results, text=context.text,
                               index_dir=context.index_dir)
    return context.bi_encoder(model)


def check(stage: Stage) -> None:
    check_model_folder(stage, "model folder", "write dense(PATH) with the folder of a sentence-transformers "
                       "model (e.g. one written by pairmeasures train-ibbr), or dense for --model")


DENSE = register_stage(StageType(
    "dense", "dense",
    "first: dense retrieval over a pyterrier-dr FlexIndex; later: bi-encoder re-ranking (text inserted); dense(PATH) "
    "uses the sentence-transformers folder PATH instead of the audit's --model",
    "dense or bm25>>dense(models/ibbr-ts)", build, usage="dense or dense(path/to/sentence-transformers-model)",
    arguments=1, place="any", fresh="first", needs={"text"}, check=check, identity=model_identity))
