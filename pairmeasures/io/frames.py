"""The one boundary where PyTerrier frames become ir_measures frames, and back.

PyTerrier names a run's columns ``qid``, ``docno`` (and qrels' ``label``); ir_measures and the pairmeasures
provider read ``query_id``, ``doc_id`` (and ``relevance``). Every rename between the two goes through here: a
run leaving PyTerrier to be measured (:func:`ir_frame`, :func:`ir_names`), a run file entering PyTerrier
(:func:`pyterrier_frame`). The audit renames each system's run once, after it is made or read from the run cache
(:func:`pairmeasures.audit.run.run_audit`), and each re-ranked run of the trade-off as its transformer returns it
(:func:`pairmeasures.audit.curves.tradeoff_curve`); everything that measures reads the renamed frame, and a frame
that already has ir_measures' names is returned as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["IR_NAMES", "PYTERRIER_NAMES", "ir_names", "ir_frame", "pyterrier_frame"]

#: PyTerrier's column names and the ones ir_measures reads.
IR_NAMES = {"qid": "query_id", "docno": "doc_id", "label": "relevance"}
#: ir_measures' column names and PyTerrier's.
PYTERRIER_NAMES = {ours: theirs for theirs, ours in IR_NAMES.items()}


def _renamed(frame: "pd.DataFrame", names: dict) -> "pd.DataFrame":
    renames = {old: new for old, new in names.items() if old in frame.columns and new not in frame.columns}
    return frame.rename(columns=renames) if renames else frame


def ir_names(frame: Any) -> Any:
    """A DataFrame with ir_measures' column names (``query_id, doc_id, relevance``) for PyTerrier's (``qid, docno,
    label``), as pt.Experiment renames it, its other columns kept; anything else (a frame that has them already, a
    run ir_measures reads otherwise) as it is."""
    import pandas as pd

    return _renamed(frame, IR_NAMES) if isinstance(frame, pd.DataFrame) else frame


def ir_frame(frame: "pd.DataFrame", what: str = "run") -> "pd.DataFrame":
    """:func:`ir_names` of ``frame``, its ids as text; ``what`` names the frame in the error when it is not a
    DataFrame."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"the {what} must be a DataFrame, got {type(frame).__name__}")
    out = _renamed(frame, IR_NAMES)
    for column in ("query_id", "doc_id"):
        if column in out.columns and not pd.api.types.is_string_dtype(out[column]):
            out = out.assign(**{column: out[column].astype(str)})
    return out


def pyterrier_frame(frame: "pd.DataFrame") -> "pd.DataFrame":
    """``frame`` with PyTerrier's column names (``qid, docno, label``) for ir_measures' (a run file read by
    :mod:`pairmeasures.io.runfiles`, entering a PyTerrier pipeline); the other columns kept."""
    return _renamed(frame, PYTERRIER_NAMES)
