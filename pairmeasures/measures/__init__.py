"""Layer 3: ir_measures measures and the one provider that evaluates them on whole runs."""

from .awrf import AWRF
from .base import (
                   COMMON_PARAMS,
                   DIRECTIONS,
                   EXPERIMENT_PLUS,
                   DegenerateQueryWarning,
                   MeasureOutputError,
                   MeasureValues,
                   MissingSideInfoWarning,
                   PairMeasure,
                   RangedParam,
                   SideInput,
)
from .delta_prf import DeltaAPRF, delta_a_prf
from .duo import Duo
from .exposure import ERBE, ERBP, ERBR, EXP, EXPRU, EXPU
from .fairr import FaiRR, NFaiRR
from .group import GroupFairnessMeasure, rKL, rND, rRD
from .measured import Measured
from .parity import ARP, IAA, NDKL
from .pooled import pooled, pooled_value
from .prf import PRF, nPRF
from .provider import PairEvaluator, PairProvider, provider
from .rab import ARaB, RaB
from .ranked import RankedLists, RunInputError
from .termbase import TermMeasure
from .texfair import TED, TExFAIR

#: The measures this package ships; registered through the built-in plugin like any other.
BUILTIN_MEASURES = (Duo, rND, rKL, rRD, TExFAIR, TED, AWRF, FaiRR, NFaiRR, RaB, ARaB, Measured,
                     EXP, EXPU, EXPRU, ERBE, ERBP, ERBR, NDKL, ARP, IAA, PRF, nPRF)

__all__ = [
    "ARP",
    "IAA",
    "NDKL",
    "ARaB",
    "AWRF",
    "BUILTIN_MEASURES",
    "COMMON_PARAMS",
    "DIRECTIONS",
    "EXPERIMENT_PLUS",
    "ERBE",
    "ERBP",
    "ERBR",
    "EXP",
    "EXPRU",
    "EXPU",
    "DegenerateQueryWarning",
    "DeltaAPRF",
    "Duo",
    "FaiRR",
    "MeasureOutputError",
    "Measured",
    "MissingSideInfoWarning",
    "NFaiRR",
    "GroupFairnessMeasure",
    "MeasureValues",
    "PairEvaluator",
    "PairMeasure",
    "PairProvider",
    "PRF",
    "RaB",
    "RangedParam",
    "RankedLists",
    "RunInputError",
    "SideInput",
    "TED",
    "TExFAIR",
    "TermMeasure",
    "delta_a_prf",
    "nPRF",
    "pooled",
    "pooled_value",
    "provider",
    "rKL",
    "rND",
    "rRD",
]
