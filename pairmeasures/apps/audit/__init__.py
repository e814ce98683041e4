"""``pairmeasures audit``: run retrieval systems over a bias benchmark; a leaderboard of relevance and bias.

The audit is a package of rooms, one job each:

- :mod:`.orchestrate`: :func:`audit`, the steps in order and nothing else;
- :mod:`.plan`: the inputs checked before any long work (systems parsed once into ``System`` objects, the baseline,
  the trade-off's bases) and the measures (as shown and as evaluated, with their directions);
- :mod:`.runs`: the polarity model, each system's run (from the run cache or run now) and its side columns;
- :mod:`.evaluation`: per-query values through ir_measures, significance, statistics, breakdowns, the leaderboard,
  ΔA-PRF and bias by cut-off;
- :mod:`.axes`: the held-out evidence of DUO's polarity axes (or that they are unvalidated);
- :mod:`.tradeoff`: DuoGreedy against MMR over Lambda;
- :mod:`.outputs`: plots, tables, report and manifest, written into a folder that replaces ``--out`` at the end;
- :mod:`.help`: the command's help epilog, default dataset and printed leaderboard;
- :mod:`.printed`: the leaderboard as printed on a terminal, in blocks of columns that fit its width.

The dataset profile the audit reads is :mod:`pairmeasures.datasets.profile`; caches on disk are
:class:`pairmeasures.sideinfo.memo.DiskMemo`.
"""

from .help import DEFAULT_SYSTEMS, default_dataset, help_epilog, leaderboard_text
from .orchestrate import EVALUATIONS_FORMAT, audit
from .outputs import MANIFEST
from .plan import default_measures
from .runs import RUNS_FORMAT
from .tradeoff import DEFAULT_LAMBDAS, EQUAL_COST_DROPS

__all__ = ["audit", "default_measures", "DEFAULT_SYSTEMS", "DEFAULT_LAMBDAS", "EQUAL_COST_DROPS", "MANIFEST",
           "RUNS_FORMAT", "EVALUATIONS_FORMAT", "help_epilog", "default_dataset", "leaderboard_text"]
