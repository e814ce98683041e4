"""``pairmeasures eval``: the ``ir_measures`` command line with the pairmeasures measures and resources.

Reads qrels and a run strictly (a problem names the file and line: :mod:`pairmeasures.io.runfiles`), takes
measures parsed by :mod:`pairmeasures.measures.parsing` (relevance measures work too), evaluates each measure with the
provider ``ir_measures.calc_aggregate`` would choose (:func:`evaluate`) and prints what the ``ir_measures`` command
prints (:func:`output`), or a table.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from ..io.runfiles import Qrels, Run
from .tables import FORMATS, render

#: What ``--help`` says about the files.
FILES_HELP = (
    "QRELS is a TREC qrels file (query iteration doc relevance) or a BEIR qrels .tsv (header "
    "query-id, corpus-id, score). RUN is a TREC run file (query Q0 doc rank score tag), or a "
    "tab-separated file whose header names query_id (or qid), doc_id (or docno) and score, and side "
    "columns the measures read (polarity, group, text). Either may be gzipped (.gz).")


def providers_for(measures: list, name: Optional[str] = None) -> list[tuple[Any, list]]:
    """``(provider, measures)`` pairs that compute ``measures``: the provider named ``name`` (one of
    ``ir_measures.providers.registry``) for all of them, else each measure by the first provider of
    ``ir_measures.DefaultPipeline`` that is installed and supports it, as ``ir_measures.calc_aggregate`` chooses."""
    import ir_measures

    if name is not None:
        provider = ir_measures.providers.registry.get(name)
        if provider is None:
            raise ValueError(f"--provider {name!r}: no such provider; choose one of "
                             f"{', '.join(sorted(ir_measures.providers.registry))}")
        unsupported = [str(m) for m in measures if not provider.supports(m)]
        if unsupported:
            raise ValueError(f"--provider {name} does not compute {', '.join(unsupported)}: leave --provider out to "
                             "let each measure find its provider")
        if not provider.is_available():
            raise ValueError(f"--provider {name} is not installed: {provider.install_instructions()}")
        return [(provider, list(measures))]
    left, chosen, missing = list(measures), [], []
    for provider in ir_measures.DefaultPipeline.providers:
        supported = [m for m in left if provider.supports(m)]
        if not supported:
            continue
        if not provider.is_available():
            missing.append(provider)
            continue
        chosen.append((provider, supported))
        left = [m for m in left if m not in supported]
        if not left:
            return chosen
    install = "".join(f"; {p.NAME} would ({p.install_instructions()})" for p in missing)
    raise ValueError(f"no installed provider computes {', '.join(map(str, left))}{install}")


def reads_frames(measures: list, provider: Optional[str] = None) -> bool:
    """Whether :func:`evaluate` reads the run as a DataFrame (some measure goes to the pairmeasures provider), so
    that the run must be read with its columns."""
    from ..measures.provider import PairProvider

    return any(isinstance(chosen, PairProvider) for chosen, _ in providers_for(measures, provider))


def evaluate(qrels: Qrels, run: Run, measures: list, *, per_query: bool = False, summary: bool = True,
             provider: Optional[str] = None) -> list[tuple[str, Any, Any]]:
    """``(query_id, measure, value)`` rows: the mean of each measure under query ``all`` in the order given, or, with
    ``per_query``, one row per query and measure (queries sorted, measures in the order given) followed by the means
    unless ``summary`` is false, as the ``ir_measures`` command prints them. Each measure is computed by the provider
    :func:`providers_for` picks; the pairmeasures provider reads the run as a DataFrame (side columns included), the
    others as nested dicts, which spares them converting a DataFrame row by row."""
    from ..measures.provider import PairProvider

    order = {m: i for i, m in enumerate(measures)}
    aggregators = {m: m.aggregator() for m in measures}
    rows = []
    for chosen, group in providers_for(measures, provider):
        frames = isinstance(chosen, PairProvider)
        evaluator = chosen.evaluator(group, qrels.frame() if frames else qrels.nested())
        run_input = run.frame() if frames else run.nested()
        if not per_query:
            aggregated = evaluator.calc_aggregate(run_input)
            rows += [("all", m, aggregated[m]) for m in group]
            continue
        for metric in evaluator.iter_calc(run_input):
            aggregators[metric.measure].add(metric.value)
            rows.append((metric.query_id, metric.measure, metric.value))
    rows.sort(key=lambda row: (row[0], order[row[1]]) if per_query else order[row[1]])
    if per_query and summary:
        rows += [("all", m, aggregators[m].result()) for m in measures]
    return rows


#: Output formats of ``pairmeasures eval``: the ``ir_measures`` command's two, then tables.
OUTPUT_FORMATS = ("tsv", "jsonl", *FORMATS)


def output(rows: list[tuple[str, Any, Any]], fmt: str = "tsv", *, per_query: bool = False, places: int = 4) -> str:
    """:func:`evaluate`'s rows as ``fmt`` (one of :data:`OUTPUT_FORMATS`). ``tsv`` and ``jsonl`` are the lines the
    ``ir_measures`` command prints (``measure<TAB>value``, or ``query<TAB>measure<TAB>value`` with ``per_query``;
    values with ``places`` decimals, all of them when ``places`` is -1); markdown, csv and json are tables with
    ``query_id`` (with ``per_query``), ``measure`` and ``value`` columns."""
    if fmt == "tsv":
        style = "" if places == -1 else f".{places}f"
        if per_query:
            return "".join(f"{q}\t{m}\t{v:{style}}\n" for q, m, v in rows)
        return "".join(f"{m}\t{v:{style}}\n" for _, m, v in rows)
    if fmt == "jsonl":
        return "".join(json.dumps({"query_id": q, "measure": str(m), "value": _plain(v)} if per_query else
                                  {"measure": str(m), "value": _plain(v)}) + "\n" for q, m, v in rows)
    import pandas as pd

    values = [str(v) if places == -1 else _plain(v) for _, _, v in rows]
    table = pd.DataFrame({"measure": [str(m) for _, m, _ in rows], "value": values})
    if per_query:
        table.insert(0, "query_id", [q for q, _, _ in rows])
    return render(table, fmt, digits=max(places, 0))


def _plain(value: Any) -> Any:
    """A NumPy number as the Python number it holds (for JSON)."""
    return value.item() if hasattr(value, "item") else value
