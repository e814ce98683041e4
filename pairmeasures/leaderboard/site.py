"""Writing the board's static site into a folder: ``index.html``, ``tasks/<task>.html``, ``board.css``,
``board.js``, ``leaderboard.json`` and ``leaderboard.csv``. No page needs a server or anything from the network."""

from __future__ import annotations

import json
from pathlib import Path

from .board import Board
from .exports import board_csv, board_json
from .overview import overview_page
from .pages import task_page
from .taskpages import task_page_html

__all__ = ["STATIC", "write_site"]

#: The script and style sheet every page loads (files of the package, copied beside the pages).
STATIC = Path(__file__).resolve().parent / "static"


def write_site(board: Board, folder: str | Path) -> list[Path]:
    """Write the site of ``board`` into ``folder`` (which exists and is empty); the files written."""
    folder = Path(folder)
    (folder / "tasks").mkdir(exist_ok=True)
    written = []

    def write(name: str, text: str) -> None:
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)

    for name in ("board.css", "board.js"):
        write(name, (STATIC / name).read_text(encoding="utf-8"))
    write("index.html", overview_page(board))
    names = [task_page(t.task.id) for t in board.tasks]
    if len(set(names)) != len(names):
        raise ValueError("two tasks of the suite map to one page name: give them ids that differ in more than "
                         "punctuation")
    for task, name in zip(board.tasks, names):
        write(f"tasks/{name}", task_page_html(board, task))
    write("leaderboard.json", json.dumps(board_json(board), separators=(",", ":"), allow_nan=False) + "\n")
    write("leaderboard.csv", board_csv(board))
    return written
