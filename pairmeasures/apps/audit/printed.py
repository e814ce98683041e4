"""The leaderboard as ``pairmeasures audit`` prints it on a terminal: what fits its width.

Each measure is a column of means with a dagger where the mean differs significantly from the baseline's (the rule of
the report: the corrected paired t-test), a bias measure's ``(n)`` beside its mean, and, where the systems measured
different queries, the means over the queries every system measured only where they differ from the plain means.
Columns that do not fit the width go into further blocks below, each with the systems again; a number is never cut.
A column with the same text on every row (the held-out accuracy of DUO's axes) is a line under the table.
``leaderboard.md`` and ``leaderboard.json`` keep every column (intervals too)."""

from __future__ import annotations

import math
import textwrap
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import pandas as pd

    from ...audit.result import AuditResult

__all__ = ["WIDTH", "PRINTED_FORMATS", "terminal_width", "fitted_leaderboard", "leaderboard_text"]

#: The command's ``--format`` values: ``text`` (the default) fits the terminal, the others print the whole table.
PRINTED_FORMATS = ("text", "markdown", "csv", "json")

#: The width printed to when stdout is not a terminal and ``COLUMNS`` is not set (a pipe, a log file).
WIDTH = 100
#: Spaces between columns.
GAP = 2
#: Mark of a mean that differs significantly from the baseline's (the report's mark).
MARK = "†"


def terminal_width() -> int:
    """The terminal's width (``COLUMNS`` first, as :func:`shutil.get_terminal_size` reads it), else :data:`WIDTH`."""
    import shutil

    return shutil.get_terminal_size((WIDTH, 24)).columns


