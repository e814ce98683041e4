"""The garbage collector's pace for a long command: :func:`batch_collection`.

Python collects its youngest generation every 700 net allocations of container objects, and each collection walks
every young object; an audit makes millions of short-lived containers (frames, tuples of ir_measures metrics) and
few reference cycles, so about half a CPU-second of a cold PERSPECTRUM audit went to collections that freed next to
nothing. Inside the block the youngest generation is collected every :data:`YOUNG` allocations instead (the older
generations' pace, counted in young collections, is unchanged); the earlier thresholds come back after it. Objects
are freed as before, by reference counting; only cycles wait a little longer."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["YOUNG", "batch_collection"]

#: Net container allocations between two collections of the youngest generation inside :func:`batch_collection`.
YOUNG = 10_000


@contextmanager
def batch_collection() -> Iterator[None]:
    """Run the block with the youngest generation collected every :data:`YOUNG` allocations (at least as rarely as
    before), then restore the thresholds."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], YOUNG), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
