"""The datasets pairmeasures registers, collected from the dataset family modules.

Each family module (``perspectrum.py``, ...) holds its records, conversion, builder, resources and
a tuple ``SPECS`` of :class:`~pairmeasures.datasets._loaders.DatasetSpec`; adding a dataset family
means one new module and one entry in :data:`FAMILIES`. This module is imported only when a dataset
is loaded, listed or registered, so that ``import pairmeasures`` imports no family module.
"""

from __future__ import annotations

from . import grep_biasir, msmarco_gender, perspectrum, procon, wiki_balance
from ._loaders import DatasetSpec

#: The dataset family modules, in the order their datasets are listed.
FAMILIES = (wiki_balance, msmarco_gender, perspectrum, procon, grep_biasir)

SPECS: tuple[DatasetSpec, ...] = tuple(spec for family in FAMILIES for spec in family.SPECS)
SPEC_BY_ID = {spec.id: spec for spec in SPECS}
DATASET_IDS = tuple(SPEC_BY_ID)
