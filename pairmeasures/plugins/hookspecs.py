"""The hooks a pairmeasures plugin can implement.

A plugin is a module (or object) with functions named like the hooks below, marked with
:data:`pairmeasures.plugins.hookimpl`, published under the ``pairmeasures`` entry-point group::

    [project.entry-points.pairmeasures]
    my_plugin = "my_package.plugin"

Hooks take keyword arguments only and are called when ``pairmeasures`` is imported. The
built-in measures register through the same hooks (``pairmeasures.plugins.builtin``).
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import pluggy

hookspec = pluggy.HookspecMarker("pairmeasures")
#: The marker of a hook implementation (``@pm.hookimpl``): defined here beside the specifications, so that the
#: built-in plugin needs nothing of the package that loads it.
hookimpl = pluggy.HookimplMarker("pairmeasures")


@hookspec
def pairmeasures_measures() -> Sequence:
    """Return measures to register with ir_measures.

    Each item is a :class:`pairmeasures.PairMeasure` instance (its class's ``NAME`` becomes
    parseable: ``ir_measures.parse_measure("MyMeasure@10")``), evaluated by the pairmeasures
    provider on whole runs. A name already registered is skipped with a warning.
    """


@hookspec
def pairmeasures_side_info_schemes() -> Mapping[str, Callable]:
    """Return ``{scheme: factory}`` for side-information resources named ``scheme:ARGUMENT``.

    ``factory(ARGUMENT)`` returns a :class:`pairmeasures.sideinfo.SideInfoSource`; measures then
    accept the resource name in parameters such as ``Duo(polarity="scheme:ARGUMENT")``.
    """


@hookspec
def pairmeasures_stages() -> Sequence:
    """Return stages for system specs (``pairmeasures audit --systems 'bm25>>mystage(0.5)'``).

    Each item is a :class:`pairmeasures.pipelines.stages.StageType`: its name, signature, example, where it may
    stand, what it needs inserted before it and how it is built (see ``docs/architecture.md``, "Add a stage").
    A name already taken is skipped with a warning. Called when a spec is first parsed, not at import.
    """
