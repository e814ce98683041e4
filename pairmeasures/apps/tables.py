"""Result tables as Markdown, CSV or JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, ContextManager, Optional

if TYPE_CHECKING:
    import pandas as pd

    from .._atomic import FileClaim

FORMATS = ("markdown", "csv", "json")


def _cell(value, digits: int) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def render(frame: pd.DataFrame, fmt: str = "markdown", digits: int = 4) -> str:
    """``frame`` as text in ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "csv":
        return frame.to_csv(index=False, float_format=f"%.{digits}f")
    if fmt == "json":
        records = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
                   for row in frame.to_dict(orient="records")]
        return json.dumps(records, indent=2, default=str) + "\n"
    if fmt != "markdown":
        raise ValueError(f"unknown table format {fmt!r}; use one of {FORMATS}")
    header = [str(c) for c in frame.columns]
    rows = [[_cell(v, digits) for v in row] for row in frame.itertuples(index=False)]
    numeric = [frame[c].dtype.kind in "fi" for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if n else ":---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


#: Table formats for files, by extension.
FILE_FORMATS = {".tsv": "tsv", ".csv": "csv", ".json": "json"}


def check_writable(path, force: bool = False, option: Optional[str] = None) -> Path:
    """``path`` (user folder expanded) where a table may be written; a ValueError, before any work, when ``path`` has no table extension, is a folder, exists and ``force``
    is off, or lies in no folder; the message names ``option`` (e.g. ``"--per-query"``) when given. The policy is
    :func:`pairmeasures._atomic.check_file_replaceable`'s."""
    from .._atomic import check_file_replaceable

    return check_file_replaceable(path, force=force, option=option, suffixes=tuple(FILE_FORMATS))


def claim_table(path, force: bool = False, option: Optional[str] = None) -> ContextManager["FileClaim"]:
    """``path`` claimed for a table (:func:`pairmeasures._atomic.output_file`): checked as :func:`check_writable`
    does, before any work, and locked until the block ends; write it with :func:`table_text`."""
    from .._atomic import output_file

    return output_file(path, force=force, option=option, suffixes=tuple(FILE_FORMATS))


def table_text(frame: pd.DataFrame, path) -> str:
    """``frame`` as TSV, CSV or JSON records, by the extension of ``path``."""
    fmt = FILE_FORMATS[Path(path).suffix.lower()]
    return render(frame, "json") if fmt == "json" else frame.to_csv(index=False, sep="\t" if fmt == "tsv" else ",")


def write_table(frame: pd.DataFrame, path, force: bool = False, option: Optional[str] = None) -> None:
    """Write ``frame`` to ``path`` as TSV, CSV or JSON records by its extension, atomically (a temporary
    file beside it, then a rename), never over an existing file unless ``force`` (:func:`check_writable`)."""
    with claim_table(path, force, option) as claim:
        claim.write(table_text(frame, claim.path))
