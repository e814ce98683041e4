"""Layer 3: ir_measures measures and the one provider that evaluates them on whole runs."""

from .base import COMMON_PARAMS, DegenerateQueryWarning, MeasureValues, PairMeasure, SideInput
from .duo import Duo
from .group import GroupFairnessMeasure, rKL, rND, rRD
from .provider import PairEvaluator, PairProvider, provider
from .ranked import RankedLists, RunInputError

#: The measures this package ships; registered through the built-in plugin like any other.
BUILTIN_MEASURES = (Duo, rND, rKL, rRD)

__all__ = [
    "BUILTIN_MEASURES",
    "COMMON_PARAMS",
    "DegenerateQueryWarning",
    "Duo",
    "GroupFairnessMeasure",
    "MeasureValues",
    "PairEvaluator",
    "PairMeasure",
    "PairProvider",
    "RankedLists",
    "RunInputError",
    "SideInput",
    "provider",
    "rKL",
    "rND",
    "rRD",
]
