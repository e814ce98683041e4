"""The SEME regression (PAIR Section 5.2, Table 3): known coefficients recovered, cluster-robust errors as statsmodels
computes them, the command line as a user runs it, and every kind of bad input refused with its row and column."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pairmeasures.analysis.seme import MIN_TRIALS, opinion_regression

TRUE = {"beta0": 0.3, "beta1": 0.5, "beta2_clicked": 1.0, "click_rate": 0.5}


def synthetic(n=6000, seed=1, trials_per_participant=1, beta2_clicked=TRUE["beta2_clicked"], participant_sd=0.0):
    """Trials where only a click lets the ranking move the opinion: posterior = beta0 + beta1 prior +
    beta2_clicked * clicked * mu + noise, rounded to the Likert scale (noise before rounding keeps it unbiased)."""
    rng = np.random.default_rng(seed)
    prior = rng.integers(-2, 3, n)
    mu = rng.uniform(-1, 1, n)
    clicks = np.where(rng.random(n) < TRUE["click_rate"], rng.integers(1, 4, n), 0)
    participant = np.arange(n) // trials_per_participant
    shared = rng.normal(0, participant_sd, participant.max() + 1)[participant]
    latent = (TRUE["beta0"] + TRUE["beta1"] * prior + beta2_clicked * (clicks > 0) * mu + shared
              + rng.normal(0, 0.6, n))
    posterior = np.clip(np.round(latent), -3, 3).astype(int)
    return pd.DataFrame({"participant": [f"p{i}" for i in participant], "query_id": "q1", "condition": "least",
                         "prior": prior, "posterior": posterior, "mu_duo": mu, "clicks": clicks})


def test_recovers_the_coefficients_the_data_were_made_with():
    result = opinion_regression(synthetic())
    clicked, every = result["clicked"], result["all"]
    assert every["n"] == 6000 and 2800 < clicked["n"] < 3200
    assert clicked["beta0"] == pytest.approx(TRUE["beta0"], abs=0.05)
    assert clicked["beta1"] == pytest.approx(TRUE["beta1"], abs=0.03)
    assert clicked["beta2"] == pytest.approx(TRUE["beta2_clicked"], abs=0.06)
    # over all trials the ranking moves only the clicked half: beta2 = click rate * beta2_clicked
    assert every["beta0"] == pytest.approx(TRUE["beta0"], abs=0.05)
    assert every["beta1"] == pytest.approx(TRUE["beta1"], abs=0.03)
    assert every["beta2"] == pytest.approx(TRUE["click_rate"] * TRUE["beta2_clicked"], abs=0.06)
    assert clicked["p_value"] < 1e-50 and every["p_value"] < 1e-20
    assert result["dropped_incomplete"] == 0 and result["covariance"] == "nonrobust"


def test_fit_equals_least_squares_by_hand():
    frame = synthetic(n=300, seed=7)
    fit = opinion_regression(frame)["all"]
    x = np.column_stack([np.ones(len(frame)), frame["prior"], frame["mu_duo"]]).astype(float)
    y = frame["posterior"].to_numpy(float)
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    residual = y - x @ beta
    dof = len(y) - 3
    se = np.sqrt(np.diag(np.linalg.inv(x.T @ x)) * (residual @ residual) / dof)
    assert [fit["beta0"], fit["beta1"], fit["beta2"]] == pytest.approx(beta, abs=1e-10)
    assert [fit["se_beta0"], fit["se_beta1"], fit["se_beta2"]] == pytest.approx(se, rel=1e-9)
    assert fit["p_value"] == pytest.approx(2 * stats.t.sf(abs(beta[2] / se[2]), dof), rel=1e-6)
    assert fit["r2"] == pytest.approx(1 - residual @ residual / ((y - y.mean()) @ (y - y.mean())), abs=1e-12)


def test_no_effect_gives_no_significance():
    result = opinion_regression(synthetic(n=400, seed=3, beta2_clicked=0.0))
    assert result["clicked"]["p_value"] > 0.05 and result["all"]["p_value"] > 0.05
    assert abs(result["all"]["beta2"]) < 0.2


def test_cluster_changes_standard_errors_not_coefficients_and_matches_statsmodels():
    import statsmodels.api as sm

    frame = synthetic(n=1200, seed=5, trials_per_participant=6, participant_sd=0.8)
    plain, robust = opinion_regression(frame), opinion_regression(frame, cluster=True)
    assert robust["covariance"] == "cluster" and "cluster" not in plain["all"]
    assert robust["all"]["cluster"] == {"by": "participant", "groups": 200}
    for key in ("all", "clicked"):
        for name in ("beta0", "beta1", "beta2", "r2"):
            assert robust[key][name] == pytest.approx(plain[key][name], abs=1e-12)
        assert robust[key]["se_beta0"] > 1.3 * plain[key]["se_beta0"]  # the participant effect is shared
    x = sm.add_constant(frame[["prior", "mu_duo"]].to_numpy(float))
    groups = pd.factorize(frame["participant"])[0]
    reference = sm.OLS(frame["posterior"].to_numpy(float), x).fit(cov_type="cluster", cov_kwds={"groups": groups})
    fit = robust["all"]
    assert [fit["se_beta0"], fit["se_beta1"], fit["se_beta2"]] == pytest.approx(reference.bse, rel=1e-10)
    assert fit["p_value"] == pytest.approx(reference.pvalues[2], rel=1e-8)


def test_incomplete_participants_are_dropped_and_counted():
    frame = synthetic(n=40, seed=2).astype({"posterior": object, "prior": object})
    frame["completed"] = "true"
    frame.loc[3, ["posterior", "completed"]] = ["", "false"]
    frame.loc[5, ["prior", "posterior", "completed"]] = ["", "", "false"]
    frame.loc[8, "completed"] = "false"  # stopped after the posterior: not a complete trial either
    frame.loc[9, "posterior"] = np.nan
    result = opinion_regression(frame)
    assert result["dropped_incomplete"] == 4 and result["all"]["n"] == 36
    kept = frame.drop(index=[3, 5, 8, 9])
    assert result["all"]["beta2"] == pytest.approx(opinion_regression(kept)["all"]["beta2"], abs=1e-12)


def test_too_few_clicked_trials_are_reported_not_fitted():
    frame = synthetic(n=30, seed=4)
    frame["clicks"] = 0
    frame.loc[:1, "clicks"] = 1
    clicked = opinion_regression(frame)["clicked"]
    assert clicked["n"] == 2 and clicked["beta2"] is None and clicked["p_value"] is None
    assert clicked["skipped"] == f"2 trials with a click; a fit needs at least {MIN_TRIALS}"


def bad(frame, row, column, value):
    frame = frame.astype(object)
    frame.loc[row, column] = value
    return frame


BAD_INPUTS = [
    (lambda f: f.drop(columns=["mu_duo", "clicks"]),
     "missing column(s) 'mu_duo', 'clicks'; the responses need participant, prior, posterior, mu_duo, clicks"),
    (lambda f: bad(f, 2, "prior", "agree"), "row 3 (participant 'p2'), column 'prior': 'agree' is not a number"),
    (lambda f: bad(f, 0, "prior", 4), "row 1 (participant 'p0'), column 'prior': 4 is outside -3..3"),
    (lambda f: bad(f, 4, "posterior", -3.5), "row 5 (participant 'p4'), column 'posterior': '-3.5' is not a whole "
                                             "number"),
    (lambda f: bad(f, 6, "mu_duo", 1.5), "row 7 (participant 'p6'), column 'mu_duo': 1.5 is outside -1.0..1.0"),
    (lambda f: bad(f, 6, "mu_duo", "nan"), "row 7 (participant 'p6'), column 'mu_duo': 'nan' is not a number"),
    (lambda f: bad(f, 1, "mu_duo", ""), "row 2 (participant 'p1'), column 'mu_duo': empty, but the participant has "
                                        "a posterior opinion"),
    (lambda f: bad(f, 9, "clicks", -1), "row 10 (participant 'p9'), column 'clicks': -1 is outside >= 0"),
    (lambda f: bad(f, 9, "clicks", 1.5), "row 10 (participant 'p9'), column 'clicks': '1.5' is not a whole number"),
    (lambda f: bad(f, 3, "participant", ""), "row 4, column 'participant': empty"),
    (lambda f: f.assign(completed="maybe"), "row 1 (participant 'p0'), column 'completed': 'maybe' is not true or "
                                            "false"),
    (lambda f: f.head(3), f"3 complete trial(s) (0 incomplete dropped); the regression needs at least {MIN_TRIALS}"),
    (lambda f: f.assign(mu_duo=0.4), "column 'mu_duo' is 0.4 in all 12 all trials: its coefficient cannot be "
                                     "estimated; show orderings of different bias"),
    (lambda f: f.assign(prior=1), "column 'prior' is 1 in all 12 all trials"),
    (lambda f: f.assign(mu_duo=(f["prior"] / 3.0)), "columns 'prior' and 'mu_duo' are collinear over the 12 all "
                                                    "trials"),
]


@pytest.mark.parametrize("make, message", BAD_INPUTS, ids=[m[:40] for _, m in BAD_INPUTS])
def test_bad_input_names_what_to_fix(make, message):
    with pytest.raises(ValueError) as error:
        opinion_regression(make(synthetic(n=12, seed=6)), source="responses.csv")
    assert str(error.value).startswith("responses.csv: ")
    assert message in str(error.value)


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pairmeasures", "seme", "analyze", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture
def responses(tmp_path):
    """A CSV as `pairmeasures seme export` writes it, one unfinished participant included."""
    frame = synthetic(n=200, seed=11).astype({"posterior": object})
    frame["clicked_ranks"] = ["1;3" if c else "" for c in frame["clicks"]]
    frame["summary"] = "I read, \"quoted\"\nand thought."
    frame["completed"] = "true"
    frame.loc[7, ["posterior", "completed"]] = ["", "false"]
    path = tmp_path / "responses.csv"
    frame.to_csv(path, index=False)
    return path


def test_cli_table_json_and_plot(responses, tmp_path):
    table = cli(responses, cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["Behavior", "N", "beta0", "beta1", "beta2", "SE(beta2)", "P(beta2=0)", "R^2"]
    assert lines[1].split()[:2] == ["All", "199"] and lines[2].split()[0] == "Clicked"
    assert "dropped 1 incomplete participant(s)" in table.stdout

    plot = tmp_path / "shift.png"
    result = cli(responses, "--json", "--plot", plot, "--cluster", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"all", "clicked", "dropped_incomplete", "covariance"}
    assert data["covariance"] == "cluster" and data["dropped_incomplete"] == 1
    for key in ("all", "clicked"):
        assert {"n", "beta0", "beta1", "beta2", "p_value", "r2", "se_beta2", "cluster"} <= set(data[key])
    assert data["all"]["n"] == 199
    frame = pd.read_csv(responses, keep_default_na=False, dtype=str)
    expected = opinion_regression(frame, cluster=True)
    assert data["clicked"]["beta2"] == pytest.approx(expected["clicked"]["beta2"], abs=1e-12)
    image = plot.read_bytes()
    assert image[:8] == b"\x89PNG\r\n\x1a\n" and len(image) > 10_000
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left

    again = cli(responses, "--plot", plot, cwd=tmp_path)
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.strip() == f"pairmeasures seme analyze: error: --plot {str(plot)!r} exists; pass --force " \
                                   "to replace it"
    assert plot.read_bytes() == image
    forced = cli(responses, "--plot", plot, "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr


def test_cli_bad_input_is_one_line(tmp_path, responses):
    frame = pd.read_csv(responses, keep_default_na=False, dtype=str)
    frame.loc[5, "prior"] = "nine"
    frame.to_csv(responses, index=False)
    result = cli(responses, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (f"pairmeasures seme analyze: error: {responses}: row 6 (participant 'p5'), "
                                     "column 'prior': 'nine' is not a number")

    missing = cli(tmp_path / "absent.csv", cwd=tmp_path)
    assert missing.returncode == 2 and "absent.csv: no such file" in missing.stderr
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    result = cli(empty, cwd=tmp_path)
    assert result.returncode == 2 and "empty.csv: the file is empty" in result.stderr
    not_png = cli(responses, "--plot", tmp_path / "shift.jpg", cwd=tmp_path)
    assert not_png.returncode == 2 and "name a .png file" in not_png.stderr


def test_importing_the_module_stays_light():
    code = ("import sys, pairmeasures.analysis.seme, pairmeasures.apps.seme.analyze; "
            "print(sorted(m for m in ('pandas', 'statsmodels', 'matplotlib') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
