"""A PyTerrier stage run over query partitions on Ray (``pairmeasures audit --engine ray``).

PyTerrier's own ``transformer.parallel(N, backend="ray")`` (from pyterrier-alpha) splits the input frame by query
into ``N`` parts and transforms each in a process of a Ray pool; :class:`OnRay` calls it at transform time, after
the audit's :class:`~pairmeasures.compute.raypool.RayPool` has started (or joined) Ray, so nothing starts Ray for
an audit whose runs are cached. It serves stages that spend model time per query, such as the ``ce(...)``
cross-encoder: the stage is pickled to each process and loads its model there. Retrieval from an index (PISA's
BM25, the dense index) stays in this process: its index lives on this machine's disk and it is already
multi-threaded."""

from __future__ import annotations

import pandas as pd
import pyterrier as pt

__all__ = ["OnRay"]


class OnRay(pt.Transformer):
    """``transformer`` over query partitions on the Ray of ``pool`` (one per model actor of the pool, at least 2),
    through PyTerrier's ``.parallel(N, backend="ray")``. Input with fewer queries than partitions runs here."""

    def __init__(self, transformer: pt.Transformer, pool):
        self.transformer = transformer
        self.pool = pool

    def __repr__(self) -> str:
        return f"OnRay({self.transformer!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        import warnings

        queries = inp["qid"].nunique() if "qid" in inp.columns else 1
        if queries < 2:
            return self.transformer.transform(inp)  # nothing to partition: no Ray started for it
        self.pool.start()
        partitions = min(max(self.pool.workers, 2), queries)
        try:
            import pyterrier_alpha.parallel  # noqa: F401  (what .parallel() uses)
        except ImportError:
            raise RuntimeError("--engine ray runs ce(...) stages through PyTerrier's .parallel(N, backend='ray'), "
                               "which needs pyterrier-alpha: pip install 'pairmeasures[ray]'") from None
        with warnings.catch_warnings():  # ".parallel() is experimental": PyTerrier's note to its own users
            warnings.simplefilter("ignore", UserWarning)
            parallel = self.transformer.parallel(partitions, backend="ray")
        out = parallel.transform(inp)
        self.pool.partitioned += 1
        return out.sort_values(["qid", "rank"], kind="stable").reset_index(drop=True) if "rank" in out else out
