"""Deprecated, removed in 0.3: the former home of ``pairmeasures train-polarity``'s command line.

Its names (``HELP``, ``DESCRIPTION``, ``add_arguments``, ``run``) moved to
:mod:`pairmeasures.apps.commands.train_polarity`; the training is :func:`pairmeasures.train.polarity.train_polarity`.
Importing one from here still works and warns (:class:`DeprecationWarning`) naming its new module.
"""

from __future__ import annotations

from .._moved import moved_names

_MOVED = {
    "HELP": "pairmeasures.apps.commands.train_polarity",
    "DESCRIPTION": "pairmeasures.apps.commands.train_polarity",
    "add_arguments": "pairmeasures.apps.commands.train_polarity",
    "run": "pairmeasures.apps.commands.train_polarity",
}

__all__ = list(_MOVED)  # each comes from __getattr__ (PEP 562), with its warning


__getattr__, __dir__ = moved_names(__name__, _MOVED, removed_in="0.3")
