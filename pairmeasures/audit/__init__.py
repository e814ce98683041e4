"""The audit as a library: run retrieval systems over a bias benchmark and measure relevance and bias.

```python
from pairmeasures.audit import AuditRequest, run_audit

result = run_audit(AuditRequest(dataset="pair/procon", systems=("bm25", "bm25>>dense")))
result.leaderboard          # systems by measures
result.per_query            # system, qid, measure, value
AuditRequest.from_json(result.request.to_json()) == result.request
```

The package is a floor of its own (docs/architecture.md): it imports the datasets, pipelines, measures and
statistics below it and nothing of the command line. Its rooms, one job each:

- :mod:`.request`: :class:`AuditRequest` (frozen; JSON in and out; :func:`read_request` reads a request or a written
  audit's manifest) and the defaults of a request;
- :mod:`.run`: :func:`run_audit`, the steps in order and nothing else, and the evaluation cache;
- :mod:`.result`: :class:`AuditResult` and its typed parts (statistics, ties, ΔA-PRF, axis evidence, trade-off,
  provenance);
- :mod:`.plan`: the inputs checked before any long work (systems parsed once into ``System`` objects, the baseline,
  the trade-off's bases) and the measures (parsed once into objects, as shown and as evaluated, with directions);
- :mod:`.runs`: the polarity depth, each system's run (from the run cache or run now) and its side columns;
- :mod:`pairmeasures.io.frames` (below it, shared with the benchmark and the measures): the one boundary where
  PyTerrier frames become ir_measures frames;
- :mod:`.evaluation`: per-query values through ir_measures, significance, statistics, breakdowns, the leaderboard,
  ΔA-PRF and bias by cut-off;
- :mod:`.curves`: bias against the cut-off and the relevance/bias trade-off of re-rankers over Lambda;
- :mod:`.axes`: the held-out evidence of DUO's polarity axes (or that they are unvalidated);
- :mod:`.tradeoff`: DuoGreedy against MMR over Lambda;
- :mod:`.engine`: where the model work runs (``local`` or ``ray``);
- :mod:`.jsonsafe`: values as JSON holds them (a leaf).

Writing an audit folder (plots, tables, report, manifest) is the command's: :mod:`pairmeasures.apps.audit`.
"""

from .request import DEFAULT_LAMBDAS, DEFAULT_SYSTEMS, AuditRequest, RequestError, read_request
from .result import AuditResult
from .run import EVALUATIONS_FORMAT, run_audit
from .runs import RUNS_FORMAT
from .tradeoff import EQUAL_COST_DROPS

__all__ = ["AuditRequest", "AuditResult", "RequestError", "read_request", "run_audit", "DEFAULT_SYSTEMS",
           "DEFAULT_LAMBDAS", "EQUAL_COST_DROPS", "RUNS_FORMAT", "EVALUATIONS_FORMAT"]
