"""What report.html shows of an audit's numbers, made readable: the leaderboard as a relevance table and bias tables
(grouped by what the measures read, at most :data:`COLUMNS` measures each) with significance marks and the best value
in bold, the statistics one row per measure and system, the trade-off's equal-cost points as sentences, and the
dataset's name for the title. The files (leaderboard.md/.json, summary.csv, tradeoff.csv) keep every number as it is;
these are views of them."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ...audit.plan import label
from ..report import Cell, number_text

if TYPE_CHECKING:
    import pandas as pd

    from ...audit.result import Tradeoff
    from ...datasets.profile import Profile

__all__ = ["COLUMNS", "MARK", "dataset_title", "leaderboard_tables", "statistics_table", "equal_cost_text",
           "curve_table", "breakdown_table", "is_bias", "same_queries", "mixed_signals_text"]

#: The most measures a leaderboard table of the report holds, so that it fits a page 1,200 pixels wide.
COLUMNS = 6
#: The mark of a mean that differs significantly from the baseline's.
MARK = "†"

#: The title of the bias tables by the run column the measures read.
_GROUPS = {("polarity",): "Bias by polarity", ("group",): "Bias between gold-label groups",
           ("text",): "Bias in the documents' terms"}


def dataset_title(profile: "Profile") -> str:
    """The dataset as a title: a folder's name (not its path on this machine), or the dataset id."""
    return Path(profile.source).name if profile.corpus.is_folder else profile.name


def is_bias(direction: str) -> bool:
    """Whether a measure of this direction is a bias measure (every direction but relevance's ``higher-better``)."""
    return direction != "higher-better"


def _group(measure, direction: str) -> str:
    if not is_bias(direction):
        return "Relevance"
    columns = tuple(sorted(measure.run_columns())) if hasattr(measure, "run_columns") else ()
    return _GROUPS.get(columns, f"Bias ({', '.join(columns)})" if columns else "Bias")


def _best(values: list, direction: str) -> Optional[float]:
    """The best of ``values`` in ``direction`` (None when there is no fair direction or every value is the same)."""
    finite = [v for v in values if isinstance(v, float) and math.isfinite(v)]
    if len(finite) < 2 or max(finite) - min(finite) < 1e-12:
        return None
    if direction in ("higher-better", "higher-fairer"):
        return max(finite)
    if direction == "lower-fairer":
        return min(finite)
    if direction == "signed":
        return min(finite, key=abs)
    return None


def _interval(low, high, digits: int = 4, signed: bool = False) -> str:
    if not (isinstance(low, float) and isinstance(high, float)) or math.isnan(low) or math.isnan(high):
        return ""
    sign = "+" if signed else ""
    return f"[{low:{sign}.{digits}f}, {high:{sign}.{digits}f}]"


def _number(row, column: str) -> float:
    """``row[column]`` as a float (NaN where the statistics have no such column, e.g. an older summary)."""
    value = row.get(column, math.nan) if hasattr(row, "get") else math.nan
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def _mean_cell(mean: float, n: Optional[int], row, best: Optional[float], correction: str) -> Cell:
    """A leaderboard mean with its count ``n`` (None: not shown) and, from its statistics ``row`` (None: none), its
    interval and test as a hint and a dagger where the difference to the baseline is significant (the corrected
    test's decision)."""
    hint, mark = "", ""
    if row is not None:
        hint = f"95% CI {_interval(float(row['low']), float(row['high']))}"
        if isinstance(row["diff"], float) and not math.isnan(row["diff"]):
            hint += (f"; difference to the baseline {row['diff']:+.4f} "
                     f"{_interval(float(row['diff_low']), float(row['diff_high']), signed=True)} (per comparison)")
        p, corrected = _number(row, "p_value"), _number(row, "p_corrected")
        if not math.isnan(p):
            hint += f"; t-test p = {p:.2g} uncorrected" + ("" if math.isnan(corrected) else
                                                           f", {corrected:.2g} {correction}-corrected")
        mark = MARK if bool(row["reject"]) else ""
    return Cell(mean, mark=mark, note="" if n is None else str(n), strong=best is not None and mean == best, hint=hint)


def same_queries(summary: "pd.DataFrame", measure: str) -> bool:
    """Whether every system measured the same queries on ``measure`` (each one's ``n`` is the ``common_n`` every
    system measured): only then are its means compared across systems (the best in bold)."""
    part = summary[summary["measure"] == measure]
    if "common_n" not in part.columns or not len(part):
        return True
    return bool((part["n"] == part["common_n"]).all())


