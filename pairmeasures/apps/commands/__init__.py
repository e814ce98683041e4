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

__all__ = ["Command", "add_checkpoint_arguments", "add_engine_arguments"]


class Command(Protocol):
    """What :mod:`pairmeasures.apps.cli` needs of a command module."""

    HELP: str
    DESCRIPTION: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def add_checkpoint_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """The options a training command shares: ``--checkpoint-every``, ``--keep-checkpoints``, ``--resume``,
    ``--force`` (``command``: its name, in ``--force``'s help) and ``--absolute-paths``."""
    parser.add_argument("--checkpoint-every", type=int, default=None, metavar="N",
                        help="save a checkpoint every N steps into MODEL.checkpoints/ (default: none)")
    parser.add_argument("--keep-checkpoints", type=int, default=2, metavar="N",
                        help="keep the N latest checkpoints (each holds the model and optimizer state; default 2)")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the newest intact checkpoint in MODEL.checkpoints/ (refused for another "
                             "--base, other data or another recipe; replaces MODEL of the same training without "
                             "--force; another --max-steps warns: docs/polarity.md, 'Checkpoints and --resume')")
    parser.add_argument("--force", action="store_true",
                        help=f"replace an earlier {command} MODEL, and discard old checkpoints when not resuming")
    parser.add_argument("--absolute-paths", action="store_true",
                        help="write absolute paths in MODEL/training.json, the model card and the checkpoints' "
                             "records (the data, excluded and evaluated folders, a --base folder, the checkpoint "
                             "resumed from; default: relative to the folder each lies in, so that MODEL names them "
                             "wherever it is copied with them)")


def add_engine_arguments(parser: argparse.ArgumentParser, engine_help: str, local_ray: str) -> None:
    """The options of the commands that can run their model work on Ray: ``--engine``, ``--address`` and
    ``--workers`` (``engine_help``: what ``--engine`` chooses; ``local_ray``: the Ray started without an address)."""
    from ...compute.engines import ENGINES

    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help=f"{engine_help}; ray needs pip install 'pairmeasures[ray]' (docs/ray.md)")
    parser.add_argument("--address", default=None,
                        help=f"with --engine ray: the Ray cluster to join (e.g. auto or ray://head:10001); default: "
                             f"{local_ray}")
    parser.add_argument("--workers", type=int, default=None,
                        help="with --engine ray: model actors in the pool (default: one per GPU, else one per CPU)")
