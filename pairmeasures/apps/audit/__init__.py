"""``pairmeasures audit``'s outputs: an :class:`~pairmeasures.audit.result.AuditResult` written into ``--out``.

The audit itself is a library floor below the command line (:mod:`pairmeasures.audit`: ``AuditRequest``,
``run_audit``); these rooms turn its result into files and lines, one job each:

- :mod:`.outputs`: ``--out`` claimed before the audit, then plots, tables, ``leaderboard.json`` and the manifest
  (with the request), written into a folder that replaces ``--out`` at the end;
- :mod:`.sections`: the sections of ``report.html``;
- :mod:`.report_tables`: the report's tables and sentences;
- :mod:`.printed`: the leaderboard as printed on a terminal, in blocks of columns that fit its width, and in the
  other ``--format`` values.

The command's ``--help`` epilog is the command module's (:mod:`pairmeasures.apps.commands.audit`).
"""

from .outputs import MANIFEST
from .printed import PRINTED_FORMATS, leaderboard_text

__all__ = ["MANIFEST", "PRINTED_FORMATS", "leaderboard_text"]
