"""Benchmark records in a results folder: written atomically under the folder's lock (two processes take turns),
the folder marked and a foreign one refused, the same (system, task) never overwritten silently and nothing deleted,
damaged, truncated and inconsistent records named and left out."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from synthetic_records import make_record

from pairmeasures.benchmark.records import (
    MARKER,
    RecordConflictError,
    read_records,
    record_folder_name,
    record_path,
    run_path,
    write_record,
)

MEASURES = ["nDCG@10", "Duo@10"]
IDS = [f"q{i}" for i in range(30)]


def record(system="bm25", task="pair/procon", seed=0, **kwargs):
    return make_record(system, task, MEASURES, IDS, seed=seed, **kwargs)


def files(folder: Path) -> set:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_folder_names_are_safe_and_never_shared():
    assert record_folder_name("bm25") == "bm25"
    assert record_folder_name("bm25>>dense").startswith("bm25-dense-") and len(record_folder_name("bm25>>dense")) == 19
    assert record_folder_name("bm25>>dense") != record_folder_name("bm25>dense")
    assert record_folder_name("../etc") != "..-etc" and not record_folder_name("../etc").startswith(".")
    assert record_folder_name("..").startswith("-") or not record_folder_name("..").startswith(".")
    assert record_path("R", "bm25>>dense", "pair/procon") == Path("R") / record_folder_name("bm25>>dense") / "pair/procon.json"


def test_a_record_round_trips_with_its_run_beside_it(tmp_path):
    data, run = record()
    path = write_record(tmp_path / "results", data, run)
    assert path == record_path(tmp_path / "results", "bm25", "pair/procon")
    assert gzip.decompress(run_path(path).read_bytes()).decode() == run
    assert json.loads((tmp_path / "results" / MARKER).read_text())["format"] == "pairmeasures-results"
    (found,), problems = read_records([tmp_path / "results"], check_runs=True)
    assert problems == [] and found.measures == data["measures"] and found.n == data["n"]
    assert list(found.query_ids) == IDS and found.data["run_sha256"] == json.loads(path.read_text())["run_sha256"]
    for measure, column in data["per_query"]["values"].items():  # stored with 15 significant digits
        written = np.array([np.nan if v is None else v for v in column])
        assert np.allclose(found.values[measure], written, rtol=5e-15, atol=0, equal_nan=True)
    assert all(len(repr(v).lstrip("0.").replace(".", "").split("e")[0]) <= 15
               for v in json.loads(path.read_text())["per_query"]["values"]["nDCG@10"])
    assert files(tmp_path / "results") == {MARKER, "bm25/pair/procon.json", "bm25/pair/procon.run.gz"}  # no lock left


def test_the_same_record_again_changes_nothing_and_a_different_one_is_refused_naming_both(tmp_path):
    folder = tmp_path / "results"
    data, run = record()
    path = write_record(folder, data, run)
    before = path.read_bytes()
    write_record(folder, {**data, "created": "2030-01-01T00:00:00Z"}, run)  # written again (resumed): unchanged
    assert path.read_bytes() == before
    other, other_run = record(seed=1)
    with pytest.raises(RecordConflictError) as error:
        write_record(folder, other, other_run)
    message = str(error.value)
    assert "\n" not in message and str(path) in message and "--replace" in message
    assert "already holds a different record of 'bm25' on 'pair/procon'" in message
    assert path.read_bytes() == before


def test_replace_keeps_the_earlier_record_and_run_beside_the_new_one(tmp_path):
    folder = tmp_path / "results"
    data, run = record()
    path = write_record(folder, data, run)
    old = path.read_bytes()
    other, other_run = record(seed=1)
    write_record(folder, other, other_run, replace=True)
    kept = sorted(p.name for p in path.parent.iterdir())
    assert len(kept) == 4 and kept[0] == "procon.json" and kept[1].startswith("procon.replaced-")
    aside = path.parent / kept[1]
    assert aside.read_bytes() == old and gzip.decompress((path.parent / kept[2]).read_bytes()).decode() == run
    (found,), problems = read_records([folder], check_runs=True)  # the kept copies are never read as records
    assert problems == [] and found.measures == other["measures"]


def test_a_folder_that_is_not_a_results_folder_is_refused(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("mine")
    data, run = record()
    with pytest.raises(ValueError, match=r"is not a results folder .* and is not empty \(it holds 'todo.txt'\)"):
        write_record(folder, data, run)
    assert files(folder) == {"todo.txt"}
    with pytest.raises(ValueError, match="is not a results folder"):
        read_records([folder])
    empty = tmp_path / "empty"
    empty.mkdir()
    write_record(empty, data, run)  # an empty folder becomes a results folder
    assert (empty / MARKER).is_file()


def test_invalid_records_are_refused_before_anything_is_written(tmp_path):
    data, run = record()
    data["measures"] = {**data["measures"], "nDCG@10": data["measures"]["nDCG@10"] + 0.01}
    with pytest.raises(ValueError, match="nDCG@10: the mean .* is not the mean of its per-query values"):
        write_record(tmp_path / "results", data, run)
    data, run = record()
    with pytest.raises(ValueError, match="its run_sha256 .* is not the sha256 of the run given"):
        write_record(tmp_path / "results", {**data, "run_sha256": "a" * 64}, run)
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").rglob("*.json"))


def damage(path: Path, how: str) -> None:
    text = path.read_text()
    if how == "truncated":
        path.write_text(text[: len(text) // 2])
    elif how == "garbage":
        path.write_bytes(b"\x00\xffnot json")
    elif how == "inconsistent":
        data = json.loads(text)
        data["n"]["Duo@10"] += 1
        path.write_text(json.dumps(data))
    elif how == "nan":
        path.write_text(text.replace('"format": 1', '"format": NaN'))
    elif how == "misplaced":
        data = json.loads(text)
        data["system"] = "dense"
        path.write_text(json.dumps(data))


@pytest.mark.parametrize("how, reason", [("truncated", "truncated or not JSON"), ("garbage", "not UTF-8"),
                                         ("inconsistent", "Duo@10: n is"), ("nan", "truncated or not JSON"),
                                         ("misplaced", "whose record belongs in dense/pair/procon.json")])
def test_damaged_records_are_named_and_left_out(tmp_path, how, reason):
    folder = tmp_path / "results"
    for system in ("bm25", "dense"):
        write_record(folder, *record(system, task="pair/grep-biasir"))
    path = write_record(folder, *record("bm25"))
    damage(path, how)
    found, problems = read_records([folder])
    assert sorted((r.system, r.task) for r in found) == [("bm25", "pair/grep-biasir"), ("dense", "pair/grep-biasir")]
    assert len(problems) == 1 and problems[0][0] == path and reason in problems[0][1], problems


def test_a_damaged_stored_run_is_named_when_runs_are_checked(tmp_path):
    folder = tmp_path / "results"
    path = write_record(folder, *record())
    run_path(path).write_bytes(gzip.compress(b"q0 Q0 other 0 1.0 x\n"))
    assert read_records([folder])[1] == []  # the board reads records only
    found, problems = read_records([folder], check_runs=True)
    assert found == [] and "has sha256" in problems[0][1]


def test_two_folders_with_different_records_of_one_system_and_task_name_both(tmp_path):
    first = write_record(tmp_path / "a", *record())
    write_record(tmp_path / "b", *record())  # the same record in both: read once
    assert len(read_records([tmp_path / "a", tmp_path / "b"])[0]) == 1
    second = write_record(tmp_path / "c", *record(seed=3))
    with pytest.raises(RecordConflictError) as error:
        read_records([tmp_path / "a", tmp_path / "c"])
    assert str(first) in str(error.value) and str(second) in str(error.value)


WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from synthetic_records import make_record
    from pairmeasures.benchmark.records import write_record
    folder, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(count):
        data, run = make_record(f"{{prefix}}-{{i}}", "pair/procon", ["nDCG@10", "Duo@10"], [f"q{{j}}" for j in range(50)],
                                seed=i)
        write_record(folder, data, run)
""")

HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from pairmeasures._exclusive import Lock
    lock = Lock(Path(sys.argv[1]) / "results", "results", "--results")
    lock.acquire()
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    lock.release()
""")


def test_concurrent_writers_take_turns_under_the_lock(tmp_path):
    folder = tmp_path / "results"
    tests = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER.format(tests=tests), str(folder), name, "15"], env=env,
                                stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    for writer in writers:
        assert writer.wait(timeout=300) == 0, writer.stderr.read() if writer.stderr else ""
    found, problems = read_records([folder], check_runs=True)
    assert problems == [] and len(found) == 30
    assert not [p for p in folder.rglob("*") if p.name.startswith(".") and p.name != MARKER]  # no temporary left


def test_a_writer_waits_for_the_lock_instead_of_failing(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), "2"], env=env, stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    start = time.monotonic()
    write_record(folder, *record())  # waits for the other process to let go
    assert holder.wait(timeout=60) == 0
    assert time.monotonic() - start > 0.5
    assert len(read_records([folder])[0]) == 1


def test_two_processes_writing_one_system_and_task_leave_one_whole_record_and_one_refusal(tmp_path):
    folder = tmp_path / "results"
    tests = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    code = WRITER.format(tests=tests).replace('f"{prefix}-{i}"', '"bm25"').replace("seed=i", "seed=int(prefix)")
    writers = [subprocess.Popen([sys.executable, "-c", code, str(folder), seed, "1"], env=env,
                                stderr=subprocess.PIPE, text=True) for seed in ("1", "2")]
    codes = [writer.wait(timeout=300) for writer in writers]
    errors = [writer.stderr.read() for writer in writers if writer.stderr]
    assert sorted(codes) == [0, 1], errors
    assert any("RecordConflictError" in e and "already holds a different record of 'bm25'" in e for e in errors)
    found, problems = read_records([folder], check_runs=True)
    assert problems == [] and len(found) == 1
