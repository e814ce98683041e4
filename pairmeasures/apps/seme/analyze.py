"""``pairmeasures seme analyze``: the PAIR paper's regression of posterior opinion on prior opinion and mu+_DUO
(Section 5.2, Table 3) on an exported study, as a table, JSON, and a plot of opinion shift against mu+_DUO."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

HELP = "regress posterior opinion on prior opinion and mu+_DUO (PAIR Table 3), for all trials and clicked ones"
DESCRIPTION = (
    "Fit o_post = b0 + b1*o_prior + b2*mu+_DUO + e by OLS (PAIR paper, Section 5.2) over all complete trials\n"
    "and over the trials with at least one result click, and report N, b0, b1, b2, the p-value of b2 (null\n"
    "hypothesis: DUO does not predict the opinion shift) and R^2 like the paper's Table 3. RESPONSES.csv is\n"
    "what `pairmeasures seme export` writes (columns participant, prior, posterior, mu_duo, clicks, ...);\n"
    "participants without a posterior opinion are dropped and counted.\n\n"
    "example:\n  pairmeasures seme analyze responses.csv --plot shift.png --cluster")
#: The extra this command needs (a module of it missing is named with ``pip install 'pairmeasures[seme]'``).
EXTRA = "seme"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("responses", metavar="RESPONSES.csv", help="the exported responses, one row per trial")
    parser.add_argument("--json", action="store_true",
                        help="print a JSON object (keys all, clicked, dropped_incomplete, covariance) instead of "
                             "the table")
    parser.add_argument("--plot", default=None, metavar="FILE.png",
                        help="also write a PNG of opinion shift (posterior - prior) against mu+_DUO with the fits")
    parser.add_argument("--cluster", action="store_true",
                        help="standard errors and p-values robust to correlation within a participant")
    parser.add_argument("--force", action="store_true", help="replace an existing --plot file")


def run(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from ..._atomic import output_file
    from ...analysis.seme import opinion_regression

    with output_file(args.plot, force=args.force, option="--plot", suffixes=(".png",)) if args.plot else \
            nullcontext() as claim:  # the --plot file locked and checked before any work
        frame = read_responses(args.responses)
        result = opinion_regression(frame, cluster=args.cluster, source=args.responses)
        if claim is not None:
            from ..plots import png_bytes

            claim.write(png_bytes(shift_figure(frame, result)))
    plot = None if claim is None else claim.path
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(table(result))
    if plot is not None:
        print(f"wrote {plot}", file=sys.stderr)
    return 0


def read_responses(path: str) -> "pd.DataFrame":
    """The CSV as text columns (empty cells are empty strings), so that every value is checked as written."""
    import pandas as pd

    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file; export the responses with `pairmeasures seme export`")
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path}: the file is empty; expected a header and one row per trial") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a readable UTF-8 CSV file: {error}") from None


def table(result: dict) -> str:
    """The fits as a plain-text table like the PAIR paper's Table 3 (plus beta0, beta1 and the SE of beta2)."""
    header = ("Behavior", "N", "beta0", "beta1", "beta2", "SE(beta2)", "P(beta2=0)", "R^2")
    rows = []
    for key, name in (("all", "All"), ("clicked", "Clicked")):
        fit = result[key]
        if fit.get("skipped"):
            rows.append((name, str(fit["n"]), *["-"] * 6))
            continue
        p = fit["p_value"]
        rows.append((name, str(fit["n"]), *(f"{fit[k]:.3f}" for k in ("beta0", "beta1", "beta2", "se_beta2")),
                     f"{p:.3f}" if p >= 0.001 else f"{p:.1e}", f"{fit['r2']:.3f}"))
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths)))
             for r in (header, *rows)]
    notes = [f"Clicked: not fitted: {result['clicked']['skipped']}"] if result["clicked"].get("skipped") else []
    covariance = ("cluster-robust by participant" if result["covariance"] == "cluster" else "classical OLS")
    notes.append(f"standard errors: {covariance}; dropped {result['dropped_incomplete']} incomplete participant(s)")
    return "\n".join(lines + [""] + notes)


def shift_figure(frame: "pd.DataFrame", result: dict) -> "Figure":
    """Opinion shift (posterior - prior) against mu+_DUO, trials with and without a click marked apart, and each
    fit's line at the mean prior: shift = beta0 + (beta1 - 1) * mean(prior) + beta2 * mu."""
    import numpy as np

    from ...analysis.seme import complete_trials
    from ..plots import new_figure, style_axes

    trials = complete_trials(frame)
    shift = (trials["posterior"] - trials["prior"]).to_numpy(dtype=np.float64)
    mu = trials["mu_duo"].to_numpy(dtype=np.float64)
    clicked = (trials["clicks"] > 0).to_numpy()
    figure = new_figure()
    axes = figure.add_subplot()
    style_axes(axes)
    axes.scatter(mu[~clicked], shift[~clicked], marker="o", facecolors="none", edgecolors="#777777",
                 label=f"no click (n={int((~clicked).sum())})")
    axes.scatter(mu[clicked], shift[clicked], marker="o", color="#1f77b4", alpha=0.8,
                 label=f"clicked (n={int(clicked.sum())})")
    grid = np.linspace(-1.0, 1.0, 50)
    mean_prior = float(trials["prior"].mean())
    for key, color, linestyle in (("all", "#444444", "--"), ("clicked", "#1f77b4", "-")):
        fit = result[key]
        if fit.get("skipped"):
            continue
        line = fit["beta0"] + (fit["beta1"] - 1.0) * mean_prior + fit["beta2"] * grid
        axes.plot(grid, line, label=f"fit, {key}: beta2={fit['beta2']:.3f}, p={fit['p_value']:.3g}",
                  color=color, linestyle=linestyle)
    axes.axhline(0.0, color="#bbbbbb", linewidth=0.8)
    axes.set_xlim(-1.05, 1.05)
    axes.set_xlabel("mu+_DUO of the shown ranking (+: toward the perspective)")
    axes.set_ylabel("opinion shift (posterior - prior)")
    axes.set_title("SEME: opinion shift against signed DUO")
    axes.legend(frameon=False, fontsize="small")
    return figure
