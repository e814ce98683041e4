"""What was embedded and why: texts asked for and embedded by a model in this process, counted per purpose (an audit's
``polarity`` of the measured rows, a system's re-ranking...), for the audit's manifest."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

__all__ = ["embedding_purpose", "embedded_counts", "count_embedded", "record_precision", "precisions_chosen"]

#: Texts asked for and embedded in this process, by purpose (:func:`embedding_purpose`): purpose -> {"texts": distinct
#: texts asked for (call by call), "computed": texts a model embedded (not found in the cache)}.
_EMBEDDED: dict = {}
#: The precision chosen for each (model, device) in this process, with its measurement (:func:`record_precision`).
_PRECISIONS: dict = {}
_PURPOSE: ContextVar = ContextVar("pairmeasures_embedding_purpose", default="other")


@contextmanager
def embedding_purpose(purpose: str) -> Iterator[None]:
    """Count the texts embedded in the block (by any :class:`Embedder` of this thread) under ``purpose`` (e.g. an
    audit's ``polarity`` of the measured rows, or ``run bm25>>dense``), as :func:`embedded_counts` shows."""
    token = _PURPOSE.set(purpose)
    try:
        yield
    finally:
        _PURPOSE.reset(token)


def embedded_counts() -> dict:
    """A copy of the texts embedded in this process by purpose: ``{purpose: {"texts": n, "computed": m}}`` (``texts``:
    distinct texts asked for, summed over calls; ``computed``: of those, embedded by a model, the rest came from the
    cache). Texts embedded outside any :func:`embedding_purpose` count under ``"other"``."""
    return {purpose: dict(counts) for purpose, counts in _EMBEDDED.items()}


def count_embedded(texts: int, computed: int) -> None:
    """Count ``texts`` asked for, ``computed`` of them by a model, under the current purpose (:class:`Embedder` calls it)."""
    counts = _EMBEDDED.setdefault(_PURPOSE.get(), {"texts": 0, "computed": 0})
    counts["texts"] += texts
    counts["computed"] += computed


def record_precision(model: str, device: str, choice: dict) -> None:
    """Record the precision chosen for ``model`` on ``device`` (``choice``: precision, why, what was measured)."""
    _PRECISIONS[f"{model} on {device}"] = dict(choice)


def precisions_chosen() -> dict:
    """A copy of the precisions chosen in this process: ``{"MODEL on DEVICE": {"precision", "why", ...}}`` (for the
    manifest; empty where no model ran on a GPU)."""
    return {name: dict(choice) for name, choice in _PRECISIONS.items()}
