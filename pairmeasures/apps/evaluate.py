"""``pairmeasures eval``: the ``ir_measures`` command line with the pairmeasures measures and resources.

Reads qrels and a run strictly (a problem names the file and line), parses measure strings with
``ir_measures.parse_measure`` (relevance measures work too) and evaluates through
``ir_measures.calc_aggregate`` / ``iter_calc``.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from ..measures import PairMeasure

if TYPE_CHECKING:
    import pandas as pd

#: What ``--help`` says about the files.
FILES_HELP = (
    "QRELS is a TREC qrels file (query iteration doc relevance) or a BEIR qrels .tsv (header "
    "query-id, corpus-id, score). RUN is a TREC run file (query Q0 doc rank score tag), or a "
    "tab-separated file whose header names query_id (or qid), doc_id (or docno) and score, and side "
    "columns the measures read (polarity, group, text). Either may be gzipped (.gz).")


def parse_measures(texts: list[str]) -> list:
    """Measures from measure strings, without repeats, in the order given; resources named in them are
    checked now. A ValueError names the first string that does not parse."""
    import ir_measures

    measures: list = []
    for text in texts:
        try:
            measure = ir_measures.parse_measure(text)
        except NameError:
            base = text.split("(")[0].split("@")[0].strip()
            close = difflib.get_close_matches(base, list(ir_measures.measures.registry), n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise ValueError(f"measure {text!r}: no measure named {base!r}{hint} ('pairmeasures measures' lists "
                             "the bias measures)") from None
        except ValueError as exc:
            raise ValueError(f"measure {text!r}: {exc}") from None
        if isinstance(measure, PairMeasure):
            measure.check_resources()
        if measure not in measures:
            measures.append(measure)
    return measures


def evaluate(qrels: pd.DataFrame, run: pd.DataFrame, measures: list, per_query: bool) -> pd.DataFrame:
    """Aggregates (``measure, value``, in the order given) or, with ``per_query``, one row per query and
    measure followed by the aggregates under query ``all``, as ``ir_measures -q`` prints them."""
    import ir_measures
    import pandas as pd

    if not per_query:
        results = ir_measures.calc_aggregate(measures, qrels, run)
        return pd.DataFrame({"measure": [str(m) for m in measures], "value": [results[m] for m in measures]})
    order = {m: i for i, m in enumerate(measures)}
    aggregators = {m: m.aggregator() for m in measures}
    rows = []
    for metric in ir_measures.iter_calc(measures, qrels, run):
        aggregators[metric.measure].add(metric.value)
        rows.append((metric.query_id, order[metric.measure], str(metric.measure), metric.value))
    rows.sort(key=lambda row: (row[0], row[1]))
    rows += [("all", order[m], str(m), aggregators[m].result()) for m in measures]
    return pd.DataFrame([(q, m, v) for q, _, m, v in rows], columns=["query_id", "measure", "value"])


def tsv(table: pd.DataFrame, digits: int = 4) -> str:
    """Tab-separated lines without a header, as the ``ir_measures`` command prints."""
    cells = [[f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in row] for row in table.itertuples(index=False)]
    return "".join("\t".join(row) + "\n" for row in cells)
