"""The PAIR paper's SEME regression (Section 5.2, Table 3) on a study's responses.

.. math::

    o_\\text{posterior} = \\beta_0 + \\beta_1\\, o_\\text{prior} + \\beta_2\\, \\mu^+_\\text{DUO} + \\epsilon

fitted by ordinary least squares (statsmodels) over all trials and over the trials with at least one result
click (the paper's "Behavior: Clicked"). The null hypothesis is beta2 = 0: DUO does not predict the opinion
shift; ``p_value`` is the two-sided test of beta2. One row per trial (the columns ``pairmeasures seme export``
writes): ``participant``, ``prior`` and ``posterior`` (Likert -3..3), ``mu_duo`` (signed DUO of the shown list,
in [-1, 1], + toward the statement's perspective), ``clicks`` (result clicks, a non-negative integer) and
optionally ``completed``. pandas and statsmodels are imported only when a function is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLUMNS", "LIKERT", "MIN_TRIALS", "complete_trials", "opinion_regression"]

#: Columns the regression reads.
COLUMNS = ("participant", "prior", "posterior", "mu_duo", "clicks")
#: The opinion scale: -3 (strongly disagree with the perspective) .. 3 (strongly agree).
LIKERT = (-3, 3)
#: Trials a fit needs: three coefficients and at least one residual degree of freedom for their p-values.
MIN_TRIALS = 4

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def opinion_regression(frame: "pd.DataFrame", *, cluster: bool = False, source: Optional[str] = None) -> dict:
    """Fit o_post = beta0 + beta1 o_prior + beta2 mu+_DUO + eps (PAIR Section 5.2) for all trials and for the
    trials with at least one click.

    Returns ``{"all": FIT, "clicked": FIT, "dropped_incomplete": int, "covariance": "nonrobust" | "cluster"}``;
    FIT holds ``n``, ``beta0``, ``beta1``, ``beta2``, ``se_beta0``, ``se_beta1``, ``se_beta2``, ``p_value`` (of
    beta2), ``r2``, and with ``cluster=True`` ``cluster`` (``{"by": "participant", "groups": G}``): standard errors
    robust to correlated errors within a participant (statsmodels' ``cov_type="cluster"``; the coefficients do not
    change). A clicked subset with fewer than MIN_TRIALS trials or a constant mu_duo is not fitted: its FIT holds
    ``n``, ``None`` for every number and ``skipped`` with the reason. Incomplete participants (empty
    ``posterior``, or ``completed`` false) are dropped and counted in ``dropped_incomplete``.

    Raises ValueError naming the column and row (data row 1 = the first line after a CSV header; ``source``, a
    file name, prefixes the message) for a missing column, an empty, non-numeric or out-of-range value, fewer than
    MIN_TRIALS complete trials, or a constant prior or mu_duo over all trials.
    """
    where = f"{source}: " if source else ""
    values = _validated(frame, where)
    dropped = int((~values["complete"]).sum())
    trials = values[values["complete"]]
    if len(trials) < MIN_TRIALS:
        raise ValueError(f"{where}{len(trials)} complete trial(s) ({dropped} incomplete dropped); the regression "
                         f"needs at least {MIN_TRIALS} (three coefficients and one residual degree of freedom)")
    result: dict[str, Any] = {"all": _fit(trials, cluster, where, "all trials", required=True)}
    clicked = trials[trials["clicks"] > 0]
    result["clicked"] = _fit(clicked, cluster, where, "trials with a click", required=False)
    result["dropped_incomplete"] = dropped
    result["covariance"] = "cluster" if cluster else "nonrobust"
    return result


def complete_trials(frame: "pd.DataFrame", *, source: Optional[str] = None) -> "pd.DataFrame":
    """The complete trials of ``frame`` as numbers (columns ``participant, prior, posterior, mu_duo, clicks``),
    checked as opinion_regression checks them; incomplete participants left out."""
    values = _validated(frame, f"{source}: " if source else "")
    return values[values["complete"]].drop(columns="complete")


def _validated(frame: "pd.DataFrame", where: str) -> "pd.DataFrame":
    """The columns as numbers plus ``complete`` (bool), every value checked; errors name the row and column."""
    import numpy as np
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"opinion_regression takes a pandas DataFrame, got {type(frame).__name__}")
    missing = [column for column in COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(f"{where}missing column(s) {', '.join(map(repr, missing))}; the responses need "
                         f"{', '.join(COLUMNS)} (as `pairmeasures seme export` writes them)")
    frame = frame.reset_index(drop=True)
    participants = frame["participant"].astype(str).str.strip()

    def row(i: int) -> str:
        return f"row {i + 1} (participant {participants.iloc[i]!r})"

    def text(column: str) -> pd.Series:
        series = frame[column]
        return series.astype(str).str.strip().where(series.notna(), "")

    posterior_text = text("posterior")
    complete = (posterior_text != "").to_numpy().copy()
    if "completed" in frame.columns:
        flags = text("completed").str.lower()
        unknown = ~flags.isin(_TRUE | _FALSE | {""})
        if unknown.any():
            i = int(np.flatnonzero(unknown.to_numpy())[0])
            raise ValueError(f"{where}{row(i)}, column 'completed': {flags.iloc[i]!r} is not true or false")
        complete &= ~flags.isin(_FALSE).to_numpy()
    empty_id = (participants == "") | frame["participant"].isna()
    if empty_id.any():
        i = int(np.flatnonzero(empty_id.to_numpy())[0])
        raise ValueError(f"{where}row {i + 1}, column 'participant': empty; every trial needs its participant id")

    numbers = {}
    for column, low, high, integer in (("prior", *LIKERT, True), ("posterior", *LIKERT, True),
                                       ("mu_duo", -1.0, 1.0, False), ("clicks", 0, None, True)):
        raw = text(column)
        parsed = pd.to_numeric(raw.where(raw != "", None), errors="coerce").to_numpy(dtype=np.float64)
        for i in np.flatnonzero(complete).tolist():
            value = parsed[i]
            shown = raw.iloc[i]
            if shown == "":
                raise ValueError(f"{where}{row(i)}, column {column!r}: empty, but the participant has a posterior "
                                 "opinion; fill it in or empty the posterior to drop the participant")
            if not np.isfinite(value):
                raise ValueError(f"{where}{row(i)}, column {column!r}: {shown!r} is not a number")
            if integer and value != np.round(value):
                raise ValueError(f"{where}{row(i)}, column {column!r}: {shown!r} is not a whole number")
            if value < low or (high is not None and value > high):
                bound = f"{low}..{high}" if high is not None else f">= {low}"
                raise ValueError(f"{where}{row(i)}, column {column!r}: {shown} is outside {bound}")
        numbers[column] = parsed
    return pd.DataFrame({"participant": participants, **numbers, "complete": complete})


def _fit(trials: "pd.DataFrame", cluster: bool, where: str, subset: str, *, required: bool) -> dict:
    import numpy as np
    import statsmodels.api as sm

    n = len(trials)
    problem = None
    if n < MIN_TRIALS:
        problem = f"{n} {subset}; a fit needs at least {MIN_TRIALS}"
    else:
        for column in ("mu_duo", "prior"):
            if trials[column].nunique() == 1:
                problem = (f"column {column!r} is {trials[column].iloc[0]:g} in all {n} {subset}: its coefficient "
                           "cannot be estimated" + ("; show orderings of different bias (conditions most_positive, "
                                                    "most_negative, least)" if column == "mu_duo" else ""))
                break
    design = None
    if problem is None:
        design = sm.add_constant(trials[["prior", "mu_duo"]].to_numpy(), has_constant="add")
        if np.linalg.matrix_rank(design) < 3:
            problem = f"columns 'prior' and 'mu_duo' are collinear over the {n} {subset}: beta2 cannot be estimated"
    if problem is not None:
        if required:
            raise ValueError(f"{where}{problem}")
        return {"n": n, **{key: None for key in ("beta0", "beta1", "beta2", "se_beta0", "se_beta1", "se_beta2",
                                                 "p_value", "r2")}, "skipped": problem}
    model = sm.OLS(trials["posterior"].to_numpy(), design)
    if cluster:
        groups = trials["participant"].astype("category").cat.codes.to_numpy()
        fit = model.fit(cov_type="cluster", cov_kwds={"groups": groups})
    else:
        fit = model.fit()
    result: dict[str, Any] = {"n": n}
    for index, name in enumerate(("beta0", "beta1", "beta2")):
        result[name] = float(fit.params[index])
    for index, name in enumerate(("se_beta0", "se_beta1", "se_beta2")):
        result[name] = float(fit.bse[index])
    result["p_value"] = float(fit.pvalues[2])
    result["r2"] = float(fit.rsquared)
    if cluster:
        result["cluster"] = {"by": "participant", "groups": int(trials["participant"].nunique())}
    return result
