"""One page per task (``tasks/<task>.html``): every measure of the task for every system with the significance
marks, each record's provenance (a row opened from the system's cell), the missing values named, a scatter of
relevance against each bias measure with its Pareto front, and the task's records on other pins."""

from __future__ import annotations

import json
from pathlib import Path

from .board import Board, TaskBoard
from .overview import other_table, record_location
from .pages import DIRECTION_WORDS, esc, measure_header, page, significance_legend, system_name, task_page, value_cell
from .svg import pareto_front, scatter

__all__ = ["task_page_html"]


def task_page_html(board: Board, task: TaskBoard) -> str:
    """The whole page of ``task``."""
    spec = task.task
    nav = " ".join(f'<a href="{task_page(t.task.id)}">{esc(t.task.id)}</a>' for t in board.tasks)
    source = (f"folder <code>{esc(Path(spec.dataset).name)}</code>" if spec.folder else
              f"dataset <code>{esc(spec.dataset)}</code>")
    header = (f'<p><a href="../index.html">← {esc(board.suite.name)} version {esc(board.suite.version)}</a></p>'
              f"<h1>{esc(spec.id)}</h1><p>{esc(spec.description)}</p>"
              + (f"<p>Measures as reported by: {esc(spec.paper)}</p>" if spec.paper else "")
              + f"<p>{source}; baseline {esc(spec.baseline)}; depth {spec.depth}; {len(task.records)} records on the "
              f"suite's pins.</p><nav class=\"tasks\">Tasks: {nav}</nav>")
    body = ['<div class="controls"><label>Filter systems <input id="filter" type="search" placeholder="name contains…" '
            'autocomplete="off"></label><span id="shown"></span></div>',
            "<h2>Results</h2>", f'<p class="legend">{significance_legend(board)} details: a record\'s provenance.</p>',
            _table(board, task), _missing(task), _figures(task), _pins(task),
            other_table(board, "other", spec.id)]
    return page(f"{spec.id} — {board.suite.name}", header, "\n".join(b for b in body if b), depth=1)


def _table(board: Board, task: TaskBoard) -> str:
    if not task.records:
        return "<p class=\"note\">No record of this task is on the suite's pins yet.</p>"
    measures = list(task.task.measures)
    heads = ['<th class="system" data-col="system" data-best="asc"><button class="sort" type="button">System</button>'
             "</th>"] + [measure_header(task.facts[m], f"m{i}") for i, m in enumerate(measures)]
    systems = [s for s in board.systems if s in task.records]
    rows = []
    for number, system in enumerate(systems):
        record = task.records[system]
        badge = (' <span class="kind">run file</span>' if record.data["kind"] == "submission" else "") + \
            (' <span class="kind">baseline</span>' if system == task.task.baseline else "")
        row_id = f"prov-{number}"
        cells = [f'<td class="system" data-col="system" data-v="{esc(system.lower())}"><code>{system_name(system)}</code>{badge}'
                 f'<button class="prov-toggle" type="button" aria-expanded="false" aria-controls="{row_id}" '
                 f'title="provenance of this record">details</button></td>']
        cells += [value_cell(board, task, system, m, f"m{i}", show_n=task.facts[m].bias) for i, m in enumerate(measures)]
        rows.append(f'<tr data-system="{esc(system)}" data-kind="{esc(record.data["kind"])}">{"".join(cells)}</tr>')
        rows.append(f'<tr class="prov" id="{row_id}" hidden><td colspan="{len(measures) + 1}">{_provenance(record)}'
                    "</td></tr>")
    return ('<table class="board sortable filterable counted"><thead><tr>' + "".join(heads) + "</tr></thead><tbody>\n" +
            "\n".join(rows) + "\n</tbody></table>")


