"""``pairmeasures seme``: a search engine manipulation effect (SEME) study on a system's rankings.

Its steps are modules of :mod:`pairmeasures.apps.seme` of the command shape (``HELP``, ``DESCRIPTION``,
``add_arguments``, ``run``): ``material``, ``serve``, ``export``, ``analyze``; this module makes each a subcommand
and runs the one named.
"""

from __future__ import annotations

import argparse

from ..seme import STEPS, analyze, export, material, serve

HELP = "run a SEME study on a system: material, a local study web app, export, regression"
DESCRIPTION = ("A search engine manipulation effect study (PAIR paper, Section 6): make study material from a "
               "system's rankings (orderings of maximal and minimal signed bias with their mu+_DUO), serve it "
               "to participants on a local web app, export the responses, and test whether DUO predicts the "
               "opinion shift. Steps: " + " -> ".join(STEPS) + ".")
FORMATTER = argparse.RawDescriptionHelpFormatter
#: Each step's module, by name.
STEP_MODULES = {"material": material, "serve": serve, "export": export, "analyze": analyze}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")
    for name in STEPS:
        module = STEP_MODULES[name]
        step = steps.add_parser(name, help=module.HELP, description=module.DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(step)
        step.set_defaults(extra=getattr(module, "EXTRA", None), needs=getattr(module, "NEEDS", ()))


def run(args: argparse.Namespace) -> int:
    return STEP_MODULES[args.step].run(args)
