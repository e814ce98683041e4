"""The SEME study's responses in SQLite: participants, their answers, result clicks and every form submission.

Safe under concurrent participants: WAL journal, a busy timeout, one connection per thread, and one short
``BEGIN IMMEDIATE`` transaction per submission that is committed (``synchronous=FULL``) before the web app
answers. Each rendered form carries a fresh submission id, stored UNIQUE with the answer it got, so a replayed
submission (a double click, a reload, a resent request) is answered as before and never stored twice.
Timestamps are UTC ISO 8601; participant ids are random (``secrets``), never derived from the participant.
"""

from __future__ import annotations

import hashlib
import random
import re
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["STEPS", "Store", "Participant", "StepOrderError", "UnknownParticipantError", "utc_now",
           "SUBMISSION_ID", "material_digest"]

#: The pages a participant goes through, in order; a participant's ``step`` is the page they are on.
STEPS = ("prior", "results", "summary", "posterior", "done")

#: What a submission id looks like (the web app makes them with ``secrets.token_urlsafe(16)``).
SUBMISSION_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")

SCHEMA_VERSION = "1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS participants (
    participant TEXT PRIMARY KEY,
    number INTEGER NOT NULL UNIQUE,
    query_id TEXT NOT NULL,
    condition TEXT NOT NULL,
    mu_duo REAL NOT NULL,
    step TEXT NOT NULL,
    prior INTEGER CHECK (prior BETWEEN -3 AND 3),
    posterior INTEGER CHECK (posterior BETWEEN -3 AND 3),
    summary TEXT,
    started TEXT NOT NULL,
    finished TEXT
);
CREATE TABLE IF NOT EXISTS clicks (
    click INTEGER PRIMARY KEY AUTOINCREMENT,
    participant TEXT NOT NULL REFERENCES participants(participant),
    rank INTEGER NOT NULL,
    doc_id TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS submissions (
    submission TEXT PRIMARY KEY,
    participant TEXT NOT NULL REFERENCES participants(participant),
    step TEXT NOT NULL,
    answer TEXT NOT NULL,
    at TEXT NOT NULL,
    session TEXT
);
"""


class StepOrderError(ValueError):
    """A participant submitted a step they are not on."""


class UnknownParticipantError(ValueError):
    """A session names a participant the database does not hold."""


@dataclass(frozen=True)
class Participant:
    participant: str
    query_id: str
    condition: str
    mu_duo: float
    step: str


def utc_now() -> str:
    """The current time in UTC, ISO 8601 with milliseconds (``2026-11-23T02:18:17.123+00:00``)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Store:
    """One study database. ``cells`` are the (query_id, condition, mu_duo) triples participants are assigned
    to: balanced (each block of ``len(cells)`` participants sees every cell once) in an order shuffled by
    ``seed`` and the block number, so the assignment is reproducible and balanced at any stopping point."""

    def __init__(self, path: str | Path, *, cells: Sequence[tuple[str, str, float]] = (), seed: int = 0,
                 material_digest: Optional[str] = None, busy_timeout_s: float = 30.0):
        self.path = Path(path)
        self.cells = list(cells)
        self.seed = int(seed)
        self.busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        if not self.path.parent.is_dir():
            raise FileNotFoundError(f"{self.path}: the database's folder {self.path.parent} does not exist")
        if not self.path.exists():  # responses are personal data: readable by the study's owner only
            self.path.touch(mode=0o600)
        try:
            self._create(material_digest)
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{self.path}: not a study database ({exc}); name a new --db FILE") from None

    def _create(self, material_digest: Optional[str]) -> None:
        self.connection().execute("PRAGMA journal_mode=WAL")
        with self.transaction() as db:
            for statement in filter(str.strip, SCHEMA.split(";")):
                db.execute(statement)
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("schema", SCHEMA_VERSION) != SCHEMA_VERSION:
                raise ValueError(f"{self.path}: a study database of schema {meta['schema']}, this version "
                                 f"reads schema {SCHEMA_VERSION}")
            if material_digest is not None:
                known = meta.get("material_sha256")
                if known is not None and known != material_digest:
                    raise ValueError(f"{self.path} holds responses to a different study material (its SHA-256 "
                                     f"differs); serve this material with a new --db FILE")
                db.execute("INSERT OR IGNORE INTO meta VALUES ('material_sha256', ?)", (material_digest,))
            db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            db.execute("INSERT OR IGNORE INTO meta VALUES ('secret_key', ?)", (secrets.token_hex(32),))
            db.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)", (utc_now(),))

    # -- connections -------------------------------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit mode: transactions are explicit)."""
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None)
            connection.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_s * 1000)}")
            connection.execute("PRAGMA synchronous=FULL")
            connection.execute("PRAGMA foreign_keys=ON")
            self._local.connection = connection
        return connection

    def transaction(self) -> "_Transaction":
        """``with store.transaction() as db:``: one ``BEGIN IMMEDIATE`` transaction, committed on leaving the
        block (before the web app answers), rolled back on an error."""
        return _Transaction(self.connection())

    def meta(self, key: str) -> Optional[str]:
        row = self.connection().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    # -- reads ---------------------------------------------------------------------------------------------

    def participant(self, participant: Optional[str]) -> Optional[Participant]:
        if not participant:
            return None
        row = self.connection().execute(
            "SELECT participant, query_id, condition, mu_duo, step FROM participants WHERE participant = ?",
            (participant,)).fetchone()
        return None if row is None else Participant(*row)

    def answer(self, submission: str) -> Optional[tuple[str, str]]:
        """``(participant, answer)`` stored for a submission id, or None when it is new."""
        row = self.connection().execute("SELECT participant, answer FROM submissions WHERE submission = ?",
                                         (submission,)).fetchone()
        return None if row is None else (row[0], row[1])

    # -- writes (one transaction each) -------------------------------------------------------------------------

    def _assign(self, number: int) -> tuple[str, str, float]:
        if not self.cells:
            raise RuntimeError("no (query, condition) cells to assign participants to")
        block, position = divmod(number, len(self.cells))
        order = list(range(len(self.cells)))
        random.Random(f"{self.seed}:{block}").shuffle(order)
        return self.cells[order[position]]

    def add_participant(self, submission: str, answer: str, session: str) -> tuple[str, str]:
        """Create a participant with a random id and the next balanced (query, condition) cell; returns
        ``(participant, answer)``, the stored one when ``submission`` was seen before (a replay) from the same
        ``session`` (a digest of the browser session: a consent replayed from another session would hand it the
        participant, so it is a StepOrderError)."""
        with self.transaction() as db:
            seen = db.execute("SELECT participant, answer, session FROM submissions WHERE submission = ?",
                              (submission,)).fetchone()
            if seen is not None:
                if seen[2] != session:
                    raise StepOrderError("this consent form was submitted from another session")
                return seen[0], seen[1]
            number = db.execute("SELECT COALESCE(MAX(number) + 1, 0) FROM participants").fetchone()[0]
            query_id, condition, mu_duo = self._assign(number)
            participant = secrets.token_hex(8)
            now = utc_now()
            db.execute("INSERT INTO participants (participant, number, query_id, condition, mu_duo, step, started) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)", (participant, number, query_id, condition, mu_duo,
                                                        STEPS[0], now))
            db.execute("INSERT INTO submissions VALUES (?, ?, 'consent', ?, ?, ?)",
                       (submission, participant, answer, now, session))
            return participant, answer

    def submit(self, participant: str, step: str, submission: str, answer: str, **values) -> str:
        """Store the answer to ``step`` (``values``: columns of ``participants``) and move the participant to the
        next step, in one transaction; returns the answer to give, the stored one for a replayed submission.
        Raises UnknownParticipantError, or StepOrderError when the participant is on another step."""
        with self.transaction() as db:
            seen = db.execute("SELECT participant, answer FROM submissions WHERE submission = ?",
                              (submission,)).fetchone()
            if seen is not None:
                if seen[0] != participant:
                    raise StepOrderError("this form was submitted by another participant")
                return seen[1]
            row = db.execute("SELECT step FROM participants WHERE participant = ?", (participant,)).fetchone()
            if row is None:
                raise UnknownParticipantError(participant)
            if row[0] != step:
                raise StepOrderError(f"participant is on step {row[0]!r}, not {step!r}")
            following = STEPS[STEPS.index(step) + 1]
            now = utc_now()
            columns = dict(values, step=following, **({"finished": now} if following == "done" else {}))
            assignments = ", ".join(f"{column} = ?" for column in columns)
            db.execute(f"UPDATE participants SET {assignments} WHERE participant = ?",
                       (*columns.values(), participant))
            db.execute("INSERT INTO submissions VALUES (?, ?, ?, ?, ?, NULL)",
                       (submission, participant, step, answer, now))
            return answer

    def log_click(self, participant: str, rank: int, doc_id: str) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO clicks (participant, rank, doc_id, at) VALUES (?, ?, ?, ?)",
                       (participant, rank, doc_id, utc_now()))


class _Transaction:
    def __init__(self, connection: sqlite3.Connection):
        self.connection = connection

    def __enter__(self) -> sqlite3.Connection:
        self.connection.execute("BEGIN IMMEDIATE")
        return self.connection

    def __exit__(self, kind, value, traceback) -> None:
        self.connection.execute("COMMIT" if kind is None else "ROLLBACK")


def material_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
