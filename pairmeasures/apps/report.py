"""A self-contained HTML report: sections of text, tables and PNG figures in one file.

The page loads nothing: its CSS is inline and its images are base64 ``data:`` URIs, so it opens offline
and can be mailed or archived as one file. Every piece of text (title, headings, captions, table cells,
column names) is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
import math
import numbers
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._atomic import write_atomically

if TYPE_CHECKING:
    import pandas as pd

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1b1b1b;
       background: #ffffff; max-width: 1240px; margin: 0 auto; padding: 1.5rem 2rem 3rem; line-height: 1.45; }
header { border-bottom: 3px solid #0072B2; margin-bottom: 1.5rem; }
header h1 { margin: 0 0 .3rem; font-size: 1.7rem; overflow-wrap: anywhere; }
header p { margin: 0 0 .8rem; color: #555555; }
h2 { font-size: 1.3rem; margin-top: 2.2rem; border-bottom: 1px solid #dddddd; padding-bottom: .2rem; }
figure { margin: 1.2rem 0; }
figcaption, caption { font-size: .92rem; color: #444444; text-align: left; padding: .3rem 0; }
img { max-width: 100%; height: auto; border: 1px solid #eeeeee; }
.tables { display: flex; flex-wrap: wrap; gap: .4rem 2.5rem; align-items: flex-start; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: .9rem; }
th, td { padding: .25rem .7rem; border-bottom: 1px solid #e4e4e4; text-align: left; white-space: nowrap; }
thead th { background: #f1f5f9; border-bottom: 2px solid #b8c4d0; }
tbody tr:nth-child(even) { background: #fafafa; }
tbody tr:nth-child(even) th, tbody tr:nth-child(even) td:first-child { background: #fafafa; }
th:first-child, td:first-child { position: sticky; left: 0; background: #ffffff; }
thead th:first-child { background: #f1f5f9; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td sup { color: #b0412e; font-weight: 700; padding-left: .1em; line-height: 0; }
td .note { color: #6b6b6b; font-size: .8em; padding-left: .35em; }
""".strip()


@dataclass(frozen=True)
class Section:
    """One part of the report: a heading, plain-text paragraphs (blank lines separate them), captioned
    tables and captioned PNG images."""

    heading: str
    text: str = ""
    tables: Sequence[tuple[str, pd.DataFrame]] = ()
    images: Sequence[tuple[str, Path]] = ()


@dataclass(frozen=True)
class Cell:
    """A table cell shown as a number (right-aligned): ``value`` (a number, with the table's digits; or text as it
    is), a superscript ``mark`` after it (a dagger for a significant difference, say), a small grey ``note`` (a
    count), in bold when ``strong``, and a ``hint`` the browser shows on hover."""

    value: Any
    mark: str = ""
    note: str = ""
    strong: bool = False
    hint: str = ""


def number_text(value, digits: int = 4) -> str:
    """``value`` as a table shows it: ``digits`` decimals; a non-zero number that would round to zero in scientific
    notation (``3.1e-07``, never ``0.0000``); NaN as ""; integers and text as they are."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(value)
    if math.isnan(value):
        return ""
    if value != 0 and abs(value) < 0.5 * 10 ** -digits:
        return f"{value:.1e}"
    return f"{value:.{digits}f}"


def _cell(value, digits: int) -> str:
    if isinstance(value, Cell):
        shown = html.escape(number_text(value.value, digits))
        if value.strong and shown:
            shown = f"<strong>{shown}</strong>"
        if value.mark:
            shown += f"<sup>{html.escape(value.mark)}</sup>"
        if value.note:
            shown += f'<span class="note">{html.escape(value.note)}</span>'
        return shown
    return html.escape(number_text(value, digits))


def _numeric(column) -> bool:
    """Whether a column shows numbers: a numeric dtype, or cells that are all :class:`Cell` or numbers."""
    if column.dtype.kind in "fiu":
        return True
    values = [v for v in column if v is not None]
    return bool(values) and all(isinstance(v, Cell) or (isinstance(v, numbers.Real) and not isinstance(v, bool))
                                for v in values)


def _table(caption: str, frame, digits: int) -> str:
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"render_report: table {caption!r} must be a pandas DataFrame, got {type(frame).__name__}")
    numeric = [_numeric(frame[c]) for c in frame.columns]

    def cell(value, number: bool) -> str:
        hint = f' title="{html.escape(value.hint)}"' if isinstance(value, Cell) and value.hint else ""
        return f'<td{" class=num" if number else ""}{hint}>{_cell(value, digits)}</td>'

    head = "".join(f'<th{" class=num" if n else ""} scope="col">{html.escape(str(c))}</th>'
                   for c, n in zip(frame.columns, numeric))
    body = "\n".join("<tr>" + "".join(cell(v, n) for v, n in zip(row, numeric)) + "</tr>"
                     for row in frame.itertuples(index=False))
    return (f'<div class="scroll"><table>\n<caption>{html.escape(caption)}</caption>\n'
            f"<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table></div>")


def _image(caption: str, path) -> str:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ValueError(f"render_report: cannot read image {str(path)!r} ({error.strerror}); "
                         "write it with pairmeasures.apps.plots.save_png first") from None
    if not data.startswith(PNG_SIGNATURE):
        raise ValueError(f"render_report: image {str(path)!r} is not a PNG file; save figures with save_png")
    uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return (f'<figure><img src="{uri}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _section(section: Section, digits: int) -> str:
    if not isinstance(section, Section):
        raise ValueError(f"render_report: sections must be Section objects, got {type(section).__name__}")
    for kind, entries in (("tables", section.tables), ("images", section.images)):
        if not all(isinstance(entry, tuple) and len(entry) == 2 for entry in entries):
            raise ValueError(f"render_report: section {section.heading!r}: {kind} must be (caption, "
                             f"{'DataFrame' if kind == 'tables' else 'PNG path'}) pairs")
    parts = [f"<section>\n<h2>{html.escape(section.heading)}</h2>"]
    parts += [f"<p>{html.escape(paragraph.strip())}</p>" for paragraph in section.text.split("\n\n")
              if paragraph.strip()]
    if section.tables:
        parts.append('<div class="tables">' + "\n".join(_table(caption, frame, digits)
                                                       for caption, frame in section.tables) + "</div>")
    parts += [_image(caption, path) for caption, path in section.images]
    return "\n".join(parts) + "\n</section>"


def render_report(title: str, sections: Sequence[Section], *, subtitle: str = "", digits: int = 4) -> str:
    """The report as one HTML page: a header with ``title`` (and ``subtitle``), then each section in
    order; floats in tables as :func:`number_text` writes them (``digits`` decimals, small ones in scientific
    notation, NaN as an empty cell), numbers and :class:`Cell` columns right-aligned. A section's tables stand side by
    side where the page is wide enough; a table wider than the page scrolls, its first column staying in view."""
    body = "\n".join(_section(section, digits) for section in sections)
    lead = f"\n<p>{html.escape(subtitle)}</p>" if subtitle else ""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n"
            f"<header><h1>{html.escape(title)}</h1>{lead}</header>\n<main>\n{body}\n</main>\n</body>\n</html>\n")


def write_report(path: str | os.PathLike, title: str, sections: Sequence[Section], **options) -> None:
    """Write :func:`render_report` to ``path`` atomically (a temporary file beside it, then a rename), so
    an interrupted run never leaves half a report; ``options`` go to :func:`render_report`."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"write_report: folder {path.parent} does not exist; create it first")
    write_atomically(path, render_report(title, sections, **options))
