"""Layer 8: training dense retrievers against bias (torch, sentence-transformers; imported lazily).

``import pairmeasures`` never imports this package; importing it does not import torch either: the
names below load :mod:`pairmeasures.train.ibbr` on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["IBBRLoss", "ibbr_dataset", "normed_prf", "pairwise_difference_loss", "t_statistic_loss",
           "ranking_loss", "GROUP_LABELS"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from pairmeasures.train import ibbr

        return getattr(ibbr, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
