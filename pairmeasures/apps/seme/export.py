"""``pairmeasures seme export``: the study's responses from SQLite as CSV, one row per participant."""

from __future__ import annotations

import argparse
import csv
import io
import sqlite3
import stat
from pathlib import Path

HELP = "export the study's responses from SQLite to CSV, one row per participant"
DESCRIPTION = (
    "Write one CSV row per participant of a study database made by 'pairmeasures seme serve': participant, "
    "query_id, condition, prior, posterior, mu_duo, clicks, clicked_ranks, summary, started, finished, completed. "
    "Unfinished participants have empty prior/posterior where they did not answer and completed=false. "
    "'pairmeasures seme analyze' reads the file, which is no more readable than the database. An existing --out is "
    "replaced only with --force.")

#: The export's columns, in order (``pairmeasures seme analyze`` reads them by name).
COLUMNS = ("participant", "query_id", "condition", "prior", "posterior", "mu_duo", "clicks", "clicked_ranks",
           "summary", "started", "finished", "completed")

QUERY = """
SELECT p.participant, p.query_id, p.condition, p.prior, p.posterior, p.mu_duo,
       (SELECT COUNT(*) FROM clicks c WHERE c.participant = p.participant),
       (SELECT GROUP_CONCAT(rank, ';') FROM (SELECT rank FROM clicks c WHERE c.participant = p.participant
                                             ORDER BY c.click)),
       p.summary, p.started, p.finished, p.step = 'done'
FROM participants p ORDER BY p.number
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, metavar="FILE", help="the study database of 'pairmeasures seme serve'")
    parser.add_argument("--out", required=True, metavar="FILE", help="CSV file to write (e.g. responses.csv)")
    parser.add_argument("--force", action="store_true", help="replace --out when it exists")


def read_responses(db_path: str | Path) -> list[dict]:
    """The responses of a study database, one dict per participant with the :data:`COLUMNS` (``completed`` a
    bool; ``prior``/``posterior``/``finished`` None where not answered). The database is opened read-only."""
    path = Path(db_path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such study database (made by 'pairmeasures seme serve --db FILE')")
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
    try:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"participants", "clicks", "submissions"} <= tables:
            raise ValueError(f"{path}: not a study database of 'pairmeasures seme serve' (it has no participants "
                             f"table)")
        rows = connection.execute(QUERY).fetchall()
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{path}: not a readable SQLite study database ({exc})") from None
    finally:
        connection.close()
    records = [dict(zip(COLUMNS, row)) for row in rows]
    for record in records:
        record["clicked_ranks"] = record["clicked_ranks"] or ""
        record["completed"] = bool(record["completed"])
    return records


def to_csv(records: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({column: ("" if record[column] is None else
                                  str(record[column]).lower() if isinstance(record[column], bool) else
                                  repr(record[column]) if isinstance(record[column], float) else record[column])
                         for column in COLUMNS})
    return buffer.getvalue()


def run(args: argparse.Namespace) -> int:
    from ..._atomic import file_mode, output_file

    with output_file(args.out, force=args.force, what="CSV file") as claim:
        records = read_responses(args.db)
        # participants' answers: no more readable than the database they come from
        claim.write(to_csv(records), mode=file_mode() & stat.S_IMODE(Path(args.db).stat().st_mode))
    out = claim.path
    completed = sum(record["completed"] for record in records)
    print(f"Wrote {len(records)} participants ({completed} completed) to {out}")
    return 0
