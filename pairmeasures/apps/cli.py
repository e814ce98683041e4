"""The ``pairmeasures`` command line: a table of commands, each a module of :mod:`pairmeasures.apps.commands`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Iterator, Mapping, Optional, Sequence

from .commands import Command
from .console import say
from .extras import extra_for, missing, needs_message

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
    """Entry point of the ``pairmeasures`` command."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words and words[0] in COMMANDS else None)
    args = parser.parse_args(words)
    where = " ".join(filter(None, (args.command, getattr(args, "step", None))))
    extra = getattr(args, "extra", None)
    absent = missing(getattr(args, "needs", ()))
    if absent:  # before any work
        say(where, needs_message(absent, extra) or f"needs {', '.join(absent)}")
        return 2
    try:
        return args.run(args)
    except (ValueError, NameError, FileNotFoundError, RuntimeError, ImportError) as exc:  # one line, no traceback
        module = _missing_module(exc)
        message = needs_message([module], extra) if module else None
        if message is None and isinstance(exc, ImportError):
            raise
        say(where, message or f"error: {exc}")
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C: one line, with what it left where there is something to say
        say(where, "interrupted" + (f": {exc}" if str(exc) else ""))
        return 130
    except BrokenPipeError:  # the reader stopped early (| head): no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _missing_module(exc: BaseException) -> Optional[str]:
    """The module of an extra whose absence ``exc`` comes from (a ModuleNotFoundError, or an error raised while
    handling one: "the bi-encoder stages need pyterrier-dr"), or None."""
    seen: set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ModuleNotFoundError) and current.name and extra_for(current.name):
            return current.name
        current = current.__cause__ or current.__context__
    return None