def leaderboard_tables(leaderboard: "pd.DataFrame", summary: "pd.DataFrame", shown: dict, directions: dict,
                       correction: str) -> list:
    """``(caption, frame)`` of the report's leaderboard: the relevance measures, then the bias measures by what they
    read (polarity, gold labels, terms), at most :data:`COLUMNS` to a table, each a row per system with the
    leaderboard's means as :class:`~pairmeasures.apps.report.Cell` (a dagger where the statistics find a significant
    difference to the baseline, n beside a bias mean, the best in bold where every system measured the same queries);
    then the means over the queries every system measured (where systems measured different queries; the best of
    those in bold) and the dataset-level figures such as ΔA-PRF, as they are."""
    import pandas as pd

    from ...audit.evaluation import common_column

    systems = list(leaderboard["system"])
    rows = summary.set_index(["system", "measure"])
    board = leaderboard.set_index("system")
    groups: dict = {}
    for name, measure in shown.items():
        groups.setdefault(_group(measure, directions[name]), []).append(name)
    tables = []
    for title, names in groups.items():
        for start in range(0, len(names), COLUMNS):
            frame = pd.DataFrame({"system": systems})
            for name in names[start:start + COLUMNS]:
                column, counts = label(name, directions[name]), f"{name} n"
                found = [rows.loc[(s, name)] if (s, name) in rows.index else None for s in systems]
                means = [float(board.loc[s, column]) if column in board.columns else
                         float(r["mean"]) if r is not None else math.nan for s, r in zip(systems, found)]
                ns = [int(board.loc[s, counts]) if counts in board.columns else
                      int(r["n"]) if r is not None else None for s, r in zip(systems, found)]
                best = _best(means, directions[name]) if same_queries(summary, name) else None  # else: below
                frame[column] = [_mean_cell(mean, n if is_bias(directions[name]) else None, r, best, correction)
                                 for mean, n, r in zip(means, ns, found)]
            part = f" ({start // COLUMNS + 1} of {math.ceil(len(names) / COLUMNS)})" if len(names) > COLUMNS else ""
            tables.append((f"{title}{part}", frame))
    known = {"system"} | {label(n, directions[n]) for n in shown} | {f"{n} n" for n in shown}
    others = [c for c in leaderboard.columns if c not in known]
    common = [c for c in others if c.endswith((" common queries", " common query"))]
    pattern = re.compile(r"^(.*) on (\d+) common quer(?:y|ies)$")  # the long header would not fit beside the others
    shared = {int(pattern.sub(r"\2", c)) for c in common}
    width = COLUMNS if len(shared) == 1 else COLUMNS - 2  # headers with their n are wider
    ways = {}  # each common column's direction, to bold its best
    for name in shown:
        rows_of = summary[summary["measure"] == name]
        if len(rows_of) and "common_n" in rows_of.columns:
            ways[common_column(name, directions[name], int(rows_of["common_n"].iloc[0]))] = directions[name]
    for start in range(0, len(common), width):
        part = leaderboard[["system", *common[start:start + width]]].copy()
        for column in common[start:start + width]:
            values = [float(v) for v in part[column]]
            best = _best(values, ways.get(column, ""))
            part[column] = [Cell(v, strong=best is not None and v == best) for v in values]
        if len(shared) == 1:
            caption = f"Bias over the {next(iter(shared))} queries every system measured, to compare across rows"
            part = part.rename(columns=lambda c: pattern.sub(r"\1", c))
        else:
            caption = "Bias over the queries every system measured (n), to compare across rows"
            part = part.rename(columns=lambda c: pattern.sub(r"\1 (n = \2)", c))
        tables.append((caption, part))
    rest = [c for c in others if c not in common]
    if rest:
        tables.append(("Dataset-level figures", leaderboard[["system", *rest]]))
    return tables


