"""Where the model work of an :class:`~pairmeasures.sideinfo.embed.Embedder` runs: in this process (the default), or
in a compute engine such as the Ray pool (:class:`~pairmeasures.sideinfo.raypool.RayPool`) for the duration of a
``with compute_engine(engine):`` block. Inside it, every embedder with a cache and the torch backend hands the texts
it does not find in its cache to ``engine.compute(embedder, texts, keys)``, which embeds them elsewhere, puts them in
the embedder's cache (the process stays its only writer) and returns ``{key: vector}``. The audit's re-ranking and
polarity embedding use it unchanged (``pairmeasures audit --engine ray``)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, Optional, Protocol

__all__ = ["ENGINES", "ComputeEngine", "compute_engine", "current_engine"]

#: Where model work can run: ``local`` (this process) or ``ray`` (:class:`~pairmeasures.sideinfo.raypool.RayPool`).
ENGINES = ("local", "ray")


class ComputeEngine(Protocol):
    """What an engine provides: ``{key: vector}`` of ``texts``, also put into ``embedder.cache``."""

    def compute(self, embedder, texts: list, keys: list) -> dict: ...

_ENGINE: list = [None]
_LOCK = threading.Lock()


@contextmanager
def compute_engine(engine: ComputeEngine) -> Iterator[ComputeEngine]:
    """Embedders compute through ``engine`` inside the block (one engine at a time in a process)."""
    with _LOCK:
        if _ENGINE[0] is not None:
            raise RuntimeError("a compute engine is already in use in this process")
        _ENGINE[0] = engine
    try:
        yield engine
    finally:
        _ENGINE[0] = None


def current_engine() -> Optional[ComputeEngine]:
    """The engine of the enclosing :func:`compute_engine` block, else ``None`` (compute in this process)."""
    return _ENGINE[0]
