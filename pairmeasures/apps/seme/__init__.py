"""``pairmeasures seme``: run a search engine manipulation effect (SEME) study on a system's rankings.

Four steps, one module each: ``material`` (rankings of maximal and minimal signed bias with their mu+_DUO),
``serve`` (the local study web app), ``export`` (responses to CSV), ``analyze`` (the PAIR paper's regression).
Each module has ``HELP``, ``DESCRIPTION``, ``add_arguments(parser)`` and ``run(args) -> int``, the shape of every
command (:mod:`pairmeasures.apps.commands`); :mod:`pairmeasures.apps.commands.seme` makes them subcommands. Heavy
imports stay inside ``run``.
"""

from __future__ import annotations

__all__ = ["STEPS"]

#: The study's steps in the order a user runs them.
STEPS = ("material", "serve", "export", "analyze")
