"""Where the model work of an :class:`~pairmeasures.compute.embed.Embedder` runs: in this process (the default), or
in a compute engine such as the Ray pool (:class:`~pairmeasures.compute.raypool.RayPool`) for the duration of a
``with compute_engine(engine):`` block. Inside it, every embedder with a cache and the torch backend hands the texts
it does not find in its cache to ``engine.compute(embedder, texts, keys)``, which embeds them elsewhere, puts them in
the embedder's cache (the process stays its only writer) and returns ``{key: vector}``. The audit's re-ranking and
polarity embedding use it unchanged (``pairmeasures audit --engine ray``)."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Iterator, Optional, Protocol

__all__ = ["ENGINES", "ComputeEngine", "compute_engine", "current_engine", "check_engine_options", "available_cores"]

#: Where model work can run: ``local`` (this process) or ``ray`` (:class:`~pairmeasures.compute.raypool.RayPool`).
ENGINES = ("local", "ray")


def check_engine_options(engine: str, *, address: Optional[str] = None, workers: Optional[int] = None,
                         tokenizers: Optional[int] = None, shard_size: Optional[int] = None,
                         work: Optional[object] = None, batch_size: Optional[int] = None) -> None:
    """A ``ValueError`` naming the option, before any work (and whether Ray would start or not): an unknown
    ``engine``; options of the Ray engine given with ``local`` (``address``, ``workers``, ``tokenizers``,
    ``shard_size``, ``work``: ``None`` when not given); a count out of range (``workers``, ``shard_size`` and
    ``batch_size`` at least 1, ``tokenizers`` 0 or more)."""
    if engine not in ENGINES:
        raise ValueError(f"--engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    if engine == "local":
        given = [option for option, value in (("--address", address), ("--workers", workers),
                                              ("--tokenizers", tokenizers), ("--shard-size", shard_size),
                                              ("--work", work)) if value is not None]
        if given:
            listed = ", ".join(given[:-1]) + " and " + given[-1] if len(given) > 1 else given[0]
            raise ValueError(f"{listed} appl{'y' if len(given) > 1 else 'ies'} to --engine ray; pass --engine ray "
                             f"to use {'them' if len(given) > 1 else 'it'}")
    for option, value, least in (("--workers", workers, 1), ("--tokenizers", tokenizers, 0),
                                 ("--shard-size", shard_size, 1), ("--batch-size", batch_size, 1)):
        if value is not None and value < least:
            raise ValueError(f"{option} must be {'at least 1' if least else '0 or more'}; got {value}")


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


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, as a container or ``taskset`` limits it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS and Windows have no affinity call
        return max(1, os.cpu_count() or 1)
