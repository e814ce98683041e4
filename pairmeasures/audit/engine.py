"""Where the audit's model work runs: ``local`` (this process) or ``ray`` (``pairmeasures audit --engine ray``).

With Ray, the texts the audit embeds (the re-rankers' candidates, the polarity of the measured rows, a dense
index's corpus) go through the Ray pool of ``pairmeasures embed`` (:class:`~pairmeasures.compute.raypool.RayPool`,
through the compute engine of :mod:`~pairmeasures.compute.engines`), and ``ce(...)`` stages run over query
partitions with PyTerrier's ``.parallel(N, backend="ray")`` (:class:`~pairmeasures.pipelines.onray.OnRay`).
Everything else (retrieval from indexes, evaluation, statistics, outputs) stays in this process. Ray is started
(or joined) only when something needs computing, so a warm audit starts none; its options and address are checked
at the start either way (:func:`compute_on`)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

from ..compute.engines import ENGINES, ComputeEngine, check_engine_options

__all__ = ["ENGINES", "compute_on", "manifest_entry"]

@contextmanager
def compute_on(engine: str, address: Optional[str] = None,
               workers: Optional[int] = None) -> Iterator[Optional[ComputeEngine]]:
    """The Ray pool for the ``with`` block (``None`` for ``local``), every embedder computing through it. The
    options, the Ray extra and ``address`` are checked first (seconds, before ``--out`` is claimed), whether Ray
    is then needed or not."""
    check_engine_options(engine, address=address, workers=workers)
    if engine == "local":
        yield None
        return
    from ..compute.engines import compute_engine
    from ..compute.raypool import RayPool
    from ..compute.raysession import check_address, require_ray

    require_ray()  # a missing extra is one line before any work, not after the first run
    check_address(address)  # an address where no cluster answers: one line now, not a hang once Ray is needed
    where = "set PAIRMEASURES_CACHE_DIR to a folder every node and this machine share"
    with RayPool(address, workers=workers, private=True, where=where) as pool, compute_engine(pool):
        yield pool


def manifest_entry(engine: str, address: Optional[str], pool) -> dict:
    """The manifest's ``engine``: which, where, the pool's actors and what it embedded (Ray started or not)."""
    if pool is None:
        return {"engine": engine}
    return {"engine": engine, "address": address or "local (127.0.0.1)", "started": pool.started,
            "workers": pool.workers, "tokenizing_actors": pool.tokenizers, "texts_embedded": pool.embedded,
            "stage_runs_over_query_partitions": pool.partitioned}
