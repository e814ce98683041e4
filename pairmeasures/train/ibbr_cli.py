"""Deprecated, removed in 0.3: the former home of ``pairmeasures train-ibbr``.

Its names moved: ``train_ibbr``, ``FAIRNESS``, ``LAMBDA_LR`` and ``TRAINING_FILE`` to
:mod:`pairmeasures.train.ibbr_training`; the command (``HELP``, ``DESCRIPTION``, ``add_arguments``, ``run``) to
:mod:`pairmeasures.apps.commands.train_ibbr`. Importing one from here still works and warns
(:class:`DeprecationWarning`) naming its new module.
"""

from __future__ import annotations

from .._moved import moved_names

_MOVED = {
    "train_ibbr": "pairmeasures.train.ibbr_training",
    "FAIRNESS": "pairmeasures.train.ibbr_training",
    "LAMBDA_LR": "pairmeasures.train.ibbr_training",
    "TRAINING_FILE": "pairmeasures.train.ibbr_training",
    "HELP": "pairmeasures.apps.commands.train_ibbr",
    "DESCRIPTION": "pairmeasures.apps.commands.train_ibbr",
    "add_arguments": "pairmeasures.apps.commands.train_ibbr",
    "run": "pairmeasures.apps.commands.train_ibbr",
}

__all__ = list(_MOVED)  # each comes from __getattr__ (PEP 562), with its warning


__getattr__, __dir__ = moved_names(__name__, _MOVED, removed_in="0.3")
