"""What the training commands share about sentence-transformers' trainer."""

from __future__ import annotations

from typing import Optional

__all__ = ["warmup_argument"]


def warmup_argument(ratio: float, transformers_version: Optional[str] = None) -> dict:
    """The trainer argument of a warm-up over ``ratio`` of the steps: Transformers 5 takes it as a float
    ``warmup_steps`` (and deprecates ``warmup_ratio``), Transformers 4 as ``warmup_ratio``. The version is the
    installed one unless given."""
    if transformers_version is None:
        import transformers

        transformers_version = transformers.__version__
    major = int(transformers_version.split(".")[0])
    return {"warmup_steps": ratio} if major >= 5 else {"warmup_ratio": ratio}
