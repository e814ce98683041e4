"""What the board's pages share: number formats, the page frame, the cells of a value (mean, significance mark,
``n``, provenance tooltip) and of a measure's header (label, direction arrow, sort button)."""

from __future__ import annotations

import html
import re
from typing import Optional

from .board import Board, TaskBoard
from .stats import ALPHA, CORRECTION, RANKED

__all__ = ["DIRECTION_WORDS", "MARK", "esc", "fmt", "measure_header", "page", "provenance_text", "significance_legend",
           "system_name", "task_page", "value_cell"]

#: The mark of a value that differs significantly from the baseline's.
MARK = "†"
#: Each direction in words, for headers' tooltips and legends.
DIRECTION_WORDS = {"higher-better": "higher is better", "higher-fairer": "higher is fairer",
                   "lower-fairer": "lower is fairer", "signed": "closer to 0 is fairer (ranked by |value|)",
                   "neither": "neither way is fairer (not ranked)", "unknown": "direction not declared (not ranked)"}


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def system_name(name: str) -> str:
    """A system's name escaped, breakable after its ``>>``, ``/`` and ``,`` (long pipelines wrap between stages)."""
    return re.sub(r"(&gt;&gt;|/|,)", r"\1<wbr>", esc(name))


def fmt(value: Optional[float], digits: int = 3) -> str:
    """A value as the board shows it: ``digits`` decimals, small values in scientific notation."""
    if value is None:
        return "—"
    if value != 0 and abs(value) < 10 ** -digits:
        return f"{value:.1e}"
    return f"{value:.{digits}f}"


def task_page(task_id: str) -> str:
    """The file name of a task's page (in ``tasks/``): its id with ``/`` as ``--``."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", task_id.replace("/", "--")) + ".html"


def page(title: str, header: str, body: str, *, depth: int) -> str:
    """A whole page: ``depth`` is how many folders below the site's root it lies (for the shared files)."""
    up = "../" * depth
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{esc(title)}</title>\n<link rel=\"stylesheet\" href=\"{up}board.css\">\n"
            f"<script src=\"{up}board.js\" defer></script>\n</head>\n<body>\n"
            f"<header class=\"top\">{header}</header>\n<main>\n{body}\n</main>\n"
            f"<footer>Built by pairmeasures leaderboard build. Data: <a href=\"{up}leaderboard.json\">leaderboard.json</a>, "
            f"<a href=\"{up}leaderboard.csv\">leaderboard.csv</a>; each record's JSON lies in its results folder."
            "</footer>\n</body>\n</html>\n")


def measure_header(facts, col: str, *, first: bool = False, extra: str = "") -> str:
    """A sortable header cell of a measure: its short label, its direction's arrow, the full string in the tooltip."""
    best = "asc" if facts.direction in ("lower-fairer", "signed") else "desc"
    words = DIRECTION_WORDS.get(facts.direction, facts.direction)
    label = esc(facts.label).replace("@", "<wbr>@")
    arrow = f' <span class="arrow">{facts.arrow}</span>' if facts.arrow else ""
    cls = ' class="first-of-task"' if first else ""
    return (f'<th{cls} data-col="{col}" data-best="{best}" title="{esc(facts.measure)}: {esc(words)}{esc(extra)}">'
            f'<button class="sort" type="button">{label}{arrow}</button></th>')


def provenance_text(record) -> str:
    """One line of a record's provenance, for tooltips."""
    data = record.data
    versions = ", ".join(f"{k} {v}" for k, v in sorted(data["versions"].items()) if k in ("pairmeasures", "python",
                                                                                          "ir_measures", "pyterrier"))
    return (f"run sha256 {data['run_sha256'][:16]}…; created {data['created']}; {data['kind']}"
            + (f" {data['spec']}" if data.get("spec") else "") + (f"; {versions}" if versions else ""))


def value_cell(board: Board, task: TaskBoard, system: str, measure: str, col: str, *, show_n: bool,
               first: bool = False) -> str:
    """The cell of one system's value of ``measure`` on ``task``: the mean, the significance mark, ``n``; "missing"
    with the reason when the record lacks it, a dash when the system has no record of the task."""
    facts = task.facts[measure]
    cls = ["first-of-task"] if first else []
    record = task.records.get(system)
    if record is None:
        cls.append("none")
        return (f'<td class="{" ".join(cls)}" data-col="{col}" title="{esc(system)} has no record of {esc(task.task.id)} '
                'on the suite\'s pins">—</td>')
    mean = record.measures.get(measure)
    if mean is None:
        cls.append("missing")
        why = ("the record has no value of it" if measure not in record.measures else
               f"it measured no query (n = {record.n.get(measure, 0)})")
        return (f'<td class="{" ".join(cls)}" data-col="{col}" title="{esc(system)} on {esc(task.task.id)}: '
                f'{esc(measure)} is missing: {esc(why)}">missing</td>')
    count = record.n.get(measure, 0)
    test = task.tests.get(measure, {}).get(system)
    rank = task.ranks.get(measure, {}).get(system)
    if rank == 1.0 and facts.direction in RANKED:
        cls.append("best")
    tip = f"{system} on {task.task.id}: {measure} = {mean:.6g} over {count} queries"
    if rank is not None and facts.direction in RANKED:
        tip += f"; rank {rank:g}"
    mark = ""
    if system == task.task.baseline:
        tip += "; the baseline"
    elif test is not None and test.p is not None:
        tip += (f"; against {task.task.baseline} over {test.n} shared queries: difference {test.difference:+.4g}, "
                f"p = {test.p:.2g}, {CORRECTION}-corrected {test.p_holm:.2g}")
        if test.significant:
            mark = f'<span class="mark">{MARK}</span>'
    key = abs(mean) if facts.direction == "signed" else mean
    count_text = f'<span class="n">n {count}</span>' if show_n else ""
    tip += "; " + provenance_text(record)
    classes = f' class="{" ".join(cls)}"' if cls else ""
    return (f'<td{classes} data-col="{col}" data-v="{key!r}" title="{esc(tip)}"><span class="v">{fmt(mean)}</span>'
            f'{mark}{count_text}</td>')


def significance_legend(board: Board) -> str:
    baselines = sorted({t.task.baseline for t in board.tasks})
    return (f"{MARK}: differs from the baseline ({', '.join(baselines)}) by a two-sided paired t-test on the per-query "
            f"values of the queries both measured, {CORRECTION.capitalize()}-corrected over the systems of each task "
            f"and measure, α = {ALPHA}. ↑ higher is better (relevance) or fairer, ↓ lower is fairer, ↕ closer to 0 "
            "is fairer. n: the queries a bias measure measured (queries with nothing to measure are left out of its "
            "mean). Hover a value for its p-value and provenance; the best value of a column is bold.")

