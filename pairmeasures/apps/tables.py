"""Result tables as Markdown, CSV or JSON."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

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


def check_writable(path, force: bool = False) -> None:
    """Raise a ValueError, before any work, when ``path`` has no table extension or exists and ``force`` is off."""
    from pathlib import Path

    path = Path(path)
    if path.suffix.lower() not in FILE_FORMATS:
        raise ValueError(f"{path}: name a .tsv, .csv or .json file (the extension picks the format)")
    if path.exists() and not force:
        raise ValueError(f"{path} exists; pass --force to overwrite it")


def write_table(frame: pd.DataFrame, path, force: bool = False) -> None:
    """Write ``frame`` to ``path`` as TSV, CSV or JSON records by its extension, atomically (a temporary
    file beside it, then a rename), never over an existing file unless ``force``."""
    from pathlib import Path

    from .._atomic import write_atomically

    path = Path(path)
    check_writable(path, force)
    fmt = FILE_FORMATS[path.suffix.lower()]
    write_atomically(path, render(frame, "json") if fmt == "json" else
                     frame.to_csv(index=False, sep="\t" if fmt == "tsv" else ","))
