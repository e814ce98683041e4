"""``ce(PATH)``: re-ranking with the sentence-transformers CrossEncoder in folder PATH (text inserted)."""

from __future__ import annotations

from .models import check_model_folder, model_folder, model_identity
from .registry import Stage, StageType, register_stage


def build(stage: Stage, context, position: int):
    from ..crossencoder import cross_encoder

    folder = str(model_folder(stage))  # ce takes its one argument, a folder (checked)
    reranker = context.shared(f"ce:{folder}", lambda: cross_encoder(folder))
    return context.on_engine(f"ce:{folder}", reranker)  # --engine ray: over query partitions on its Ray


def check(stage: Stage) -> None:
    check_model_folder(stage, "cross-encoder folder",
                       "write ce(PATH) with the folder of a sentence-transformers CrossEncoder")


CE = register_stage(StageType(
    "ce", "ce(PATH)", "re-rank with the sentence-transformers CrossEncoder in folder PATH (text inserted)",
    "bm25>>ce(models/my-cross-encoder)", build, usage="ce(path/to/cross-encoder)", arguments=1, required=1,
    needs={"text"}, check=check, identity=model_identity))
