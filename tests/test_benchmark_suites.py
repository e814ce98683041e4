"""Benchmark suites: the built-in pair-bias-v1, a user's TOML file read the same way, every problem of a suite file
one line naming the file and the task, the pins of a task's data here, and ``pairmeasures benchmark suites``."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pairmeasures.benchmark.suites import SuiteError, builtin_suites, load_suite, measure_facts, task_pins

PAIR_TASKS = ["pair/perspectrum", "pair/procon", "pair/wiki-balance/synthetic", "pair/grep-biasir"]
MSMARCO_TASKS = ["pair/msmarco-passage/dev/gender-qs1", "pair/msmarco-passage/dev/gender-qs2",
                 "pair/msmarco-passage/trec-dl-2019/gender"]


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True, timeout=300,
                          env=env)


def write(folder: Path, text: str, name: str = "suite.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


SHA = "0" * 64
GOOD = f'''[suite]
name = "mine"
version = "2"
baseline = "bm25"
depth = 50

[[task]]
id = "pair/procon"
measures = ["nDCG@10", "Duo@10"]
[task.files]
"procon/corpus.jsonl" = "{SHA}"

[[task]]
id = "lab/debates"
folder = "debates"
measures = ["nDCG@5", "rKL@5"]
depth = 20
baseline = "dense"
[task.files]
"corpus.jsonl" = "{SHA}"
'''


def test_the_built_in_suite_has_the_seven_sets_with_the_measures_their_papers_report():
    assert builtin_suites() == ["pair-bias-v1"]
    suite = load_suite("pair-bias-v1")
    assert (suite.name, suite.version, suite.baseline, suite.depth, suite.builtin) == ("pair-bias-v1", "1", "bm25", 100,
                                                                                      True)
    assert [t.id for t in suite.tasks] == PAIR_TASKS + MSMARCO_TASKS
    for task in suite.tasks:
        assert task.dataset == task.id and not task.folder and task.files, task.id
        assert all(measure_facts(m).measure == m for m in task.measures), task.id  # canonical strings
        facts = task.facts()
        assert not facts[task.overview[0]].bias and facts[task.overview[1]].bias, task.id
    from pairmeasures.datasets.msmarco_gender import audit_measures

    for task_id in MSMARCO_TASKS:  # the papers' measures, as the audit takes them by default
        assert list(suite.task(task_id).measures) == audit_measures(task_id)
        assert "msmarco-passage/collection.tsv" in suite.task(task_id).ir_datasets
    assert {"Duo@10", "rKL@10"} <= set(suite.task("pair/perspectrum").measures)
    assert suite.task("pair/grep-biasir").facts()["RaB@10"].direction == "signed"


def test_the_built_in_pins_are_the_sha256_of_the_shared_data(data_dir):
    suite = load_suite("pair-bias-v1")
    for task in suite.tasks:
        here = task_pins(task)  # the session's mirror of the shared data
        assert not here.missing and not here.problem and here.files == task.files, task.id
        assert here.matches == (task.id in PAIR_TASKS), task.id  # MS MARCO: ir_datasets' collection is not here
        assert here.pins() == task.pins()
    sample = data_dir / "wiki-balance-sample" / "corpus.jsonl"
    wiki = suite.task("pair/wiki-balance/synthetic").files["wiki-balance-synthetic/corpus.jsonl"]
    assert hashlib.sha256(sample.read_bytes()).hexdigest() == wiki


def test_a_users_suite_file_loads_like_a_built_in_one(tmp_path):
    path = write(tmp_path, GOOD)
    suite = load_suite(path)
    assert (suite.name, suite.version, suite.builtin, suite.source) == ("mine", "2", False, path)
    procon, folder = suite.tasks
    assert (procon.dataset, procon.depth, procon.baseline, procon.overview) == ("pair/procon", 50, "bm25",
                                                                                ("nDCG@10", "Duo@10"))
    assert folder.folder and folder.dataset == str(tmp_path / "debates") and (folder.depth, folder.baseline) == (20, "dense")
    assert procon.pins() == {"dataset_files": {"procon/corpus.jsonl": SHA}, "measures": ["nDCG@10", "Duo@10"],
                             "depth": 50}


@pytest.mark.parametrize("change, words", [
    (lambda t: t.replace("[suite]", "[suit]"), ["unknown top-level key 'suit'"]),
    (lambda t: t.replace('version = "2"', "version = [2]"), ["[suite] version must be a string"]),
    (lambda t: t.replace("depth = 50\n", ""), ["[suite]: missing 'depth'"]),
    (lambda t: t.replace('measures = ["nDCG@10", "Duo@10"]', 'measure = ["nDCG@10"]'),
     ["task 'pair/procon'", "unknown key 'measure'"]),
    (lambda t: t.replace('measures = ["nDCG@10", "Duo@10"]', ""), ["task 'pair/procon'", "'measures' must be a list"]),
    (lambda t: t.replace('"Duo@10"]', '"Dou@10"]'), ["task 'pair/procon'", "measure 'Dou@10' does not parse"]),
    (lambda t: t.replace('"Duo@10"]', '"nDCG@x"]'), ["task 'pair/procon'", "measure 'nDCG@x' does not parse"]),
    (lambda t: t.replace('id = "pair/procon"', 'id = "pair/procn"'),
     ["task 'pair/procn'", "no dataset 'pair/procn'", "did you mean 'pair/procon'"]),
    (lambda t: t.replace('"Duo@10"]', '"Duo@10", "Duo @10"]'), ["task 'pair/procon'", "listed twice"]),
    (lambda t: t.replace(f'"procon/corpus.jsonl" = "{SHA}"', '"procon/corpus.jsonl" = "abc"'),
     ["task 'pair/procon'", "is not a sha256"]),
    (lambda t: t.replace('id = "lab/debates"\n', ""), ["task 'debates'", "a folder task needs an id"]),
    (lambda t: t.replace('id = "lab/debates"', 'id = "lab/../x"'), ["task 'lab/../x'", "must be words"]),
    (lambda t: t.replace('id = "lab/debates"', 'id = "pair/procon"'), ["task 'pair/procon' appears twice"]),
    (lambda t: t.replace('measures = ["nDCG@10", "Duo@10"]', 'measures = ["nDCG@10", "Duo@10"]\noverview = ["R@100"]'),
     ["task 'pair/procon'", "overview names 'R@100'"]),
    (lambda t: t.replace('depth = 20', 'depth = 0'), ["task 'lab/debates'", "depth must be a whole number"]),
    (lambda t: t.replace(f'[task.files]\n"corpus.jsonl" = "{SHA}"\n', ""),
     ["task 'lab/debates'", "no [task.files]", "benchmark suites --describe"]),
    (lambda t: t + "[[task\n", ["not valid TOML"]),
])
def test_every_problem_of_a_suite_file_is_one_line_naming_the_file_and_the_task(tmp_path, change, words):
    path = write(tmp_path, change(GOOD))
    with pytest.raises(SuiteError) as error:
        load_suite(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"suite {path}"), message
    assert all(word in message for word in words), message


def test_a_suite_name_that_is_neither_built_in_nor_a_file_says_what_there_is(tmp_path):
    with pytest.raises(SuiteError, match="no suite 'pair-bias-v9': built-in suites are pair-bias-v1"):
        load_suite("pair-bias-v9")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_suite(tmp_path / "absent.toml")


def test_task_pins_report_what_is_here_missing_and_different_without_raising(tmp_path):
    folder = tmp_path / "debates"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")
    digest = hashlib.sha256((folder / "corpus.jsonl").read_bytes()).hexdigest()
    text = GOOD.replace(f'[task.files]\n"corpus.jsonl" = "{SHA}"\n',
                        f'[task.files]\n"corpus.jsonl" = "{digest}"\n"queries.jsonl" = "{SHA}"\n"qrels/test.tsv" = "{SHA}"\n')
    task = load_suite(write(tmp_path, text)).task("lab/debates")
    here = task_pins(task)
    assert here.missing == ("queries.jsonl",) and not here.available and not here.matches
    assert here.files["corpus.jsonl"] == digest and here.differing() == ["qrels/test.tsv"]
    unpinned = load_suite(write(tmp_path, GOOD.replace(f'[task.files]\n"corpus.jsonl" = "{SHA}"\n', ""), "open.toml"),
                          require_pins=False).task("lab/debates")
    assert set(task_pins(unpinned).files) == {"corpus.jsonl", "qrels/test.tsv"}  # what the folder holds, to pin
    gone = load_suite(write(tmp_path, GOOD.replace('folder = "debates"', 'folder = "nowhere"'), "gone.toml"))
    assert "does not exist" in task_pins(gone.task("lab/debates")).problem


def test_benchmark_suites_lists_and_describes_as_a_user_runs_it(tmp_path):
    path = write(tmp_path, GOOD)
    listed = cli("benchmark", "suites", str(path))
    assert listed.returncode == 0, listed.stderr
    assert "pair-bias-v1 version 1 (built in): 7 tasks" in listed.stdout and f"mine version 2 ({path})" in listed.stdout
    rows = json.loads(cli("benchmark", "suites", "--json").stdout)
    assert [row["suite"] for row in rows] == ["pair-bias-v1"]
    described = cli("benchmark", "suites", "--describe", str(path), "--data", str(tmp_path))
    assert described.returncode == 0, described.stderr
    assert "lab/debates" in described.stdout and "measures: nDCG@5 ↑, rKL@5 ↓" in described.stdout
    assert "data here: no: the folder" in described.stdout and "does not exist" in described.stdout
    assert "data here: no: missing procon/corpus.jsonl: put them into procon/ of a mirror" in described.stdout
    bad = cli("benchmark", "suites", "--describe", "pair-bias-v9")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert bad.stderr.startswith("pairmeasures benchmark suites: error: no suite 'pair-bias-v9'")


def test_describe_prints_the_pins_to_add_for_a_task_without_them(tmp_path):
    folder = tmp_path / "debates"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    path = write(tmp_path, GOOD.replace(f'[task.files]\n"corpus.jsonl" = "{SHA}"\n', ""))
    described = cli("benchmark", "suites", "--describe", str(path), "--json")
    task = json.loads(described.stdout)["tasks"][1]
    digest = hashlib.sha256(b'{"_id": "d1", "text": "x"}\n').hexdigest()
    assert task["data"] == "not pinned" and task["here"] == {"corpus.jsonl": digest}
    text = cli("benchmark", "suites", "--describe", str(path)).stdout
    assert f'  [task.files]\n  "corpus.jsonl" = "{digest}"' in text


def test_describe_the_built_in_suite_with_the_shared_data(data_dir):
    described = json.loads(cli("benchmark", "suites", "--describe", "pair-bias-v1", "--json").stdout)
    states = {t["id"]: (t["data"], t["advice"]) for t in described["tasks"]}
    assert all(states[t][0] == "yes" for t in PAIR_TASKS), states
    for task in MSMARCO_TASKS:  # the session's ir_datasets home is empty: offline, named, not a traceback
        state, advice = states[task]
        assert state == "no" and "ir_datasets lacks msmarco-passage/collection.tsv" in advice and "docs/msmarco.md" in advice


def test_the_packages_load_on_first_use_and_ship_their_files():
    code = ("import sys, pairmeasures as pm; assert 'pairmeasures.benchmark' not in sys.modules; "
            "assert pm.benchmark.load_suite('pair-bias-v1').tasks; assert callable(pm.leaderboard.build); "
            "assert 'scipy' not in sys.modules")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).returncode == 0
    import tomllib

    package_data = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["tool"][
        "setuptools"]["package-data"]["pairmeasures"]
    assert {"benchmark/suites/*.toml", "leaderboard/static/*"} <= set(package_data)
