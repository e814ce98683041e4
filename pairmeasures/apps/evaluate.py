"""``pairmeasures eval``: the ``ir_measures`` command line with the pairmeasures measures and resources.

Reads qrels and a run strictly (a problem names the file and line), parses measure strings with
``ir_measures.parse_measure`` (relevance measures work too) and evaluates through
``ir_measures.calc_aggregate`` / ``iter_calc``.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Optional

from ..measures import PairMeasure

if TYPE_CHECKING:
    import pandas as pd

#: What ``--help`` says about the files.
FILES_HELP = (
    "QRELS is a TREC qrels file (query iteration doc relevance) or a BEIR qrels .tsv (header "
    "query-id, corpus-id, score). RUN is a TREC run file (query Q0 doc rank score tag), or a "
    "tab-separated file whose header names query_id (or qid), doc_id (or docno) and score, and side "
    "columns the measures read (polarity, group, text). Either may be gzipped (.gz).")


def parse_measure(text: str):
    """``ir_measures.parse_measure(text)``, where a parameter value its parser cannot read (``Duo@-1``,
    ``Duo(step=-1)``, ``Duo@abc``) gets the measure's own message (:func:`parameter_problem`)."""
    import ir_measures

    try:
        return ir_measures.parse_measure(text)
    except ValueError as exc:
        raise ValueError(parameter_problem(text) or str(exc)) from None


def parse_measures(texts: list[str]) -> list:
    """Measures from measure strings, without repeats, in the order given; resources named in them are
    checked now. A ValueError names the first string that does not parse."""
    import ir_measures

    measures: list = []
    for text in texts:
        try:
            measure = parse_measure(text)
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


def parameter_problem(text: str) -> Optional[str]:
    """The measure's own message about the parameter values of a measure string that ``ir_measures.parse_measure``
    rejects with its generic one: its parser takes only literal numbers and quoted text, so ``Duo@-1``,
    ``Duo(step=-1)`` and ``Duo@abc`` fail there. Read again with negative numbers as numbers and bare words as
    text, the measure checks the values as ``pm.Duo(step=-1)`` does (a bare word it accepts gets "text values need
    quotes"); None when that finds nothing (the string is malformed otherwise)."""
    import ast

    import ir_measures

    bare: list[str] = []

    def value(node: ast.expr):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = value(node.operand)
            if isinstance(inner, (int, float)) and not isinstance(inner, bool):
                return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.Name):
            bare.append(node.id)
            return node.id
        return ast.literal_eval(node)

    try:
        node = ast.parse(text.strip(), mode="eval").body
        params = {}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            at, node = node.right, node.left
        else:
            at = None
        if isinstance(node, ast.Call) and not node.args:
            params = {keyword.arg: value(keyword.value) for keyword in node.keywords if keyword.arg}
            node = node.func
        if not isinstance(node, ast.Name) or node.id not in ir_measures.measures.registry:
            return None
        measure = ir_measures.measures.registry[node.id]
        if at is not None:
            params[measure.AT_PARAM] = value(at)
    except (SyntaxError, ValueError, TypeError):
        return None
    try:
        measure(**params)
    except (ValueError, TypeError) as exc:
        return str(exc)
    named = next((f"{k}={v!r}" for k, v in params.items() if v in bare), None)
    return f"text values need quotes: write {named}" if named else None


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
