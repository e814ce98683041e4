"""Layer 6: PyTerrier transformers (imported lazily: ``pm.PolarityScorer`` loads PyTerrier on first use)."""

from .duogreedy import BiasedOrdering, DuoGreedy
from .polarity import PolarityScorer

__all__ = ["BiasedOrdering", "DuoGreedy", "PolarityScorer"]
