"""The leaderboard built from results folders as a user builds it: its numbers are the records' means, its ranks and
significance marks are those computed by brute force and by scipy/statsmodels directly, records on other pins are
shown apart, missing values and damaged records are named, and the site works in Chromium at 1,400 px."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from synthetic_records import make_record, suite_toml, write_results

from pairmeasures.benchmark.records import write_record
from pairmeasures.benchmark.suites import load_suite
from pairmeasures.leaderboard import build
from pairmeasures.leaderboard.stats import average_ranks, holm

SYSTEMS = ["bm25", "bm25>>dense", "bm25>>dense>>duogreedy(0.5)", "bm25>>dense>>mmr(0.5)", "lab"]
QUERIES = 60


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A synthetic suite of 3 tasks and a results folder: 5 systems, one without task t2, one record missing a
    value, a submission measured on a subset of the queries in another order, and two records on other pins."""
    folder = tmp_path_factory.mktemp("board")
    suite_file = folder / "suite.toml"
    suite_file.write_text(suite_toml("synthetic", tasks=3), encoding="utf-8")
    suite = load_suite(suite_file)
    out = folder / "results"
    write_results(out, suite, SYSTEMS[:4], QUERIES, seed=1)
    ids = [f"q{i}" for i in range(QUERIES)]
    for number, task in enumerate(suite.tasks[:2]):  # "lab" has no record of synth/t2
        subset = ids[5:][::-1]  # other queries, another order
        data, run = make_record("lab", task.id, task.measures, subset, seed=50 + number, pins=task.pins(),
                                suite=("synthetic", "1"), kind="submission")
        write_record(out, data, run)
    task = suite.task("synth/t2")
    data, run = make_record("bm25>>dense>>mmr(0.5)", task.id, task.measures, ids, seed=7, pins=task.pins(),
                            suite=("synthetic", "1"))
    data["measures"]["Duo@10"], data["n"]["Duo@10"] = None, 0  # a measure that measured no query
    data["per_query"]["values"]["Duo@10"] = [None] * QUERIES
    write_record(out, data, run, replace=True)
    other_dataset = dict(task.pins(), dataset_files={**task.files, "corpus.jsonl": "f" * 64})
    write_record(out, *make_record("other-data", task.id, task.measures, ids, seed=8, pins=other_dataset,
                                   suite=("synthetic", "1")))
    other_measures = dict(task.pins(), measures=[*task.measures, "nDCG@5"])
    write_record(out, *make_record("other-measures", task.id, [*task.measures, "nDCG@5"], ids, seed=9,
                                   pins=other_measures, suite=("synthetic", "1")))
    site = folder / "site"
    built = build([out], site, str(suite_file))
    board = json.loads((site / "leaderboard.json").read_text())
    return {"suite": suite, "suite_file": suite_file, "out": out, "site": site, "built": built, "board": board}


def records_of(results) -> list:
    from pairmeasures.benchmark.records import read_records

    return read_records([results["out"]])[0]


def test_the_board_shows_the_records_means_and_counts(results):
    board = results["board"]
    assert set(board) >= {"suite", "tasks", "systems"} and board["suite"]["name"] == "synthetic"
    assert list(board["tasks"]) == ["synth/t0", "synth/t1", "synth/t2"]
    shown = 0
    for record in records_of(results):
        if record.system.startswith("other-"):
            assert record.system not in board["systems"]
            continue
        means = board["systems"][record.system][record.task]
        assert means == {m: record.measures.get(m) for m in results["suite"].task(record.task).measures}
        assert board["n"][record.system][record.task] == record.n
        shown += 1
    assert shown == results["built"].records == 14
    assert "synth/t2" not in board["systems"]["lab"]
    csv_lines = (results["site"] / "leaderboard.csv").read_text().splitlines()
    assert csv_lines[0].startswith("system,kind,task,measure,mean,n,direction,rank,p_value,p_holm,significant")
    row = next(line for line in csv_lines if line.startswith("lab,submission,synth/t0,nDCG@10,"))
    assert float(row.split(",")[4]) == board["systems"]["lab"]["synth/t0"]["nDCG@10"]


def direction_key(direction: str, value: float) -> float:
    return {"higher-better": -value, "higher-fairer": -value, "lower-fairer": value, "signed": abs(value)}[direction]