def statistics_table(summary: "pd.DataFrame", correction: str) -> "pd.DataFrame":
    """The statistics one row per measure and system: n and excluded, the mean with its 95% interval, the difference
    to the baseline with its interval (per comparison), and the t-test's p-value uncorrected and corrected with
    ``correction`` (small ones in scientific notation), the corrected one with a dagger where the difference is
    significant."""
    import pandas as pd

    frame = summary.sort_values("measure", kind="stable", key=lambda c: c.map(
        {m: i for i, m in enumerate(dict.fromkeys(summary["measure"]))}))
    return pd.DataFrame({
        "measure": frame["measure"].to_numpy(), "system": frame["system"].to_numpy(), "n": frame["n"].to_numpy(),
        "excluded": frame["excluded"].to_numpy(),
        "mean [95% CI]": [Cell(f"{number_text(float(m))} {_interval(float(lo), float(hi))}".strip())
                          for m, lo, hi in zip(frame["mean"], frame["low"], frame["high"])],
        "Δ baseline [95% CI]": [Cell("" if math.isnan(d) else
                                     f"{d:+.4f} {_interval(float(lo), float(hi), signed=True)}".strip())
                                for d, lo, hi in zip(frame["diff"].astype(float), frame["diff_low"], frame["diff_high"])],
        "p": [Cell(float(p)) for p in frame["p_value"]],  # uncorrected: the caption says so
        f"p {correction}-corrected": [Cell(float(p), mark=MARK if bool(r) else "") for p, r in zip(
            frame["p_corrected"] if "p_corrected" in frame.columns else [math.nan] * len(frame), frame["reject"])],
    })


def _excludes_zero(low: float, high: float) -> bool:
    return not (math.isnan(low) or math.isnan(high)) and (low > 0 or high < 0)


def mixed_signals_text(summary: "pd.DataFrame", baseline: str, correction: str, alpha: float = 0.05) -> str:
    """What the intervals and the tests each say, and the differences where they disagree, in sentences: the
    intervals are per comparison (uncorrected) over the queries a system and the baseline both measured, the test
    over the queries every system measured, corrected with ``correction`` across the systems of a measure."""
    tested = summary[summary["system"] != baseline]
    others = tested["system"].nunique()
    text = (f"The 95% intervals are per comparison: none is corrected for the other comparisons, and a difference's "
            f"interval is over the queries that system and {baseline} both measured. The paired t-test is over the "
            f"queries every system measured; its p-value is given uncorrected (pt.Experiment's p-value) and corrected "
            f"with {correction} for the {others} system{'s' if others != 1 else ''} compared with {baseline} on each "
            f"measure (pt.Experiment's p-value corrected); {MARK} marks a corrected p-value of at most {alpha:g}.")
    if "p_corrected" not in tested.columns:
        return text
    rows = [row for row in tested.itertuples(index=False) if not math.isnan(float(row.p_value))]
    loose = [row for row in rows if _excludes_zero(float(row.diff_low), float(row.diff_high)) and not bool(row.reject)]
    strict = [row for row in rows if bool(row.reject) and not _excludes_zero(float(row.diff_low), float(row.diff_high))]
    if not loose and not strict:
        return text + f" Here they agree: {MARK} marks exactly the differences whose interval excludes 0."

    def example(row) -> str:
        return (f"{row.measure} of {row.system}: difference {float(row.diff):+.4f} "
                f"{_interval(float(row.diff_low), float(row.diff_high), signed=True)}, p = {float(row.p_value):.2g} "
                f"uncorrected, {float(row.p_corrected):.2g} {correction}-corrected")

    corrected_away = [row for row in loose if float(row.p_value) <= alpha]
    apart = [row for row in loose if float(row.p_value) > alpha]
    said = []
    if corrected_away:
        said.append(f"{_count(corrected_away, 'difference')} whose interval excludes 0 and whose uncorrected p is at "
                    f"most {alpha:g} {_has(corrected_away)} no {MARK}, as the correction allows for the other "
                    f"comparisons and the interval does not (e.g. {example(corrected_away[0])})")
    if apart:
        said.append(f"{_count(apart, 'difference')} whose interval excludes 0 {_has(apart)} an uncorrected p above "
                    f"{alpha:g}: the paired t-test and the percentile bootstrap differ, and so can their queries "
                    f"(e.g. {example(apart[0])})")
    if strict:
        said.append(f"{_count(strict, 'difference')} marked {MARK} {_has(strict)} an interval that includes 0 "
                    f"(e.g. {example(strict[0])})")
    return (text + " So the two can disagree: here " + "; ".join(said) + ". Read a difference on which they disagree "
            "as suggestive, not established.")


def _count(rows: list, noun: str) -> str:
    return f"{len(rows)} {noun}{'s' if len(rows) != 1 else ''}"