def _provenance(record) -> str:
    data = record.data
    files = "<br>".join(f"<code>{esc(name)}</code> {esc(digest)}" for name, digest in
                        sorted(data["pins"]["dataset_files"].items())) or "none"
    versions = ", ".join(f"{esc(k)} {esc(v)}" for k, v in sorted(data["versions"].items())) or "not recorded"
    request = json.dumps(data["request"], sort_keys=True)
    if len(request) > 800:
        request = request[:800] + "…"
    items = [("kind", "a run file submitted" if data["kind"] == "submission" else "a system run by pairmeasures"),
             ("spec", f"<code>{esc(data['spec'])}</code>" if data.get("spec") else "—"),
             ("suite", f"{esc(data['suite']['name'])} version {esc(data['suite']['version'])}"),
             ("run sha256", f"<code>{esc(data['run_sha256'])}</code>"), ("created", esc(data["created"])),
             ("versions", versions), ("dataset files", files), ("depth", esc(data["pins"]["depth"])),
             ("request", f"<code>{esc(request)}</code>"), ("record", f"<code>{esc(record_location(record))}</code>")]
    return "<dl>" + "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in items) + "</dl>"


def _missing(task: TaskBoard) -> str:
    if not task.missing:
        return ""
    items = "".join(f"<li><code>{system_name(system)}</code> has no value of {', '.join(esc(m) for m in measures)}</li>"
                    for system, measures in sorted(task.missing.items()))
    return (f'<p class="legend warn">Missing values (shown as "missing"; they count as missing in ranks and tests):'
            f"</p><ul>{items}</ul>")


def _figures(task: TaskBoard) -> str:
    relevance = task.relevance
    if relevance is None or not task.records:
        return ""
    figures = []
    for measure, facts in task.facts.items():
        if not facts.bias:
            continue
        points = [(s, x, y) for s in task.records
                  if (x := task.mean(s, measure)) is not None and (y := task.mean(s, relevance)) is not None]
        if not points:
            continue
        rel = task.facts[relevance]
        svg = scatter(points, x_label=f"{facts.label} {facts.arrow}".strip(), y_label=f"{rel.label} {rel.arrow}",
                      direction=facts.direction, baseline=task.task.baseline,
                      title=f"{task.task.id}: {relevance} against {measure}")
        front = pareto_front(points, facts.direction)
        said = (f"Pareto front (fairest first): {', '.join(front)}." if front else
                f"No front: {DIRECTION_WORDS.get(facts.direction, facts.direction)}.")
        figures.append(f"<figure>{svg}<figcaption>{esc(relevance)} against {esc(measure)} "
                       f"({esc(DIRECTION_WORDS.get(facts.direction, facts.direction))}); the baseline is the square. "
                       f"{esc(said)}</figcaption></figure>")
    if not figures:
        return ""
    return ('<h2>Relevance against bias</h2>\n<p class="legend">One point per system; the line joins the Pareto front: '
            "the systems no other system beats on both relevance and fairness. Hover a point for its values.</p>\n"
            f'<div class="figures">{"".join(figures)}</div>')


def _pins(task: TaskBoard) -> str:
    spec = task.task
    rows = "".join(f"<tr><td><code>{esc(name)}</code></td><td><code>{esc(digest)}</code></td></tr>"
                   for name, digest in sorted(spec.files.items()))
    irds = "".join(f"<tr><td><code>{esc(name)}</code></td><td>ir_datasets' file under $IR_DATASETS_HOME (checked by "
                   "ir_datasets' md5 of its download)</td></tr>" for name in spec.ir_datasets)
    measures = ", ".join(f"<code>{esc(m)}</code>" for m in spec.measures)
    return (f"<h2>Pins</h2>\n<p class=\"legend\">A record counts here only when it was made from these files, with "
            f"these measures ({measures}) and depth {spec.depth}.</p>\n"
            '<table class="plain"><thead><tr><th>Dataset file</th><th>sha256</th></tr></thead><tbody>' + rows + irds +
            "</tbody></table>")

