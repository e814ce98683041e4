"""``pairmeasures seme``: run a search engine manipulation effect (SEME) study on a system's rankings.

Four steps, one module each: ``material`` (rankings of maximal and minimal signed bias with their mu+_DUO),
``serve`` (the local study web app), ``export`` (responses to CSV), ``analyze`` (the PAIR paper's regression).
Each module has ``HELP``, ``DESCRIPTION``, ``add_arguments(parser)`` and ``run(args) -> int``; heavy imports stay
inside ``run``.
"""

from __future__ import annotations

import argparse

__all__ = ["STEPS", "add_command"]

#: The study's steps in the order a user runs them.
STEPS = ("material", "serve", "export", "analyze")


def add_command(commands) -> None:
    """Add ``seme`` and its steps to the ``pairmeasures`` subcommands."""
    from . import analyze, export, material, serve

    modules = {"material": material, "serve": serve, "export": export, "analyze": analyze}
    seme = commands.add_parser(
        "seme", help="run a SEME study on a system: material, a local study web app, export, regression",
        description="A search engine manipulation effect study (PAIR paper, Section 6): make study material from a "
                    "system's rankings (orderings of maximal and minimal signed bias with their mu+_DUO), serve it "
                    "to participants on a local web app, export the responses, and test whether DUO predicts the "
                    "opinion shift. Steps: " + " -> ".join(STEPS) + ".",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    steps = seme.add_subparsers(dest="step", required=True, metavar="STEP")
    for name in STEPS:
        module = modules[name]
        parser = steps.add_parser(name, help=module.HELP, description=module.DESCRIPTION,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(parser)
        parser.set_defaults(run=module.run)
