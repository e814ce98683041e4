"""Floor 8: PyTerrier transformers, imported lazily: ``pairmeasures.pipelines.specs`` (and the CLI that lists its
stages) does not load PyTerrier; ``DuoGreedy``, ``BiasedOrdering`` and ``PolarityScorer`` load it on first use."""

from __future__ import annotations

from typing import Any

__all__ = ["BiasedOrdering", "DuoGreedy", "PolarityScorer"]


def __getattr__(name: str) -> Any:
    if name in ("BiasedOrdering", "DuoGreedy"):
        from . import duogreedy

        return getattr(duogreedy, name)
    if name == "PolarityScorer":
        from .polarity import PolarityScorer

        return PolarityScorer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