def test_ranks_and_mean_ranks_equal_brute_force_with_a_missing_task_tied_last(results):
    from scipy.stats import rankdata

    board, suite = results["board"], results["suite"]
    systems = sorted(board["systems"])
    for measure in suite.tasks[0].measures:
        per_task = []
        for task in suite.tasks:
            direction = board["tasks"][task.id]["directions"][measure]
            have = [s for s in systems if board["systems"][s].get(task.id, {}).get(measure) is not None]
            keys = [direction_key(direction, board["systems"][s][task.id][measure]) for s in have]
            expected = dict(zip(have, rankdata(keys, method="average")))
            for s in set(systems) - set(have):  # no value: tied for the places after the ranked ones
                expected[s] = float(np.mean(np.arange(len(have) + 1, len(systems) + 1)))
            for s in systems:
                assert board["ranks"][s].get(task.id, {}).get(measure, expected[s]) == pytest.approx(expected[s])
                if task.id in board["ranks"][s]:
                    assert board["ranks"][s][task.id][measure] == pytest.approx(expected[s])
            per_task.append(expected)
        for s in systems:
            assert board["aggregate_ranks"][measure][s] == pytest.approx(np.mean([r[s] for r in per_task]))
    assert board["ranks"]["lab"].get("synth/t2") is None
    assert board["aggregate_ranks"]["nDCG@10"]["lab"] >= 1


def test_significance_equals_scipy_and_statsmodels_on_the_queries_both_measured(results):
    from scipy.stats import ttest_rel
    from statsmodels.stats.multitest import multipletests

    board = results["board"]
    records = {(r.system, r.task): r for r in records_of(results) if not r.system.startswith("other-")}
    tested = 0
    for task in results["suite"].tasks:
        base = records[("bm25", task.id)]
        for measure in task.measures:
            names, p_values = [], []
            for (system, task_id), record in sorted(records.items()):
                if task_id != task.id or system == "bm25":
                    continue
                mine = dict(zip(record.query_ids, record.values[measure]))
                pairs = [(mine[q], b) for q, b in zip(base.query_ids, base.values[measure])
                         if q in mine and not np.isnan(mine[q]) and not np.isnan(b)]
                if len(pairs) < 2:
                    continue
                x, y = np.array(pairs).T
                names.append(system)
                p_values.append(ttest_rel(x, y).pvalue)
                assert board["significance"]["tests"][system][task.id][measure]["n"] == len(pairs)
            if not names:
                continue
            reject, corrected, _, _ = multipletests(p_values, alpha=0.05, method="holm")
            for name, p, adjusted, significant in zip(names, p_values, corrected, reject):
                test = board["significance"]["tests"][name][task.id][measure]
                assert test["p"] == pytest.approx(p, rel=1e-9, abs=1e-300)
                assert test["p_holm"] == pytest.approx(adjusted, rel=1e-9, abs=1e-300)
                assert test["significant"] == bool(significant)
                tested += 1
    assert tested > 30
    assert any(t[m]["significant"] for s in board["significance"]["tests"].values() for t in s.values() for m in t)
    page = (results["site"] / "tasks" / "synth--t0.html").read_text()
    marks = sum(test["significant"] for s in board["significance"]["tests"].values()
                for m, test in s.get("synth/t0", {}).items())
    assert page.count('<span class="mark">†</span>') == marks


def test_average_ranks_and_holm_equal_scipy_and_statsmodels():
    from scipy.stats import rankdata
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    for size in (1, 2, 5, 40):
        keys = rng.integers(0, 6, size).astype(float)  # many ties
        assert np.allclose(average_ranks(keys), rankdata(keys, method="average"))
        p = rng.random(size) ** 3
        assert np.allclose(holm(p), multipletests(p, method="holm")[1])


def test_records_on_other_pins_are_shown_apart_and_never_ranked(results):
    board = results["board"]
    apart = {entry["system"]: entry["why"] for entry in board["other_pins"]}
    assert set(apart) == {"other-data", "other-measures"} and results["built"].other == 2
    assert "another corpus.jsonl" in apart["other-data"] and "measures not in the suite: nDCG@5" in apart["other-measures"]
    assert not any(name.startswith("other-") for name in board["ranks"])
    index = (results["site"] / "index.html").read_text()
    section = index[index.index("Records on other pins"):]
    assert "other-data" in section and "other-data" not in index[:index.index("Records on other pins")]


