"""The board's overview page (``index.html``): systems × tasks with relevance and bias side by side, mean ranks,
the mean rank of every measure across tasks, the records kept apart and those left out, and the method."""

from __future__ import annotations

from pathlib import Path

from .board import Board
from .pages import esc, fmt, measure_header, page, significance_legend, system_name, task_page, value_cell
from .stats import RANKED

__all__ = ["method_text", "other_table", "overview_page", "record_location", "task_title"]


def task_title(board: Board, task_id: str) -> str:
    """A task's id without the prefix every task of the suite shares (``pair/``), breakable at its slashes."""
    ids = [t.task.id for t in board.tasks]
    prefix = ids[0].split("/")[0] + "/" if ids and all(i.startswith(ids[0].split("/")[0] + "/") for i in ids) else ""
    short = task_id[len(prefix):] if prefix and task_id.startswith(prefix) else task_id
    return esc(short).replace("/", "/<wbr>")


def method_text(board: Board) -> str:
    return (
        "<h2 id=\"method\">How the board ranks</h2>\n"
        "<p class=\"note\">On each task and measure, the systems with a value are ranked 1 (best) to m by the measure's "
        "direction: higher first for relevance measures and those where higher is fairer, lower first where lower "
        "is fairer, smaller |value| first for signed measures (0 is balanced); ties share the mean of their places. "
        "Measures that no direction orders (counts, one group's magnitude) are shown but not ranked. "
        "<strong>A missing task counts as a tie for last:</strong> the systems of the board without a value there "
        "(no record of the task on the suite's pins, or a record missing that value) share the places after the m "
        "ranked ones, (m + 1 + N) / 2 for N systems, so skipping a task never lifts a system's mean rank. "
        "A task where no system has a value ranks no one and counts in no mean. "
        "The mean rank of a measure is the mean over the tasks that rank it; the overview's two mean ranks are over "
        "every task that ranks them, of its first relevance and first bias measure shown here.</p>\n"
        "<p class=\"note\">Significance: for each system, the two-sided paired t-test (scipy.stats.ttest_rel) of its "
        "per-query values against the baseline's, over the queries both measured, Holm-corrected "
        "(statsmodels multipletests) over the systems of the task and measure, α = 0.05. "
        "A record counts only on the suite's pins: the sha256 of every dataset file, the measures and the depth; a "
        "record on other pins is listed apart and never ranked or tested with these. Records that are damaged, "
        "truncated or inconsistent (a mean that is not the mean of its per-query values) are named and left out.</p>")


def overview_page(board: Board) -> str:
    """The whole ``index.html``."""
    suite = board.suite
    records = sum(len(t.records) for t in board.tasks)
    nav = " ".join(f'<a href="tasks/{task_page(t.task.id)}">{esc(t.task.id)}</a>' for t in board.tasks)
    header = (f"<h1>{esc(suite.name)} <small>version {esc(suite.version)}</small></h1>"
              f"<p>{esc(suite.description)}</p>"
              f"<p>{len(board.systems)} systems, {len(board.tasks)} tasks, {records} records on the suite's pins"
              + (f", {len(board.other)} on other pins" if board.other else "")
              + (f", {len(board.left_out)} left out" if board.left_out else "")
              + f"; baseline {esc(suite.baseline)}, depth {suite.depth}.</p>"
              f"<nav class=\"tasks\">Tasks: {nav}</nav>")
    body = [_controls(), "<h2 id=\"overview\">Overview</h2>",
            f"<p class=\"legend\">{significance_legend(board)} Each task shows its key measures; its page has them all, "
            "a scatter of relevance against bias with the Pareto front, and each record's provenance.</p>",
            _overview_table(board), _aggregate_table(board), other_table(board, "other"), _left_out(board),
            method_text(board)]
    return page(f"{suite.name} leaderboard", header, "\n".join(b for b in body if b), depth=0)


def _controls() -> str:
    return ('<div class="controls"><label>Filter systems <input id="filter" type="search" '
            'placeholder="name contains…" autocomplete="off"></label>'
            '<label>Kind <select id="kind"><option value="">all</option><option value="system">systems run here'
            '</option><option value="submission">submitted runs</option></select></label><span id="shown"></span></div>')


def _kind(board: Board, system: str) -> str:
    kinds = {t.records[system].data["kind"] for t in board.tasks if system in t.records}
    return "submission" if kinds == {"submission"} else "system"


def _system_cell(board: Board, system: str) -> str:
    kind = _kind(board, system)
    badge = (' <span class="kind">run file</span>' if kind == "submission" else "") + \
        (' <span class="kind">baseline</span>' if system == board.suite.baseline else "")
    return f'<td class="system" data-col="system" data-v="{esc(system.lower())}"><code>{system_name(system)}</code>{badge}</td>'


