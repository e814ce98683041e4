"""The one boundary where PyTerrier frames become ir_measures frames.

PyTerrier names a run's columns ``qid``, ``docno`` (and qrels' ``label``); ir_measures and the pairmeasures
provider read ``query_id``, ``doc_id`` (and ``relevance``). A run is renamed here, once, where it leaves PyTerrier:
each system's run after it is made or read from the run cache (:func:`pairmeasures.audit.run.run_audit`), and each
re-ranked run of the trade-off as its transformer returns it (:func:`pairmeasures.audit.curves.tradeoff_curve`).
Everything that measures reads the renamed frame; a frame that already has ir_measures' names is returned as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["IR_NAMES", "ir_frame"]

#: PyTerrier's column names and the ones ir_measures reads.
IR_NAMES = {"qid": "query_id", "docno": "doc_id", "label": "relevance"}


def ir_frame(frame: "pd.DataFrame", what: str = "run") -> "pd.DataFrame":
    """``frame`` with ir_measures' column names (``query_id, doc_id, relevance``) for PyTerrier's (``qid, docno,
    label``) and its ids as text; the other columns (side information) are kept. ``what`` names the frame in the
    error when it is not a DataFrame."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"the {what} must be a DataFrame, got {type(frame).__name__}")
    renames = {old: new for old, new in IR_NAMES.items() if old in frame.columns and new not in frame.columns}
    out = frame.rename(columns=renames) if renames else frame
    for column in ("query_id", "doc_id"):
        if column in out.columns and not pd.api.types.is_string_dtype(out[column]):
            out = out.assign(**{column: out[column].astype(str)})
    return out
