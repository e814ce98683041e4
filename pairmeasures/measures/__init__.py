"""Floor 5: ir_measures measures and the one provider that evaluates them on whole runs.

Each built-in measure family is one module with the same name as its formulas' module in :mod:`pairmeasures.math`
(``duo``, ``group``, ``texfair``, ...): it defines its measures, registers them in one call
(:func:`~pairmeasures.measures.registry.register_builtin`) and names them in its ``__all__``. Adding a family is
one import line below; :data:`BUILTIN_MEASURES`, this package's ``__all__`` and the names ``pm.Duo``, ``pm.rKL``,
... are derived from it.
"""

# isort: off
# The built-in measure families, in the order `pairmeasures measures` lists them: importing one registers its
# measures, so a family module imports no other family module (tests/test_plugins.py checks the order).
from .duo import *
from .group import *
from .texfair import *
from .awrf import *
from .fairr import *
from .rab import *
from .measured import *
from .exposure import *
from .parity import *
from .prf import *
# isort: on

import typing as _typing

from .base import *  # the contract a measure implements: PairMeasure, MeasureValues, SideInput, warnings, params
from .delta_prf import *
from .group import GroupFairnessMeasure as GroupFairnessMeasure
from .parsing import parse_measure as parse_measure
from .pooled import pooled as pooled
from .pooled import pooled_value as pooled_value
from .provider import *
from .ranked import RankedLists as RankedLists
from .ranked import RunInputError as RunInputError
from .registry import BUILTIN as _BUILTIN
from .termbase import TermMeasure as TermMeasure

#: The measures this package ships, in registration order; registered through the built-in plugin like any other.
BUILTIN_MEASURES = tuple(_BUILTIN)

if not _typing.TYPE_CHECKING:  # type checkers read the names from the imports above; a computed __all__ hides them
    __all__ = sorted(name for name, value in globals().items()
                     if not name.startswith("_") and not isinstance(value, type(_typing)))