def _overview_table(board: Board) -> str:
    top = ['<th class="system" rowspan="2" data-col="system" data-best="asc"><button class="sort" type="button">System'
           '</button></th>', '<th colspan="2" class="task">Mean rank</th>']
    second = ['<th data-col="rank-rel" data-best="asc" title="mean rank over the tasks of each task\'s relevance '
              'measure shown here (1 is best)"><button class="sort" type="button">relevance</button></th>',
              '<th data-col="rank-bias" data-best="asc" title="mean rank over the tasks of each task\'s bias measure '
              'shown here (1 is fairest)"><button class="sort" type="button">bias</button></th>']
    columns = []
    for number, task in enumerate(board.tasks):
        shown = list(task.task.overview)
        top.append(f'<th class="task first-of-task" colspan="{len(shown)}" title="{esc(task.task.description)}">'
                   f'<a href="tasks/{task_page(task.task.id)}">{task_title(board, task.task.id)}</a></th>')
        for index, measure in enumerate(shown):
            col = f"t{number}m{index}"
            second.append(measure_header(task.facts[measure], col, first=index == 0))
            columns.append((task, measure, col, index == 0))
    rows = []
    for system in board.systems:
        cells = [_system_cell(board, system)]
        for kind in ("relevance", "bias"):
            value = board.overview_ranks[kind].get(system)
            cells.append(f'<td data-col="rank-{kind[:3]}" data-v="{value!r}">{fmt(value, 2)}</td>' if value is not None
                         else f'<td class="none" data-col="rank-{kind[:3]}">—</td>')
        cells += [value_cell(board, task, system, measure, col, show_n=task.facts[measure].bias, first=first)
                  for task, measure, col, first in columns]
        rows.append(f'<tr data-system="{esc(system)}" data-kind="{_kind(board, system)}">{"".join(cells)}</tr>')
    if not rows:
        return "<p class=\"note\">No record is on the suite's pins yet.</p>"
    return ('<table class="board sortable filterable counted" id="overview-table"><thead><tr>' + "".join(top) +
            "</tr><tr>" + "".join(second) + "</tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table>")


def _aggregate_table(board: Board) -> str:
    measures = [m for m, f in board.facts.items() if f.direction in RANKED and board.aggregate.get(m)]
    if not measures or not board.systems:
        return ""
    heads = []
    for index, measure in enumerate(measures):
        tasks = board.measure_tasks[measure]
        heads.append(measure_header(board.facts[measure], f"a{index}",
                                    extra=f"; mean rank over {len(tasks)} tasks: {', '.join(tasks)}")
                     .replace("</button>", f'<span class="n">{len(tasks)} task{"s" if len(tasks) > 1 else ""}'
                              "</span></button>"))
    rows = []
    for system in board.systems:
        cells = [_system_cell(board, system)]
        for index, measure in enumerate(measures):
            value = board.aggregate[measure].get(system)
            best = min(board.aggregate[measure].values())
            cls = ' class="best"' if value == best else ""
            cells.append(f'<td{cls} data-col="a{index}" data-v="{value!r}"><span class="v">{fmt(value, 2)}</span></td>')
        rows.append(f'<tr data-system="{esc(system)}" data-kind="{_kind(board, system)}">{"".join(cells)}</tr>')
    return ('<h2 id="aggregate">Mean rank per measure, across tasks</h2>\n<p class="legend">For each measure, the mean '
            "of a system's ranks on the tasks that have it (1 is best; under each measure, how many tasks). A task "
            "without a value of the system counts as a tie for last (see <a href=\"#method\">How the board ranks</a>). "
            "Measures that are not ranked (direction neither) are left out.</p>\n"
            '<table class="board sortable filterable"><thead><tr><th class="system" data-col="system" data-best="asc">'
            '<button class="sort" type="button">System</button></th>' + "".join(heads) + "</tr></thead><tbody>\n" +
            "\n".join(rows) + "\n</tbody></table>")


def other_table(board: Board, anchor: str, task_id: str = "", depth: int = 0) -> str:
    """The records kept apart (another dataset file, measure definition or depth, or another task)."""
    entries = [(r, why) for r, why in board.other if not task_id or r.task == task_id]
    if not entries:
        return ""
    rows = []
    for record, why in entries:
        values = ", ".join(f"{m} {fmt(v)}" for m, v in record.measures.items())
        rows.append(f'<tr data-system="{esc(record.system)}" data-kind="{esc(record.data["kind"])}">'
                    f'<td><code>{system_name(record.system)}</code></td><td>{esc(record.task)}</td><td>{esc(why)}</td>'
                    f'<td>{esc(values)}</td><td><code>{esc(record.data["run_sha256"][:12])}…</code></td>'
                    f'<td>{esc(record.data["created"])}</td><td><code>{esc(record_location(record))}</code></td></tr>')
    return (f'<h2 id="{anchor}">Records on other pins, shown apart</h2>\n<p class="legend">These records were '
            "made with other data files, other measure definitions or another depth than the suite pins, or for a "
            "task the suite does not have. They are never ranked, tested or mixed with the board above.</p>\n"
            '<table class="plain filterable"><thead><tr><th>System</th><th>Task</th><th>How its pins differ</th>'
            "<th>Means</th><th>Run</th><th>Created</th><th>Record</th></tr></thead><tbody>\n" + "\n".join(rows) +
            "\n</tbody></table>")


def record_location(record) -> str:
    """A record's file, relative to its results folder's parent (no absolute path of the machine that built it)."""
    root = Path(record.root)
    return str(Path(root.name) / Path(record.path).relative_to(root))


def _left_out(board: Board) -> str:
    if not board.left_out:
        return ""
    items = "".join(f"<li><code>{esc(path)}</code>: {esc(reason)}</li>" for path, reason in board.left_out)
    return (f'<h2 id="left-out">Records left out</h2>\n<p class="legend warn">{len(board.left_out)} record files could '
            f"not be used and are not counted anywhere on this board:</p><ul>{items}</ul>")
