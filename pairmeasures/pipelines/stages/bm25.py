"""``bm25``: BM25 retrieval through pyterrier-pisa over the context's corpus (first stage only), indexing and
retrieving with as many threads as the process may use cores."""

from __future__ import annotations

from .registry import Stage, StageType, register_stage


def build(stage: Stage, context, position: int):
    from ...compute.engines import available_cores
    from ..retrieval import bm25

    return bm25(context.corpus, num_results=context.num_results, text=context.text, index_dir=context.index_dir,
                threads=available_cores())


BM25 = register_stage(StageType(
    "bm25", "bm25", "BM25 retrieval through pyterrier-pisa (first stage only)", "bm25", build,
    place="first", fresh="first"))
