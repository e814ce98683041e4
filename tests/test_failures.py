"""Every failure is one line (issue 31): commands run as a user runs them, with real files and signals.

- an error no command raises on purpose is one line naming what and where, its traceback behind ``--debug``
  (before or after the command) or ``PAIRMEASURES_DEBUG=1``;
- SIGTERM is taken as Ctrl-C: one line, the ``--out`` lock released, status 143;
- a user's ``module:attr`` stage that exits or raises names the system and the module;
- ``pm.bm25`` without the ``pisa`` extra names the extra;
- the MS MARCO sets without ir_datasets' files name the files, where they go and how to fetch them, without
  trying to connect; ``pairmeasures datasets`` does not call them available;
- a damaged corpus store, or one whose documents are not the corpus's, is rebuilt with one warning naming it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_audit import ROOT, folder, runs  # noqa: F401  (fixtures)
from test_replace import start, wait_for

from pairmeasures.sideinfo.memo import sha256_file

QS1, QS2, DL19 = ("pair/msmarco-passage/dev/gender-qs1", "pair/msmarco-passage/dev/gender-qs2",
                  "pair/msmarco-passage/trec-dl-2019/gender")


def pairmeasures(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def trec_files(where: Path) -> tuple[Path, Path]:
    (where / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (where / "run.txt").write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n")
    return where / "qrels.txt", where / "run.txt"


# --- one line, the traceback behind --debug ------------------------------------------------------------------------

def test_an_error_of_a_library_is_one_line_naming_it_and_debug_shows_the_traceback(tmp_path):
    """ir_measures asserts on ``Rprec@5`` (R-precision has no cut-off): that printed a traceback."""
    qrels, run = trec_files(tmp_path)
    done = pairmeasures("eval", str(qrels), str(run), "Rprec@5")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("pairmeasures eval: error: ir_measures refused the input: unsupported params found: "
                                  "['cutoff'] (an assertion at ir_measures/")
    assert done.stderr.rstrip().endswith("run again with --debug (or PAIRMEASURES_DEBUG=1) for the traceback")
    for args, env in ((("--debug", "eval", str(qrels), str(run), "Rprec@5"), {}),
                      (("eval", str(qrels), str(run), "Rprec@5", "--debug"), {}),
                      (("eval", str(qrels), str(run), "Rprec@5"), {"PAIRMEASURES_DEBUG": "1"})):
        shown = pairmeasures(*args, env=env)
        assert shown.returncode == 1 and shown.stderr.startswith("Traceback (most recent call last):"), args
        assert "AssertionError: unsupported params found" in shown.stderr
        assert shown.stderr.splitlines()[-1] == done.stderr.rstrip()  # the same line last


def test_a_type_error_of_an_evaluator_is_one_line(tmp_path):
    """pytrec_eval raises TypeError for ``AP(rel=0)``."""
    qrels, run = trec_files(tmp_path)
    done = pairmeasures("eval", str(qrels), str(run), "AP(rel=0)")
    assert done.returncode == 1 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert done.stderr.startswith("pairmeasures eval: error: TypeError: Argument relevance_level should be positive. "
                                  "(raised at pytrec_eval/")


def test_the_errors_commands_raise_on_purpose_keep_their_line_and_status(tmp_path):
    done = pairmeasures("eval", str(tmp_path / "none.txt"), str(tmp_path / "run.txt"), "nDCG@10")
    assert (done.returncode, done.stderr) == (2, f"pairmeasures eval: error: QRELS file "
                                                 f"{str(tmp_path / 'none.txt')!r} does not exist, and no ir_datasets "
                                                 "dataset has that id\n")


# --- SIGTERM -------------------------------------------------------------------------------------------------------

def test_sigterm_releases_the_out_lock_and_says_so_in_one_line(folder, runs, tmp_path):  # noqa: F811
    out = tmp_path / "audit"
    process = start(tmp_path, folder, runs[0], out)
    wait_for(tmp_path / "started", process)  # the user's system is running, the --out lock held
    lock = tmp_path / ".audit.lock"
    assert lock.is_file()
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 143, stderr
    assert stderr.splitlines()[-1] == "pairmeasures audit: terminated (SIGTERM)" and "Traceback" not in stderr
    assert not lock.exists() and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".audit")) == []


# --- a user's module:attr stage ------------------------------------------------------------------------------------

USER_SYSTEMS = {
    "script": "import sys\nprint('a script')\nsys.exit(0)\n\ndef build():\n    pass\n",
    "factory": "import pyterrier as pt\n\ndef build():\n    raise KeyError('index')\n",
    "ranking": ("import sys\nimport pyterrier as pt\n\nclass Exits(pt.Transformer):\n    def transform(self, inp):\n"
                "        sys.exit(3)\n\ndef build():\n    return Exits()\n"),
}


@pytest.mark.parametrize("kind,message", [
    ("script", "pairmeasures audit: error: system 'mine:build': module 'mine' called sys.exit(0) when imported (at "
               "{path}:3); a script's top-level code runs when it is imported: put it under if __name__ == "
               "'__main__':"),
    ("factory", "pairmeasures audit: error: system 'mine:build': module 'mine' raised KeyError: 'index' when build() "
                "was called (at {path}:4)"),
    ("ranking", "pairmeasures audit: error: system 'mine:build': module 'mine' called sys.exit(3) while ranking (at "
                "{path}:6)"),
])
def test_a_user_stage_that_exits_or_raises_names_the_system_and_module(folder, tmp_path, kind, message):  # noqa: F811
    package = tmp_path / "mine"
    package.mkdir()
    (package / "mine.py").write_text(USER_SYSTEMS[kind])
    out = tmp_path / "audit"
    done = pairmeasures("audit", "--dataset", str(folder), "--systems", "mine:build", "--measures", "nDCG@10",
                        "--resamples", "100", "--no-tradeoff", "--out", str(out),
                        env={"PAIRMEASURES_CACHE_DIR": str(tmp_path / "c"), "PYTHONPATH": f"{package}{os.pathsep}{ROOT}"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == message.format(path=package / "mine.py")
    assert not out.exists() and not (tmp_path / ".audit.lock").exists()


# --- pm.bm25 without the pisa extra --------------------------------------------------------------------------------

WITHOUT = """import importlib.abc, sys
blocked = set(sys.argv[1].split(","))
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Blocker())
"""


def test_bm25_without_the_pisa_extra_names_it(folder, tmp_path):  # noqa: F811
    code = WITHOUT + ("import pairmeasures as pm\ntry:\n    pm.bm25(sys.argv[2])\nexcept ModuleNotFoundError as exc:\n"
                      "    print(exc.name, exc, sep='|')\n")
    done = subprocess.run([sys.executable, "-c", code, "pyterrier_pisa", str(folder)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT),
                                            "PAIRMEASURES_CACHE_DIR": str(tmp_path / "c")})
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("pyterrier_pisa|BM25 (pm.bm25, pm.pisa_index, the bm25 stage) needs pyterrier-pisa: pip "
                           "install 'pairmeasures[pisa]'\n")
    assert not (tmp_path / "c" / "corpora").exists()  # before any work
    cli = WITHOUT + "from pairmeasures.apps.cli import main\nsys.exit(main(sys.argv[2:]))\n"
    audit = subprocess.run([sys.executable, "-c", cli, "pyterrier_pisa", "audit", "--dataset", str(folder),
                            "--systems", "bm25", "--measures", "nDCG@10", "--out", str(tmp_path / "audit")],
                           capture_output=True, text=True, timeout=600,
                           env={**os.environ, "PYTHONPATH": str(ROOT), "PAIRMEASURES_CACHE_DIR": str(tmp_path / "c")})
    assert (audit.returncode, audit.stderr.splitlines()[-1]) == (
        2, "pairmeasures audit: needs pyterrier-pisa: pip install 'pairmeasures[audit]'"), audit.stderr


# --- MS MARCO offline ----------------------------------------------------------------------------------------------

#: The command line in a process whose every network connection fails, saying so on stderr.
OFFLINE = """import socket, sys
def refuse(*args, **kwargs):
    sys.stderr.write("CONNECTION ATTEMPTED\\n")
    raise OSError("offline")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
