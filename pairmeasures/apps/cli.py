"""The ``pairmeasures`` command line: a table of commands, each a module of :mod:`pairmeasures.apps.commands`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from typing import Iterator, Mapping, Optional, Sequence

from .commands import Command
from .console import say, warnings_shown
from .extras import missing, needs_message
from .failures import DEBUG_ENV, debug_asked, failure, missing_module, sigterm_interrupts

#: The module of each command (in :mod:`pairmeasures.apps.commands`), in the order ``pairmeasures --help`` lists them.
_MODULES = {
    "demo": "demo",
    "measures": "measures",
    "eval": "eval_",
    "validate-polarity": "validate_polarity",
    "datasets": "datasets",
    "audit": "audit",
    "cache": "cache",
    "embed": "embed",
    "train-ibbr": "train_ibbr",
    "train-polarity": "train_polarity",
    "generate-fitset": "generate_fitset",
    "seme": "seme",
    "benchmark": "benchmark",
    "leaderboard": "leaderboard",
}


class _Commands(Mapping[str, Command]):
    """The command modules by name, each imported when first asked for: running one command imports only its own."""

    def __getitem__(self, name: str) -> Command:
        module: Command = importlib.import_module(f"{__package__}.commands.{_MODULES[name]}")
        return module

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


#: Every command by name, in the order ``pairmeasures --help`` lists them.
COMMANDS: Mapping[str, Command] = _Commands()


def build_parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The parser of ``pairmeasures``: one subcommand per entry of :data:`COMMANDS`, or only ``command``'s (what
    running that command needs: the other modules are not imported)."""
    from .. import __version__

    epilog = None
    if command is None:
        from .catalogue import families

        listed = "\n".join(f"  {family:<22} {', '.join(names)}" for family, names in families().items())
        epilog = (f"measure families (built-in, then plugins):\n{listed}\n\n"
                  "Measures parse as in ir_measures, e.g. 'Duo(step=2)@10' or 'rKL(protected=\"con\")@10'; "
                  "'pairmeasures measures NAME' explains one.")
    parser = argparse.ArgumentParser(
        prog="pairmeasures",
        description="Measure bias in ranked lists next to relevance, through ir_measures and PyTerrier.",
        epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pairmeasures {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help=f"on a failure, print its traceback too (also after the command; or set {DEBUG_ENV}=1)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS if command is None else [command]:
        module = COMMANDS[name]
        subparser = commands.add_parser(name, help=module.HELP, description=module.DESCRIPTION,
                                        epilog=getattr(module, "EPILOG", None),
                                        formatter_class=getattr(module, "FORMATTER", argparse.HelpFormatter))
        module.add_arguments(subparser)
        subparser.set_defaults(run=module.run)
        subparser.set_defaults(extra=getattr(module, "EXTRA", None), needs=getattr(module, "NEEDS", ()))
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``pairmeasures`` command. Every failure is one line on stderr (the traceback too with
    ``--debug``); Ctrl-C ends a command with status 130, SIGTERM with 143, each in one line, releasing what the
    command holds (apps/failures.py)."""
    words, debug = debug_asked(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser(words[0] if words and words[0] in COMMANDS else None)
    args = parser.parse_args(words)
    where = " ".join(filter(None, (args.command, getattr(args, "step", None))))
    extra = getattr(args, "extra", None)
    absent = missing(getattr(args, "needs", ()))
    if absent:  # before any work
        say(where, needs_message(absent, extra) or f"needs {', '.join(absent)}")
        return 2
    # a warning no command prints itself is one line too (filters as Python's; a command's own printer nests inside)
    with sigterm_interrupts() as terminated, warnings_shown(where):
        try:
            return args.run(args)
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: one line, with what it left where there is something to say
            if debug:
                traceback.print_exc()
            said = f": {exc}" if str(exc) else ""
            if terminated:
                say(where, f"terminated (SIGTERM){said}")
                return 143
            say(where, f"interrupted{said}")
            return 130
        except BrokenPipeError:  # the reader stopped early (| head): no traceback
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
        except BaseException as exc:  # anything else, sys.exit in code the command ran included: one line
            if debug:
                traceback.print_exc()
            message, status = failure(exc, extra)
            say(where, message)
            return status


#: The module of an extra whose absence an exception comes from (see :func:`~pairmeasures.apps.failures.missing_module`).
_missing_module = missing_module
