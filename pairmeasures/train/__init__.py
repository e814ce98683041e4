"""Floor 11: training dense retrievers against bias (torch, sentence-transformers; imported lazily).

``import pairmeasures`` never imports this package; importing it does not import torch either: the
names below load :mod:`pairmeasures.train.ibbr` or :mod:`pairmeasures.train.polarity` on first use.
"""

from __future__ import annotations

from typing import Any

_IBBR = ("IBBRLoss", "ibbr_dataset", "normed_prf", "pairwise_difference_loss", "t_statistic_loss", "ranking_loss",
         "GROUP_LABELS")
_POLARITY = ("ClaimTripletLoss", "polarity_training_set", "train_polarity")
#: What the training commands' --resume warns about (:mod:`pairmeasures.train._resume`; no torch).
_RESUME = ("ResumeWarning",)
__all__ = [*_IBBR, *_POLARITY, *_RESUME]


def __getattr__(name: str) -> Any:
    if name in _IBBR:
        from pairmeasures.train import ibbr

        return getattr(ibbr, name)
    if name in _POLARITY:
        from pairmeasures.train import polarity

        return getattr(polarity, name)
    if name in _RESUME:
        from pairmeasures.train import _resume

        return getattr(_resume, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
