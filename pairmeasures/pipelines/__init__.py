"""Layer 6: PyTerrier transformers (imported lazily: ``pm.PolarityScorer`` loads PyTerrier on first use)."""

from .polarity import PolarityScorer

__all__ = ["PolarityScorer"]