from pairmeasures.apps.cli import main
sys.exit(main(sys.argv[1:]))
"""


def offline(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", OFFLINE, *args], capture_output=True, text=True, timeout=600, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "IR_DATASETS_HOME": str(home),
                               "PAIRMEASURES_CACHE_DIR": str(cwd / "cache")})


@pytest.mark.usefixtures("data_mirror")
def test_msmarco_sets_without_ir_datasets_files_name_them_and_never_connect(tmp_path):
    home = tmp_path / "ir_datasets"
    home.mkdir()
    qrels, run = trec_files(tmp_path)
    base = home / "msmarco-passage"
    collection = ("the collection (collectionandqueries.tar.gz, 1.06 GB)", "collectionandqueries.tar.gz")
    for command, dataset, lacks in (  # what each needs: an audit all of it, embed the documents, eval the qrels
            (["audit", "--dataset", QS2, "--systems", "bm25", "--out", str(tmp_path / "out")], QS2,
             [collection, ("the qrels (qrels.dev.tsv, 1.2 MB)", "dev/qrels")]),
            (["eval", QS1, str(run), "nDCG@10"], QS1, [("the qrels (qrels.dev.tsv, 1.2 MB)", "dev/qrels")]),
            (["embed", DL19], DL19, [collection]),
            (["audit", "--dataset", DL19, "--systems", "bm25", "--out", str(tmp_path / "out")], DL19,
             [collection, ("the qrels (2019qrels-pass.txt, 187 kB)", "trec-dl-2019/qrels")]),
            (["datasets", "export", QS2, "docs"], QS2, [collection])):
        done = offline(*command, home=home, cwd=tmp_path)
        assert done.returncode != 0 and "Traceback" not in done.stderr and "CONNECTION" not in done.stderr, done.stderr
        lines = done.stderr.splitlines()
        assert lines[0].startswith(f"pairmeasures {command[0]}: ") and lines[0].endswith(
            f"{dataset} is not available here: ir_datasets' msmarco-passage lacks "
            f"{' and '.join(what for what, _ in lacks)} in {base}/ ($IR_DATASETS_HOME), and pairmeasures does not "
            "download them."), done.stderr
        for _, target in lacks:
            assert any(line.startswith(f"    -> {base / target}") for line in lines), (target, lines)
        if collection in lacks:
            assert f"    -> {base}/collectionandqueries.tar.gz (ir_datasets extracts collection.tsv from it)" in lines
            assert "https://msmarco.z22.web.core.windows.net/msmarcoranking/collectionandqueries.tar.gz (1.06 GB, " \
                   "md5 31644046b18952c1386cd4564ba2ae69)" in done.stderr
            assert "'ir_datasets export msmarco-passage docs > /dev/null'" in lines[-1]
        assert lines[-1].endswith("here (docs/msmarco.md).")
    assert not (tmp_path / "out").exists()  # nothing written, nothing half-downloaded (ir_datasets makes folders)
    assert not [p for p in base.rglob("*") if not p.is_dir()]

    def available() -> dict:
        listed = offline("datasets", "--format", "json", home=home, cwd=tmp_path)
        assert listed.returncode == 0 and "CONNECTION" not in listed.stderr, listed.stderr
        return {row["dataset"]: row["available"] for row in json.loads(listed.stdout)}

    rows = available()
    for dataset in (QS1, QS2, DL19):
        assert rows[dataset].startswith("no: ir_datasets' msmarco-passage lacks the collection "
                                        "(collectionandqueries.tar.gz, 1.06 GB) and the qrels ("), rows[dataset]
    (base / "dev").mkdir(parents=True)
    (base / "collection.tsv").write_text("1\tone passage\n")  # not marked as ir_datasets' own: it would delete it
    (base / "dev" / "qrels").write_text("1 0 1 1\n")
    rows = available()
    assert rows[QS1] == rows[QS2] and rows[QS2].startswith("no: ir_datasets' msmarco-passage lacks the collection ")
    (base / "irds_version.txt").write_text("v2")
    rows = available()
    assert rows[QS2].startswith("yes; documents and qrels: ir_datasets msmarco-passage, here"), rows[QS2]
    assert rows[DL19].startswith("no: ir_datasets' msmarco-passage lacks the qrels (2019qrels-pass.txt, 187 kB)")


def test_a_missing_msmarco_collection_is_named_before_ir_datasets_is_asked(tmp_path, monkeypatch, data_mirror):
    """In this process, whose sockets refuse (tests/conftest.py): ir_datasets is never asked for a file it lacks."""
    import ir_datasets  # noqa: F401  (imported with the session's home: it keeps its paths)

    import pairmeasures as pm
    from pairmeasures.datasets import DatasetUnavailableError, open_corpus

    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))  # where pairmeasures looks, now empty
    for use in (lambda: open_corpus(QS2).qrels(), lambda: open_corpus(DL19).documents(["1"]),
                lambda: next(iter(pm.datasets.load(QS1).docs_iter())), lambda: list(pm.datasets.load(QS2).qrels_iter()),
                lambda: pm.datasets.load(QS2).docs_handler().docs_store()):
        with pytest.raises(DatasetUnavailableError, match="ir_datasets' msmarco-passage lacks the (collection|qrels)"):
            use()
    assert len(list(pm.datasets.load(QS2).queries_iter())) == 215  # the queries are the mirror's: no check


# --- the corpus store ----------------------------------------------------------------------------------------------

def store_of(cache: Path) -> Path:
    (store,) = (cache / "corpora").glob("*.sqlite")
    return store


def damage(how: str, store: Path, corpus: Path) -> str:
    """Damage the store (or the corpus behind its size and time) as a user's disk, tool or hand might; the problem
    the warning names."""
    if how == "truncated":
        with store.open("r+b") as handle:
            handle.truncate(store.stat().st_size // 2)
    elif how == "garbage":
        store.write_bytes(os.urandom(4096))
    elif how in ("rows deleted", "texts edited"):
        db = sqlite3.connect(store)
        db.execute("DELETE FROM docs WHERE id = 'a1'" if how == "rows deleted" else
                   "UPDATE docs SET text = 'Something else entirely.' WHERE id = 'a1'")
        db.commit()
        db.close()
    else:  # the corpus changed, keeping its size and time
        stat, data = corpus.stat(), corpus.read_bytes()
        corpus.write_bytes(data.replace(b"for everyone.", b"for his sons."))  # words of the gender list
        os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        assert corpus.stat().st_size == stat.st_size
        return "holds other documents than"
    return "is damaged (its bytes changed since it was built: cut short, overwritten or edited)"


@pytest.mark.parametrize("how", ["truncated", "garbage", "rows deleted", "texts edited", "corpus changed"])
def test_a_damaged_or_stale_corpus_store_is_rebuilt_naming_it(folder, tmp_path, monkeypatch, how):  # noqa: F811
    import warnings

    from pairmeasures.datasets.corpus import open_corpus
    from pairmeasures.sideinfo.memo import CacheWarning, clear_caches

    monkeypatch.setenv("PAIRMEASURES_CACHE_DIR", str(tmp_path / "c"))
    clear_caches()
    assert open_corpus(folder).texts(["a1"]) == ["Solar power is cheap and clean energy for everyone."]
    store = store_of(tmp_path / "c")
    problem = damage(how, store, folder / "corpus.jsonl")
    clear_caches()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        corpus = open_corpus(folder)
        ending = "his sons" if how == "corpus changed" else "everyone"
        assert corpus.texts(["a1"]) == [f"Solar power is cheap and clean energy for {ending}."]
        assert corpus.qrels().shape == (12, 3)
    (warning,) = [w for w in caught if w.category is CacheWarning]
    assert str(warning.message) == (f"the corpus store {store} {problem}" + ("" if problem.startswith("is") else
                                    f" {folder / 'corpus.jsonl'} (the file changed but kept its size and time, or the "
                                    "store was copied from another corpus)") + "; it is removed and built again from "
                                    f"{folder / 'corpus.jsonl'}")
    assert store_of(tmp_path / "c").is_file()  # one store, the new one


@pytest.mark.parametrize("how", ["truncated", "rows deleted", "corpus changed"])
def test_an_audit_after_its_store_was_damaged_heals_it_in_one_warning(folder, runs, tmp_path, how):  # noqa: F811
    cache = tmp_path / "c"
    args = ["audit", "--dataset", str(folder), "--systems", f"run:{runs[0]}", "--measures", "nDCG@10",
            "RaB(terms='gender-specific')@10", "--resamples", "100", "--no-tradeoff"]
    first = pairmeasures(*args, "--out", str(tmp_path / "first"), env={"PAIRMEASURES_CACHE_DIR": str(cache)})
    assert first.returncode == 0, first.stderr
    store = store_of(cache)
    problem = damage(how, store, folder / "corpus.jsonl")
    again = pairmeasures(*args, "--out", str(tmp_path / "again"), env={"PAIRMEASURES_CACHE_DIR": str(cache)})
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    (line,) = [line for line in again.stderr.splitlines() if "CacheWarning" in line]
    assert line.startswith(f"pairmeasures audit: CacheWarning: the corpus store {store} {problem}")
    assert line.endswith(f"it is removed and built again from {folder / 'corpus.jsonl'}")
    board = [json.loads((tmp_path / name / "leaderboard.json").read_text())["systems"] for name in ("first", "again")]
    files = [json.loads((tmp_path / name / "manifest.json").read_text())["dataset"]["files_sha256"]
             for name in ("first", "again")]
    if how == "corpus changed":  # the new texts are measured (a1 now names his sons), and recorded as they are
        assert board[0] != board[1] and files[1]["corpus.jsonl"] == sha256_file(folder / "corpus.jsonl")
    else:
        assert board[0] == board[1] and files[0] == files[1]
