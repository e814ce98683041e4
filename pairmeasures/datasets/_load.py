"""Loading a pairmeasures dataset through ir_datasets (``pm.datasets.load``, ``register``), in a module of its own so
that :mod:`.corpus` and the package both import it (ir_datasets itself is imported only inside the functions)."""

from __future__ import annotations

import os
from typing import Optional

__all__ = ["spec_of", "load", "register"]


def spec_of(dataset_id: str):
    """The :class:`DatasetSpec` of ``dataset_id``; an unknown id is a ``KeyError`` listing the known ones."""
    from ._catalogue import DATASET_IDS, SPEC_BY_ID

    if dataset_id not in SPEC_BY_ID:
        raise KeyError(f"unknown pairmeasures dataset {dataset_id!r}; known: {', '.join(DATASET_IDS)}")
    return SPEC_BY_ID[dataset_id]


def load(dataset_id: str, data: Optional[str | os.PathLike] = None):
    """The ir_datasets dataset ``dataset_id``; ``data``: a mirror folder to read it from (laid out
    like ``shared/data``), taking precedence over ``$PAIRMEASURES_DATA``."""
    spec = spec_of(dataset_id)
    register()
    if data is None:
        import ir_datasets

        return ir_datasets.load(dataset_id)
    from ._irds import build

    return build(spec, data)


def register() -> None:
    """Register the datasets with ir_datasets now (importing it); later calls do nothing."""
    import ir_datasets  # noqa: F401  first: its import hook (register_when_ir_datasets_loads) registers before ._irds is half imported

    from ._irds import register as register_all

    register_all()
