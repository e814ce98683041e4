"""The stages of system specs (``bm25>>dense>>duogreedy(0.5)``), one module each.

Each module declares its :class:`StageType` (name, signature, example, place, needs, build, cache identity, help)
and registers it; the import line below is the only other place a built-in stage is named. A plugin adds stages
through the ``pairmeasures_stages`` hook. Nothing here imports PyTerrier until a stage is built.
"""

from .registry import SpecError, Stage, StageType, literal_text, register_stage, stage_type, stage_types

# The built-in stages, in the order ``pairmeasures audit --help`` lists them: a new stage is a module and a name here.
# isort: off
from . import bm25, dense, ce, duogreedy, mmr, biased, run_file, user_module  # noqa: F401
# isort: on

__all__ = ["SpecError", "Stage", "StageType", "literal_text", "register_stage", "stage_type", "stage_types"]
