"""The ``pairmeasures`` command line: a table of commands, each a module of :mod:`pairmeasures.apps.commands`."""

from __future__ import annotations

import argparse
from typing import Optional, Sequence

from .commands import (
    Command,
    audit,
    cache,
    datasets,
    demo,
    embed,
    eval_,
    generate_fitset,
    measures,
    seme,
    train_ibbr,
    train_polarity,
    validate_polarity,
)
from .console import say

#: Every command by name, in the order ``pairmeasures --help`` lists them.
COMMANDS: dict[str, Command] = {
    "demo": demo,
    "measures": measures,
    "eval": eval_,
    "validate-polarity": validate_polarity,
    "datasets": datasets,
    "audit": audit,
    "cache": cache,
    "embed": embed,
    "train-ibbr": train_ibbr,
    "train-polarity": train_polarity,
    "generate-fitset": generate_fitset,
    "seme": seme,
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``pairmeasures``: one subcommand per entry of :data:`COMMANDS`."""
    from .catalogue import families

    listed = "\n".join(f"  {family:<22} {', '.join(names)}" for family, names in families().items())
    parser = argparse.ArgumentParser(
        prog="pairmeasures",
        description="Measure bias in ranked lists next to relevance, through ir_measures and PyTerrier.",
        epilog=f"measure families (built-in, then plugins):\n{listed}\n\n"
               "Measures parse as in ir_measures, e.g. 'Duo(step=2)@10' or 'rKL(protected=\"con\")@10'; "
               "'pairmeasures measures NAME' explains one.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        command = commands.add_parser(name, help=module.HELP, description=module.DESCRIPTION,
                                      epilog=getattr(module, "EPILOG", None),
                                      formatter_class=getattr(module, "FORMATTER", argparse.HelpFormatter))
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``pairmeasures`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, NameError, FileNotFoundError, RuntimeError) as exc:  # bad input: one line, no traceback
        say(" ".join(filter(None, (args.command, getattr(args, "step", None)))), f"error: {exc}")
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C: one line, with what it left where there is something to say
        say(" ".join(filter(None, (args.command, getattr(args, "step", None)))),
            "interrupted" + (f": {exc}" if str(exc) else ""))
        return 130