def test_a_missing_value_is_named_where_it_would_be(results):
    board = results["board"]
    assert board["tasks"]["synth/t2"]["missing"] == {"bm25>>dense>>mmr(0.5)": ["Duo@10"]}
    page = (results["site"] / "tasks" / "synth--t2.html").read_text()
    assert "has no value of Duo@10" in page and ">missing</td>" in page
    assert board["systems"]["bm25>>dense>>mmr(0.5)"]["synth/t2"]["Duo@10"] is None


def test_build_as_a_user_runs_it_names_damaged_records_and_refuses_what_is_not_a_board(results, tmp_path):
    out = tmp_path / "results"
    shutil.copytree(results["out"], out)
    damaged = next(out.rglob("t1.json"))
    damaged.write_text(damaged.read_text()[:200])
    site = tmp_path / "site"
    done = cli("leaderboard", "build", str(out), "--out", str(site), "--suite", str(results["suite_file"]), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["left_out"] == [{"file": str(damaged), "reason": summary["left_out"][0]["reason"]}]
    assert "truncated or not JSON" in summary["left_out"][0]["reason"] and summary["records"] == 13
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("pairmeasures leaderboard build: left out ")
    assert "Records left out" in (site / "index.html").read_text()
    again = cli("leaderboard", "build", str(out), "--out", str(site), "--suite", str(results["suite_file"]))
    assert again.returncode == 2 and "exists: pass --force" in again.stderr
    assert cli("leaderboard", "build", str(out), "--out", str(site), "--suite", str(results["suite_file"]),
               "--force").returncode == 0
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    refused = cli("leaderboard", "build", str(out), "--out", str(mine), "--suite", str(results["suite_file"]), "--force")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "is not a leaderboard site" in refused.stderr
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    unnamed = cli("leaderboard", "build", str(out), "--out", str(tmp_path / "x"))
    assert unnamed.returncode == 2 and "the records name the suite 'synthetic', which is not built in" in unnamed.stderr
    assert unnamed.stderr.count("\n") == 1


def test_the_built_in_suite_is_found_from_the_records(tmp_path):
    suite = load_suite("pair-bias-v1")
    write_results(tmp_path / "results", suite, ["bm25", "dense"], 12, tasks=["pair/procon", "pair/grep-biasir"])
    built = build([tmp_path / "results"], tmp_path / "site")
    assert built.suite == "pair-bias-v1 version 1" and built.records == 4
    board = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    assert list(board["tasks"]) == [t.id for t in suite.tasks] and set(board["systems"]["dense"]) == {
        "pair/procon", "pair/grep-biasir"}
    # a measure only tasks without records name (the MS MARCO sets' RR@10) is not ranked: no tie of every system
    assert board["aggregate_tasks"]["RR@10"] == [] and not board["aggregate_ranks"]["RR@10"]
    assert board["aggregate_tasks"]["Duo@10"] == ["pair/procon"]
    assert 'data-col="a' in (tmp_path / "site" / "index.html").read_text() and ">RR<" not in (
        tmp_path / "site" / "index.html").read_text().split('id="aggregate"')[1]


#: Write the board's screenshots here (``PAIRMEASURES_LEADERBOARD_SCREENSHOTS=DIR``), e.g. to look at them.
SCREENSHOTS = os.environ.get("PAIRMEASURES_LEADERBOARD_SCREENSHOTS")
LONG = ["bm25", "dense", "bm25>>dense", "bm25>>ce(cross-encoder/ms-marco-MiniLM-L-6-v2)",
        "bm25>>ce(cross-encoder/ms-marco-MiniLM-L-6-v2)>>duogreedy(0.25)",
        "bm25>>ce(cross-encoder/ms-marco-MiniLM-L-6-v2)>>duogreedy(0.5)",
        "bm25>>ce(cross-encoder/ms-marco-MiniLM-L-6-v2)>>mmr(0.5)", "lab-x-submission"]


def test_the_board_works_in_chromium_at_1400_pixels(tmp_path):
    """Every column of the overview on screen with the built-in suite's seven tasks, sorting and filtering work,
    a record's provenance opens, and no page logs an error."""
    chromium = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if chromium is None:
        pytest.skip("needs Debian's headless browser: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    suite = load_suite("pair-bias-v1")
    write_results(tmp_path / "results", suite, LONG, 40)
    build([tmp_path / "results"], tmp_path / "site")
    errors: list = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto((tmp_path / "site" / "index.html").as_uri())
            seen = page.evaluate("""() => {
                const table = document.getElementById('overview-table');
                return {width: document.documentElement.clientWidth, page: document.documentElement.scrollWidth,
                        right: table.getBoundingClientRect().right,
                        headers: [...table.querySelectorAll('th')].map(th => th.getBoundingClientRect().right),
                        rows: table.tBodies[0].rows.length};
            }""")
            assert seen["rows"] == len(LONG)
            assert seen["page"] <= seen["width"] and seen["right"] <= seen["width"]
            assert max(seen["headers"]) <= seen["width"]
            if SCREENSHOTS:
                Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(Path(SCREENSHOTS) / "leaderboard-1400.png"), full_page=True)
            column = "t0m1"  # PERSPECTRUM's Duo@10: lower is fairer
            keys = "() => [...document.querySelectorAll('#overview-table tbody tr')].map(r => r.querySelector('[data-col=\"t0m1\"]').dataset.v).map(Number)"
            page.click(f'#overview-table th[data-col="{column}"] button')
            ascending = page.evaluate(keys)
            assert ascending == sorted(ascending)
            page.click(f'#overview-table th[data-col="{column}"] button')
            assert page.evaluate(keys) == sorted(ascending, reverse=True)
            page.click('#overview-table th[data-col="system"] button')
            names = page.evaluate("() => [...document.querySelectorAll('#overview-table tbody tr')].map(r => r.dataset.system)")
            assert names == sorted(LONG, key=str.lower)
            page.fill("#filter", "duogreedy")
            visible = page.evaluate("() => [...document.querySelectorAll('#overview-table tbody tr')].filter(r => !r.hidden).map(r => r.dataset.system)")
            assert sorted(visible) == sorted(s for s in LONG if "duogreedy" in s)
            assert page.inner_text("#shown") == "2 of 8 systems shown"
            page.fill("#filter", "")
            page.click('a[href="tasks/pair--procon.html"] >> nth=0')
            page.wait_for_load_state()
            assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
            assert page.locator("tr.prov").first.is_hidden()
            page.locator("button.prov-toggle").first.click()
            assert page.locator("tr.prov").first.is_visible() and "run sha256" in page.locator("tr.prov").first.inner_text()
            assert page.locator("figure svg").count() == 4  # one scatter per bias measure of ProCon
            if SCREENSHOTS:
                page.screenshot(path=str(Path(SCREENSHOTS) / "leaderboard-task-1400.png"), full_page=True)
        finally:
            browser.close()
    assert errors == []


def test_a_site_is_never_written_into_a_results_folder_and_damage_alone_is_named(results, tmp_path):
    inside = cli("leaderboard", "build", str(results["out"]), "--out", str(results["out"] / "site"))
    assert inside.returncode == 2 and "lies inside the results folder" in inside.stderr
    assert not (results["out"] / "site").exists()
    out = tmp_path / "results"
    write_record(out, *make_record("bm25", "synth/t0", ["nDCG@10"], ["q1", "q2"]))
    only = next(out.rglob("t0.json"))
    only.write_text("{")
    damaged = cli("leaderboard", "build", str(out), "--out", str(tmp_path / "site"))
    assert damaged.returncode == 2 and damaged.stderr.count("\n") == 1
    assert f"1 record files were left out, e.g. {only}: truncated or not JSON" in damaged.stderr


def test_the_committed_board_is_what_its_records_build(tmp_path):
    """benchmarks/results/leaderboard/site/ is `leaderboard build` of the committed results/, file for file (the
    output marker aside): a record changed without rebuilding the board, or the other way round, fails here."""
    committed = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "leaderboard"
    built = subprocess.run([sys.executable, "-m", "pairmeasures", "leaderboard", "build", str(committed / "results"),
                            "--out", str(tmp_path / "site")], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr

    def files(root: Path) -> dict:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
                if p.is_file() and p.name != ".pairmeasures-output.json"}

    mine, theirs = files(tmp_path / "site"), files(committed / "site")
    assert sorted(mine) == sorted(theirs)
    assert [name for name in mine if mine[name] != theirs[name]] == []
