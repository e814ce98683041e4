"""Floor 5: the patches pairmeasures makes to other libraries, in one quarantined place.

Each patch adds one behaviour that pairmeasures measures need and the library lacks; each is installed once, only
when a pairmeasures measure is evaluated (or, for ``pt.Experiment``, when PyTerrier is imported), and changes nothing
for an evaluation without our measures (``tests/test_frameworks.py`` checks this in fresh interpreters). What each one
adds and why is the table "Patches of other libraries" in docs/architecture.md, so that it can be proposed upstream;
:data:`CHECKED_WITH` names the library versions they were checked against (``tests/test_compat.py`` fails, naming
the patches to check again, when an installed version moves).

- :mod:`.imports`: :func:`after_import` (the one ``sys.meta_path`` finder) and :func:`replace_once`;
- :mod:`.irmeasures`: ir_measures' ``FallbackEvaluator.iter_calc``;
- :mod:`.pyterrier`: PyTerrier's ``pyterrier._evaluation`` internals.
"""

from __future__ import annotations

from typing import Iterable

from .imports import after_import, replace_once

__all__ = ["CHECKED_WITH", "adapt_frameworks", "adapt_when_loaded", "after_import", "replace_once"]

#: The distribution, the release series (``major.minor``) the patches were checked against and the patches that
#: reach into its internals: when an installed version leaves the series, these are to be checked again.
CHECKED_WITH = {
    "ir_measures": ("0.4", ["ir_measures.providers.fallback_provider.FallbackEvaluator.iter_calc"]),
    "pyterrier": ("1.1", ["pyterrier._evaluation._execution._ir_measures_to_dict",
                          "pyterrier._evaluation._execution._run_and_evaluate",
                          "pyterrier._evaluation._rendering._mean_of_measures",
                          "pyterrier._evaluation._rendering.RenderFromPerQuery.averages",
                          "pyterrier._evaluation._rendering.RenderFromPerQuery.perquery",
                          "pyterrier._evaluation._exec_tree.tree_execution",
                          "pyterrier._evaluation._exec_tree.TransformerRadixTree.traverse"]),
}


def adapt_frameworks(measures: Iterable) -> None:
    """Adapt ir_measures' fallback evaluator and, when PyTerrier is loaded, pt.Experiment's per-query table, means,
    per-query output and baseline tests to measures that leave queries out (each once); called by the provider when
    it builds an evaluator for ``measures`` (pairmeasures measures; nothing when there are none)."""
    import sys

    from .irmeasures import fallback_fills_no_pair_measure
    from .pyterrier import experiment_knows_left_out_queries

    if list(measures):
        fallback_fills_no_pair_measure()
        if "pyterrier" in sys.modules:
            experiment_knows_left_out_queries()


def adapt_when_loaded() -> None:
    """Adapt pt.Experiment before it evaluates its first system: now if PyTerrier is loaded, else right after it is
    (called once, when pairmeasures is imported). Adapting only when the first evaluator is built would come too
    late for the first system of the first ``pt.Experiment``, whose per-query table is already being filled."""
    from .pyterrier import experiment_knows_left_out_queries

    after_import("pyterrier._evaluation", experiment_knows_left_out_queries)
