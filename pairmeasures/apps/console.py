"""What a command says on stderr: one line each, ``pairmeasures COMMAND: ...``, warnings included.

Every command prints its warnings through :func:`warnings_shown` and its messages through :func:`say`, so that
a user (or a script reading stderr) sees one shape: ``pairmeasures eval: DegenerateQueryWarning: ...``.
"""

from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager
from typing import Iterator, Literal

__all__ = ["Action", "say", "warning_line", "warnings_shown"]

#: What :func:`warnings.simplefilter` does with a warning.
Action = Literal["default", "error", "ignore", "always", "module", "once"]


def say(command: str, message: str) -> None:
    """Print ``pairmeasures COMMAND: message`` on stderr (``command`` may hold a step: ``"seme material"``)."""
    print(f"pairmeasures {command}: {message}", file=sys.stderr)


def warning_line(command: str, message: Warning | str, category: type[Warning]) -> str:
    """A warning as a command prints it: ``pairmeasures COMMAND: Category: message``."""
    return f"pairmeasures {command}: {category.__name__}: {message}"


@contextmanager
def warnings_shown(command: str, *filters: tuple[Action, type[Warning]]) -> Iterator[None]:
    """Inside the block, each warning shown prints as one :func:`warning_line` on stderr. ``filters`` are
    ``(action, category)`` pairs applied in order with :func:`warnings.simplefilter` (a later pair wins where they
    overlap), e.g. ``("ignore", Warning), ("always", SmallCellWarning)``; the filters and the printer before the
    block come back after it."""
    def show(message, category, filename, lineno, file=None, line=None):
        print(warning_line(command, message, category), file=sys.stderr)

    with warnings.catch_warnings():
        for action, category in filters:
            warnings.simplefilter(action, category)
        warnings.showwarning = show
        yield