def _width(text: str) -> int:
    """Columns ``text`` takes on a terminal (wide East Asian characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text: str, width: int, left: bool = False) -> str:
    space = " " * max(width - _width(text), 0)
    return text + space if left else space + text


def _number(value) -> str:
    from ..report import number_text

    if isinstance(value, float) and math.isnan(value):
        return "-"
    return number_text(value)


@dataclass
class _Column:
    header: str
    cells: list
    left: bool = False

    @property
    def width(self) -> int:
        return max([_width(self.header), *map(_width, self.cells)])


def _measure_column(header: str, means: list, marks: list, counts: Optional[list]) -> _Column:
    """Means with their marks (a space where none, so that the digits align) and ``(n)`` after each, right-aligned."""
    texts = [_number(m) for m in means]
    wide = max(map(_width, texts))
    cells = [_pad(t, wide) + (mark or " ") for t, mark in zip(texts, marks)]
    if counts is not None:
        notes = [f"({n})" for n in counts]
        cells = [f"{c} {_pad(note, max(map(_width, notes)))}" for c, note in zip(cells, notes)]
        header = f"{header} (n)"
    return _Column(header, cells)


def _units(result: "AuditResult") -> tuple[list, list, dict]:
    """``(units, notes, seen)``: the columns to print, in the leaderboard's order, each unit a list of columns kept
    together (a measure and its common-query means); lines for columns with one text on every row; what was shown."""
    from ...audit.axes import AXIS_COLUMN
    from ...audit.evaluation import DELTA_A_PRF_INTERVAL, common_column
    from ...audit.plan import label

    board: "pd.DataFrame" = result.leaderboard
    summary: "pd.DataFrame" = result.summary
    systems = list(board["system"])
    rows = summary.set_index(["system", "measure"])
    measures = {label(m, d): (m, d) for m, d in zip(summary["measure"], summary["direction"])}
    counted = {f"{m} n" for m, _ in measures.values()}
    commons = {}
    for name, way in measures.values():
        part = summary[summary["measure"] == name]
        if "common_n" in part.columns and len(part):
            commons[common_column(name, way, int(part["common_n"].iloc[0]))] = (name, int(part["common_n"].iloc[0]))
    units: list = []
    notes: list = []
    seen = {"bias": False, "common": False}
    for column in board.columns:
        if column == "system" or column in counted or column in commons or column == DELTA_A_PRF_INTERVAL:
            continue
        values = list(board[column])
        if column in measures:
            name, way = measures[column]
            found = [rows.loc[(s, name)] if (s, name) in rows.index else None for s in systems]
            marks = [MARK if r is not None and bool(r["reject"]) else "" for r in found]
            bias = way != "higher-better"
            counts = [int(r["n"]) if r is not None else 0 for r in found] if bias else None
            seen["bias"] |= bias
            unit = [_measure_column(column, [float(v) for v in values], marks, counts)]
            common = next(((c, n) for c, (m, n) in commons.items() if m == name and c in board.columns), None)
            if common is not None:  # the means over the queries every system measured, where they differ
                means = [float(v) for v in board[common[0]]]
                same = [r is not None and int(r["n"]) == common[1] for r in found]  # measured those queries only
                cells = ["=" if alike else _number(m) for m, alike in zip(means, same)]
                unit.append(_Column(f"on {common[1]}", cells))
                seen["common"] = True
            units.append(unit)
        elif column == AXIS_COLUMN and len({str(v) for v in values}) == 1:
            notes.append(f"{column}: {values[0]}")  # one axis per query serves every system: the same on every row
        else:
            units.append([_Column(column, [_number(v) if isinstance(v, float) else str(v) for v in values])])
    return units, notes, seen


def _blocks(units: list, first: int, width: int) -> list:
    """``units`` packed into blocks that fit ``width`` beside the system column (``first`` wide); a unit wider than
    the room stands alone in its block."""
    blocks: list = [[]]
    used = first
    for unit in units:
        need = sum(GAP + column.width for column in unit)
        if blocks[-1] and used + need > width:
            blocks.append([])
            used = first
        blocks[-1].append(unit)
        used += need
    return [block for block in blocks if block]


def fitted_leaderboard(result: "AuditResult", out: Path, width: Optional[int] = None) -> str:
    """The leaderboard of an audit ``result`` (:func:`~pairmeasures.audit.run_audit`) written into ``out`` in blocks
    of columns that fit ``width`` (default: :func:`terminal_width`), with what its marks mean and where the whole
    table is."""
    width = terminal_width() if width is None else width
    baseline, correction = result.statistics.baseline, result.statistics.correction
    systems = [str(s) for s in result.leaderboard["system"]]
    units, notes, seen = _units(result)
    first = max(_width("system"), *map(_width, systems))
    lines: list = []
    for block in _blocks(units, first, width):
        columns = [column for unit in block for column in unit]
        if lines:
            lines.append("")
        lines.append(_pad("system", first, left=True) + "".join(" " * GAP + _pad(c.header, c.width) for c in columns))
        lines += [(_pad(system, first, left=True) + "".join(" " * GAP + _pad(c.cells[i], c.width)
                                                             for c in columns)).rstrip()
                  for i, system in enumerate(systems)]
    legend = [f"{MARK} differs from {baseline}'s mean (paired t-test over the queries every system measured, "
              f"{correction}-corrected, α = 0.05)."]
    if seen["bias"]:
        legend.append("Arrows: ↓ lower is fairer, ↑ higher is fairer (relevance: higher is better), ↕ signed "
                      "(0 = balanced); (n): the queries a bias measure measured, it leaves out those with nothing to "
                      "measure.")
    if seen["common"]:
        legend.append("'on N' after a measure: its mean over the N queries every system measured, to compare rows "
                      "where the systems measured different queries ('=': the system measured those only, so it is "
                      "the mean itself).")
    legend.append(f"Every column, with intervals: {out / 'leaderboard.md'}; the report: {out / 'report.html'}")
    wrapped = [textwrap.fill(text.replace(" = ", "\x1f=\x1f"), width=max(width, 20), break_on_hyphens=False,
                             break_long_words=False).replace("\x1f", " ")  # "α = 0.05" stays on one line
               for text in [*notes, *legend]]
    return "\n".join(lines) + "\n\n" + "\n".join(wrapped) + "\n"


def leaderboard_text(result: "AuditResult", out: Path, fmt: str, width: Optional[int] = None) -> str:
    """The leaderboard as the command prints it: ``text``, what fits ``width`` columns (default: the terminal's,
    :func:`fitted_leaderboard`); ``markdown``, ``csv`` or ``json``, the whole table (as leaderboard.md has it)."""
    if fmt == "text":
        return fitted_leaderboard(result, out, width)
    from ..tables import render

    return render(result.leaderboard, fmt)
