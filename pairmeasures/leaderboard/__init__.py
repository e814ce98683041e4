"""The leaderboard: a static site built from the records of one or more results folders against a suite
(docs/leaderboard.md). :func:`build` reads the records (:func:`pairmeasures.benchmark.records.read_records`: damaged
ones named and left out), sorts them against the suite's pins (:mod:`.board`), ranks and tests them (:mod:`.stats`)
and writes the pages and data (:mod:`.site`) through the ``--out`` policy of :mod:`pairmeasures._atomic`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from .._atomic import FolderOutput, output_folder

__all__ = ["OUTPUT", "Built", "build"]

#: The kind of folder ``leaderboard build`` writes (its marker lets a later build replace it with ``force``).
OUTPUT = FolderOutput("pairmeasures leaderboard build", "leaderboard site", "pairmeasures-leaderboard-site-1")


@dataclass(frozen=True)
class Built:
    """What :func:`build` did: the ``out`` folder, the ``suite`` built against, how many records went on the board,
    how many were shown apart (other pins) and the ``(file, reason)`` of those left out."""

    out: Path
    suite: str
    records: int
    other: int
    left_out: list


def build(dirs: Sequence[str | os.PathLike], out: str | os.PathLike, suite: Optional[str] = None, *,
          force: bool = False) -> Built:
    """Build the board of the results folders ``dirs`` into the folder ``out`` (claimed before any work; an earlier
    board is replaced only with ``force``, and a folder that is not a board never). ``suite``: a built-in suite's
    name or a TOML file; by default the built-in suite the records name."""
    from ..benchmark.records import read_records
    from .board import assemble, suite_of
    from .site import write_site

    if not dirs:
        raise ValueError("name at least one results folder")
    target = Path(out).expanduser().absolute()
    for folder in map(lambda d: Path(d).expanduser().absolute(), dirs):
        if target == folder or folder in target.parents:
            raise ValueError(f"--out {str(out)!r} lies inside the results folder {str(folder)!r}: write the site "
                             "elsewhere (a results folder holds records only)")
    with output_folder(out, OUTPUT, force=force) as claim:
        records, left_out = read_records(dirs)
        if not records and left_out and suite is None:
            path, reason = left_out[0]
            raise ValueError(f"no valid record to build a board from: {len(left_out)} record files were left out, "
                             f"e.g. {path}: {reason}")
        chosen = suite_of(records, suite)
        board = assemble(records, chosen, left_out)
        with claim.written() as folder:
            write_site(board, folder)
    return Built(claim.path, f"{chosen.name} version {chosen.version}", sum(len(t.records) for t in board.tasks),
                 len(board.other), list(left_out))
