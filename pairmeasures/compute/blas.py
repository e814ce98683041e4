"""Small linear algebra without thread spinning: :func:`one_blas_thread` runs a block of many small BLAS/LAPACK calls
(an audit's per-query SVDs, a few fit documents by 384 dimensions each) on one BLAS thread. A multi-threaded BLAS
wakes its threads for every call and they spin waiting for work; on busy cores that costs more CPU time than the
call itself. The limit is set with ``threadpoolctl`` (installed with scikit-learn, and by the ``audit`` extra) and
lifted after the block; without ``threadpoolctl`` the block runs as it is."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

__all__ = ["one_blas_thread"]

_LIMITER: list = []  # the ThreadpoolController, made once (it lists the loaded libraries)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with every loaded BLAS library limited to one thread (nothing is changed without
    ``threadpoolctl``); blocks may nest."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        yield
        return
    if not _LIMITER:
        _LIMITER.append(ThreadpoolController())
    with _LIMITER[0].limit(limits=1, user_api="blas"):
        yield