def _has(rows: list) -> str:
    return "have" if len(rows) != 1 else "has"


def _short(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") or "0"


def _verdict(points: dict, direction: str) -> str:
    """Which method reaches the fairer bias at this cost, in words ("" without a fair direction)."""
    (a, x), (b, y) = points.items()
    if math.isnan(x) or math.isnan(y) or direction not in ("lower-fairer", "higher-fairer", "signed"):
        return ""
    if direction == "signed":
        x, y = abs(x), abs(y)
    if abs(x - y) < 5e-4:
        return ": both about the same"
    fairer = (x < y) if direction != "higher-fairer" else (x > y)
    return f": {a if fairer else b} is fairer by {abs(x - y):.3f}"


def equal_cost_text(trade: "Tradeoff", direction: str) -> str:
    """The equal-cost points of the trade-off in sentences, a paragraph per system: at each relevance drop, the bias
    each method reaches when relevance may fall by at most that much from Lambda = 1, at which Lambda and relevance,
    and which is fairer (``direction``: the bias measure's)."""
    relevance, bias = trade.relevance, trade.bias
    curve, cost = trade.curve, trade.equal_cost
    paragraphs = []
    for system, part in cost.groupby("system", sort=False):
        line = curve[curve["system"] == system]
        start = line[line["Lambda"] == 1.0]["relevance"]
        top = float(start.iloc[0]) if len(start) else math.nan
        base = line["base"].iloc[0] if len(line) else "its base run"
        sentences = [f"{system}: {relevance} starts at {top:.3f} (λ = 1, the order of {base})."]
        for drop, points in part.groupby("relevance_drop", sort=False):
            reached: dict = {}
            said: list = []
            for row in points.itertuples(index=False):
                reached[row.method] = float(row.bias)
                never = float(row.relevance) > top - float(drop) + 1e-9  # its lowest Lambda costs less than the drop
                said.append(f"{row.method}{'' if said else f' reaches {bias}'} {row.bias:.3f} (λ = "
                            f"{_short(float(row.Lambda))}, {relevance} {row.relevance:.3f}"
                            f"{'; no λ loses more' if never else ''})")
            sentences.append(f"Losing at most {drop:g} {relevance}: {' and '.join(said)}{_verdict(reached, direction)}.")
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def curve_table(curve: "pd.DataFrame", relevance: str, bias: str) -> "pd.DataFrame":
    """The trade-off curve, one row per method and Lambda: the means with their 95% intervals and n (a system column
    when several systems have a curve)."""
    import pandas as pd

    columns = {} if curve["system"].nunique() == 1 else {"system": curve["system"].to_numpy()}
    return pd.DataFrame({
        **columns, "method": curve["method"].to_numpy(), "λ": [Cell(_short(float(v))) for v in curve["Lambda"]],
        relevance: curve["relevance"].to_numpy(dtype=float),
        f"{relevance} 95% CI": [Cell(_interval(float(lo), float(hi)))
                                for lo, hi in zip(curve["relevance_low"], curve["relevance_high"])],
        bias: curve["bias"].to_numpy(dtype=float),
        f"{bias} 95% CI": [Cell(_interval(float(lo), float(hi))) for lo, hi in zip(curve["bias_low"], curve["bias_high"])],
        "n": curve["n"].to_numpy(),
    })


def breakdown_table(cells: "pd.DataFrame", measure: str, direction: str) -> "pd.DataFrame":
    """One measure's means by the values of the breakdown's field: a row per value, a column per system, n beside each
    mean and the best of a row (in ``direction``) in bold."""
    import pandas as pd

    chosen = cells[cells["measure"] == measure]
    systems = list(dict.fromkeys(chosen["system"]))
    table = pd.DataFrame({str(chosen["field"].iloc[0]) if len(chosen) else "value": list(dict.fromkeys(chosen["value"]))})
    found = {(v, s): (float(m), int(n)) for v, s, m, n in zip(chosen["value"], chosen["system"], chosen["mean"], chosen["n"])}
    for system in systems:
        column = []
        for value in table.iloc[:, 0]:
            best = _best([found[(value, s)][0] for s in systems if (value, s) in found], direction)
            mean, n = found.get((value, system), (math.nan, 0))
            column.append(Cell(mean, note=str(n) if (value, system) in found else "", strong=best is not None and mean == best))
        table[system] = column
    return table
