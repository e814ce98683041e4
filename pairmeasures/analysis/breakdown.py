"""Per-group means of a per-query frame (e.g. by Wiki-Balance domain), with small cells flagged."""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from .bootstrap import check_per_query

if TYPE_CHECKING:
    import pandas as pd

#: The group of queries that ``groups`` does not list (or lists with no value).
NONE = "(none)"


class SmallCellWarning(UserWarning):
    """A breakdown cell's mean rests on fewer queries than ``min_size``."""


def breakdown(per_query: pd.DataFrame, groups: Mapping[str, Sequence[str]], *, field: str,
              min_size: int = 10) -> pd.DataFrame:
    """Mean and query count per (field value, system, measure) of a per-query frame.

    ``groups`` maps a qid to the ``field`` values of that query; a query with several values counts in each
    of their cells, one listed with none or not at all under ``"(none)"``. Returns columns ``field, value,
    system, measure, mean, n``; warns once (:class:`SmallCellWarning`) naming the cells with ``n < min_size``.
    """
    import pandas as pd

    check_per_query(per_query)
    if not isinstance(groups, Mapping):
        raise TypeError(f"groups must map a qid to the {field!r} values of that query; got {type(groups).__name__}")
    if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 1:
        raise ValueError(f"min_size must be a positive integer; got {min_size!r}")
    by_qid = {qid: [values] if isinstance(values, str) else values for qid, values in groups.items()}
    wrong = [qid for qid, values in by_qid.items() if not isinstance(values, Collection)]
    if wrong:
        raise TypeError(f"groups[{wrong[0]!r}] is {by_qid[wrong[0]]!r}: each qid maps to a list of {field!r} values")
    pairs = [(str(qid), str(value)) for qid, values in by_qid.items() for value in values]
    membership = pd.DataFrame(pairs, columns=["qid", "value"]).drop_duplicates()
    order = list(dict.fromkeys(membership["value"])) + [NONE]
    frame = per_query.assign(system=per_query["system"].astype(str), qid=per_query["qid"].astype(str),
                             measure=per_query["measure"].astype(str),
                             value=pd.to_numeric(per_query["value"]).astype(float)).rename(columns={"value": "x"})
    joined = frame.merge(membership, on="qid", how="left").fillna({"value": NONE})
    cells = (joined.groupby(["value", "system", "measure"], sort=False)["x"].agg(["mean", "size"])
             .rename(columns={"size": "n"}).reset_index())
    systems = list(dict.fromkeys(frame["system"]))
    measures = list(dict.fromkeys(frame["measure"]))
    cells = cells.assign(_v=cells["value"].map(order.index), _s=cells["system"].map(systems.index),
                         _m=cells["measure"].map(measures.index)).sort_values(["_v", "_m", "_s"])
    cells = cells.drop(columns=["_v", "_s", "_m"]).reset_index(drop=True)
    cells.insert(0, "field", field)
    small = cells[cells["n"] < min_size]
    if len(small):
        listed = "; ".join(f"{r.value} / {r.system} / {r.measure}: n={r.n}" for r in small.head(10).itertuples())
        more = f" and {len(small) - 10} more" if len(small) > 10 else ""
        warnings.warn(f"{len(small)} of {len(cells)} {field} cells have fewer than {min_size} queries, so their "
                      f"means are unreliable ({listed}{more})", SmallCellWarning, stacklevel=2)
    return cells[["field", "value", "system", "measure", "mean", "n"]]
