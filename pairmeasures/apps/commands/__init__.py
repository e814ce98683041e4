"""The ``pairmeasures`` commands, one module each, all of one shape (:class:`Command`).

A command module has ``HELP`` (its line in ``pairmeasures --help``), ``DESCRIPTION`` (the top of
``pairmeasures COMMAND --help``), ``add_arguments(parser)`` and ``run(args) -> int`` (the exit status), and may have
``EPILOG`` (printed after the options) and ``FORMATTER`` (an argparse help formatter class, e.g.
``argparse.RawDescriptionHelpFormatter`` for text laid out by hand). Heavy imports (pandas, PyTerrier, torch) stay
inside ``run``, so ``pairmeasures --help`` stays fast. :data:`pairmeasures.apps.cli.COMMANDS` names them; adding a
command is a module here and a line there.
"""

from __future__ import annotations

import argparse
from typing import Protocol

__all__ = ["Command"]


class Command(Protocol):
    """What :mod:`pairmeasures.apps.cli` needs of a command module."""

    HELP: str
    DESCRIPTION: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...
