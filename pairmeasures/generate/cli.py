"""Deprecated, removed in 0.3: the former home of ``pairmeasures generate-fitset``'s command line.

Its names (``HELP``, ``DESCRIPTION``, ``add_arguments``, ``run``) moved to
:mod:`pairmeasures.apps.commands.generate_fitset`; the generation is :func:`pairmeasures.generate.generate_fitset`.
Importing one from here still works and warns (:class:`DeprecationWarning`) naming its new module.
"""

from __future__ import annotations

from .._moved import moved_names

_MOVED = {
    "HELP": "pairmeasures.apps.commands.generate_fitset",
    "DESCRIPTION": "pairmeasures.apps.commands.generate_fitset",
    "add_arguments": "pairmeasures.apps.commands.generate_fitset",
    "run": "pairmeasures.apps.commands.generate_fitset",
}

__all__ = list(_MOVED)  # each comes from __getattr__ (PEP 562), with its warning


__getattr__, __dir__ = moved_names(__name__, _MOVED, removed_in="0.3")
