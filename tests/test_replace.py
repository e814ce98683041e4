"""A folder a user owns is never deleted (pairmeasures._atomic's policy, docs/audit.md "Replacing --out"): the audit
run as a user runs it, with real processes and signals, against folders that appear, foreign folders, symbolic
links, a second writer and Ctrl-C while an earlier audit is being replaced; and the same policy for single files
and for modes.

The audits run a user's system (``slowsys:build``, a module:attr stage written here) that notes when the work has
begun and, when asked, waits for a file before it returns: that is how a test acts "while the audit computes"."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ctrl_c_reaches_it
from test_audit import ROOT, audit, folder, runs  # noqa: F401  (fixtures)

from pairmeasures._atomic import MARKER, output_file

SLOW_SYSTEM = '''
import os, time
from pathlib import Path

import pandas as pd
import pyterrier as pt


def build():
    Path(os.environ["SLOW_STARTED"]).touch()
    go, deadline = os.environ.get("SLOW_GO"), time.monotonic() + 300
    while go and not Path(go).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    run = pd.read_csv(os.environ["SLOW_RUN"], sep=" ", names=["qid", "Q0", "docno", "rank", "score", "tag"], dtype=str)
    run["score"], run["rank"] = run["score"].astype(float), run["rank"].astype(int)
    return pt.Transformer.from_df(run[["qid", "docno", "score", "rank"]], uniform=False)
'''


def start(tmp_path: Path, dataset: Path, run: Path, out: Path, *extra: str, wait: bool = True) -> subprocess.Popen:
    """``pairmeasures audit`` of the slow system (over ``run``) into ``out``, started; with ``wait`` it waits for
    ``tmp_path/go`` once its work has begun (``tmp_path/started``)."""
    package = tmp_path / "slow"
    package.mkdir(exist_ok=True)
    (package / "slowsys.py").write_text(SLOW_SYSTEM)
    env = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(tmp_path / "c"), "PYTHONPATH": f"{package}{os.pathsep}{ROOT}",
           "SLOW_STARTED": str(tmp_path / "started"), "SLOW_RUN": str(run)}
    if wait:
        env["SLOW_GO"] = str(tmp_path / "go")
    return subprocess.Popen([sys.executable, "-m", "pairmeasures", "audit", "--dataset", str(dataset), "--systems",
                             "slowsys:build", "--names", "slow", "--measures", "nDCG@10", "rKL@10", "--resamples", "100",
                             "--no-tradeoff", "--out", str(out), *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(path: Path, process: subprocess.Popen, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, f"{path} did not appear within {seconds} s"
        time.sleep(0.02)


def marker_id(out: Path) -> str:
    return json.loads((out / MARKER).read_text())["id"]


def leftovers(tmp_path: Path, name: str) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(f".{name}") or p.name.startswith(f"{name}-"))


def test_a_folder_that_appears_at_out_while_the_audit_computes_is_left_alone(folder, runs, tmp_path):  # noqa: F811
    out = tmp_path / "audit"
    process = start(tmp_path, folder, runs[0], out)
    wait_for(tmp_path / "started", process)  # --out was checked: it did not exist then
    out.mkdir()
    (out / "thesis.tex").write_text("months of work")
    (tmp_path / "go").touch()
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 2 and "Traceback" not in stderr, stderr
    assert f"--out {str(out)!r} appeared while pairmeasures audit ran" in stderr
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"] and (out / "thesis.tex").read_text() == "months of work"
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("audit-")]  # the finished audit is not thrown away
    assert len(kept) == 1 and f"written to {str(kept[0])!r} instead" in stderr
    assert json.loads((kept[0] / "leaderboard.json").read_text())["systems"].keys() == {"slow"}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".audit")] == []


def test_two_audits_on_the_same_new_out_one_fails_at_once_naming_the_other(folder, runs, tmp_path):  # noqa: F811
    out = tmp_path / "audit"
    first = start(tmp_path, folder, runs[0], out)
    wait_for(tmp_path / "started", first)
    second = audit("--dataset", str(folder), "--systems", f"run:{runs[1]}", "--names", "second", "--measures",
                   "nDCG@10", "--resamples", "100", "--no-tradeoff", "--out", str(out), cache=tmp_path / "c2",
                   check=False)
    assert first.poll() is None  # the second one gave up while the first was still at work
    assert second.returncode == 2 and "Traceback" not in second.stderr, second.stderr
    assert f"--out {str(out)!r} is being written by another pairmeasures process (pid {first.pid} on " in second.stderr
    assert "wait for it to finish, or choose another --out" in second.stderr and not out.exists()
    (tmp_path / "go").touch()
    _, stderr = first.communicate(timeout=600)
    assert first.returncode == 0, stderr
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["systems"].keys() == {"slow"} and (out / "report.html").is_file() and marker_id(out)
    assert leftovers(tmp_path, "audit") == []  # the lock file goes with the run


def test_force_replaces_only_a_folder_an_audit_wrote(folder, runs, tmp_path):  # noqa: F811
    args = ("--dataset", str(folder), "--systems", f"run:{runs[0]}", "--measures", "nDCG@10", "--resamples", "100",
            "--no-tradeoff", "--force")
    app = tmp_path / "webapp"  # a web app's folder: its manifest.json is not an audit's
    app.mkdir()
    (app / "manifest.json").write_text('{"name": "My app", "start_url": "/", "icons": []}')
    (app / "index.html").write_text("<html></html>")
    done = audit(*args, "--out", str(app), cache=tmp_path / "c", check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"--out {str(app)!r} exists and is not an audit written by pairmeasures audit: choose another --out" \
        in done.stderr
    assert sorted(p.name for p in app.iterdir()) == ["index.html", "manifest.json"]

    earlier = tmp_path / "earlier"  # an audit written before markers existed: its manifest has an audit's keys
    audit(*args, "--out", str(earlier), cache=tmp_path / "c")
    first = marker_id(earlier)
    (earlier / MARKER).unlink()
    audit(*args, "--out", str(earlier), cache=tmp_path / "c")
    assert marker_id(earlier) != first and (earlier / "leaderboard.json").is_file()

    model = tmp_path / "model"  # another command's output is not an audit either
    model.mkdir()
    (model / MARKER).write_text(json.dumps({"marker": "pairmeasures-output-marker", "version": 1, "written_by":
                                            "train-ibbr", "format": "pairmeasures-train-ibbr", "id": "0" * 32}))
    done = audit(*args, "--out", str(model), cache=tmp_path / "c", check=False)
    assert done.returncode == 2 and "is not an audit written by pairmeasures audit" in done.stderr
    assert [p.name for p in model.iterdir()] == [MARKER]


def test_a_symbolic_link_out_is_refused_before_any_work(folder, runs, tmp_path):  # noqa: F811
    real = tmp_path / "real"
    audit("--dataset", str(folder), "--systems", f"run:{runs[0]}", "--measures", "nDCG@10", "--resamples", "100",
          "--no-tradeoff", "--out", str(real), cache=tmp_path / "c")
    before = sorted(p.name for p in real.iterdir())
    link = tmp_path / "link"
    link.symlink_to(real)
    process = start(tmp_path, folder, runs[0], link, "--force", wait=False)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 2 and "Traceback" not in stderr, stderr
    assert f"--out {str(link)!r} is a symbolic link (to {str(real)!r}): name the folder itself" in stderr
    assert not (tmp_path / "started").exists()  # refused before the systems ran
    assert link.is_symlink() and sorted(p.name for p in real.iterdir()) == before


def test_ctrl_c_while_an_earlier_audit_is_replaced_leaves_one_whole_and_says_what_it_left(folder, runs, tmp_path):  # noqa: F811,E501
    out = tmp_path / "audit"
    args = ("--dataset", str(folder), "--systems", f"run:{runs[0]}", "--measures", "nDCG@10", "rKL@10",
            "--resamples", "100", "--no-tradeoff", "--out", str(out))
    audit(*args, cache=tmp_path / "c")
    earlier = (out / "manifest.json").read_bytes()
    for block in range(100):  # a large earlier audit: deleting it takes a moment, long enough to press Ctrl-C in
        (out / "bulk" / f"{block:03d}").mkdir(parents=True)
        for number in range(400):
            (out / "bulk" / f"{block:03d}" / str(number)).touch()
    process = subprocess.Popen([sys.executable, "-m", "pairmeasures", "audit", *args, "--force"],
                               env={**os.environ, "PAIRMEASURES_CACHE_DIR": str(tmp_path / "c"), "PYTHONPATH": str(ROOT)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=ctrl_c_reaches_it)
    bulk, deadline = out / "bulk", time.monotonic() + 300
    while bulk.is_dir() and len(os.listdir(bulk)) == 100:  # until the earlier audit starts to go
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1]
        time.sleep(0.002)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    assert not bulk.exists() and (out / "manifest.json").read_bytes() != earlier  # the new audit, whole
    assert (out / "leaderboard.json").is_file() and (out / "report.html").is_file() and marker_id(out)
    left = leftovers(tmp_path, "audit")
    assert all(name.startswith(".audit.") and name.endswith(".old") for name in left)
    assert "pairmeasures audit: interrupted: the new audit is whole in" in stderr
    assert f"delete it, or the next run on --out {str(out)!r} removes it" in stderr
    assert all(name in stderr for name in left)
    audit(*args, "--force", cache=tmp_path / "c")
    assert leftovers(tmp_path, "audit") == [] and (out / "leaderboard.json").is_file()


def test_a_second_writer_of_a_file_is_refused_and_a_file_that_appears_is_kept(tmp_path):
    table = tmp_path / "t.csv"
    with output_file(table, force=False, option="--per-query", suffixes=(".csv",)) as claim:
        with pytest.raises(ValueError, match=rf"^--per-query '.*t\.csv' is being written by another pairmeasures "
                                             rf"process \(pid {os.getpid()} on "):
            with output_file(table, force=False, option="--per-query", suffixes=(".csv",)):
                pass
        table.write_text("the user's own")  # appears while the command computes
        with pytest.raises(ValueError, match=r"appeared while this command ran .*: it is left as it is, and this file "
                                             r"was written to '.*t-[0-9a-f]{8}\.csv' instead"):
            claim.write("computed\n")
    assert table.read_text() == "the user's own"
    assert [p.read_text() for p in tmp_path.glob("t-*.csv")] == ["computed\n"]
    link = tmp_path / "link.csv"
    link.symlink_to(table)
    with pytest.raises(ValueError, match=r"^--out '.*link\.csv' is a symbolic link \(to '.*t\.csv'\): name the file "
                                         "itself"):
        with output_file(link, force=True, suffixes=(".csv",)):
            pass
    with output_file(table, force=True, suffixes=(".csv",)) as claim:
        claim.write("replaced\n")
    assert table.read_text() == "replaced\n" and not (tmp_path / ".t.csv.lock").exists()


def test_the_export_is_no_more_readable_than_the_study_database(tmp_path):
    from pairmeasures.apps.seme.store import Store

    database = tmp_path / "study.db"
    Store(database, cells=[("q0", "max", 0.5)])
    assert stat.S_IMODE(database.stat().st_mode) == 0o600
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for mode, expected, extra in ((0o600, 0o600, ()), (0o640, 0o640, ("--force",))):
        database.chmod(mode)
        done = subprocess.run([sys.executable, "-m", "pairmeasures", "seme", "export", "--db", str(database), "--out",
                               str(tmp_path / "responses.csv"), *extra], capture_output=True, text=True, timeout=120,
                              env=env)
        assert done.returncode == 0, done.stderr
        assert stat.S_IMODE((tmp_path / "responses.csv").stat().st_mode) == expected
