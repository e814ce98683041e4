"""Every failure is one line (issue 31): commands run as a user runs them, with real files and signals.

- an error no command raises on purpose is one line naming what and where, its traceback behind ``--debug``
  (before or after the command) or ``PAIRMEASURES_DEBUG=1``;
- SIGTERM is taken as Ctrl-C: one line, the ``--out`` lock released, status 143;
- a user's ``module:attr`` stage that exits or raises names the system and the module;
- ``pm.bm25`` without the ``pisa`` extra names the extra;
- the MS MARCO sets without ir_datasets' files and without network (the download ir_datasets tries fails) name
  the files, where they go, why the download failed and how to fetch them; ``pairmeasures datasets`` says they
  come after download (test_msmarco.py: the download itself, from a stand-in network);
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

from pairmeasures.io.memo import sha256_file

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
    """pytrec_eval raises TypeError for ``AP(rel=0)`` (ir_measures passes the parameter through): that printed a
    traceback; ``--debug`` (before or after the command) and PAIRMEASURES_DEBUG=1 still show it."""
    qrels, run = trec_files(tmp_path)
    done = pairmeasures("eval", str(qrels), str(run), "AP(rel=0)")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("pairmeasures eval: error: TypeError: Argument relevance_level should be positive. "
                                  "(raised at pytrec_eval/")
    assert "run again with --debug (or PAIRMEASURES_DEBUG=1) for the traceback" in done.stderr
    for args, env in ((("--debug", "eval", str(qrels), str(run), "AP(rel=0)"), {}),
                      (("eval", str(qrels), str(run), "AP(rel=0)", "--debug"), {}),
                      (("eval", str(qrels), str(run), "AP(rel=0)"), {"PAIRMEASURES_DEBUG": "1"})):
        shown = pairmeasures(*args, env=env)
        assert shown.returncode == 1 and shown.stderr.startswith("Traceback (most recent call last):"), args
        assert "TypeError: Argument relevance_level should be positive" in shown.stderr
        assert shown.stderr.splitlines()[-1] == done.stderr.rstrip()  # the same line last


def test_a_parameter_a_measure_does_not_have_is_the_commands_own_line(tmp_path):
    """``Rprec@5`` (R-precision has no cut-off) made ir_measures assert; the command's parser names it first."""
    qrels, run = trec_files(tmp_path)
    done = pairmeasures("eval", str(qrels), str(run), "Rprec@5")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("pairmeasures eval: error: measure 'Rprec@5': Rprec has no parameter 'cutoff' "
                           "(its parameters: rel, judged_only)\n")


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


# --- MS MARCO without network --------------------------------------------------------------------------------------

#: Run in a process without network (``NETWORK``: every DNS lookup fails (``dns``), every connection is refused
#: (``refused``) or times out (``timeout``); each attempt said on stderr), before ``sys.argv[1]`` (a Python file) runs
#: with ``sys.argv[2:]``. With ``STAND_IN`` (a JSON file: URL -> ``{"path", "md5", "pinned_md5"}``), ir_datasets'
#: downloader is served those files instead (a stand-in network: no socket opens, each URL served said on stderr),
#: and a download ir_datasets checks against ``pinned_md5`` is checked against the stand-in's ``md5`` (null: against
#: the pinned one, which the stand-in's bytes then fail).
NO_NETWORK = """import json, os, runpy, socket, sys
mode = os.environ.get("NETWORK", "dns")
def attempt(*args, **kwargs):
    sys.stderr.write("NETWORK ATTEMPTED\\n")
    if mode == "dns":
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    if mode == "timeout":
        raise socket.timeout("timed out")
    raise ConnectionRefusedError(111, "Connection refused")
def resolve(host, port, *args, **kwargs):
    if mode == "dns":
        attempt()
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("192.0.2.1", port))]
socket.getaddrinfo = resolve
socket.socket.connect = socket.socket.connect_ex = socket.create_connection = attempt
if os.environ.get("STAND_IN"):
    import contextlib
    from ir_datasets import util
    from ir_datasets.util.download import RequestsDownload
    with open(os.environ["STAND_IN"]) as handle:
        served = json.load(handle)
    @contextlib.contextmanager
    def stream(self):
        if self.url not in served:
            attempt()
        sys.stderr.write(f"SERVED {self.url}\\n")
        with open(served[self.url]["path"], "rb") as handle:
            yield handle
    RequestsDownload.stream = stream
    stand_ins = {entry["pinned_md5"]: entry["md5"] for entry in served.values() if entry["md5"]}
    verified = util.HashStream
    util.HashStream = lambda stream, expected, algo="md5": verified(stream, stand_ins.get(expected, expected), algo)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

#: The command line, as ``python -m pairmeasures`` runs it.
COMMAND_LINE = "import sys\nfrom pairmeasures.apps.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def without_network(*args: str, home: Path, cwd: Path, network: str = "dns", stand_in: dict | None = None,
                    script: str = COMMAND_LINE) -> subprocess.CompletedProcess:
    """``script`` (default: the command line) with ``args``, in a process without network (:data:`NO_NETWORK`) whose
    ir_datasets home is ``home``; ``stand_in``: URL -> ``{"path", "md5", "pinned_md5"}`` served instead."""
    program = cwd / "program.py"
    program.write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "IR_DATASETS_HOME": str(home), "NETWORK": network,
           "PAIRMEASURES_CACHE_DIR": str(cwd / "cache"),
           "IR_DATASETS_SKIP_DISK_FREE": "true"}  # ir_datasets wants the real collection's 1.06 GB free
    if stand_in is not None:
        (cwd / "stand-in.json").write_text(json.dumps(stand_in))
        env["STAND_IN"] = str(cwd / "stand-in.json")
    return subprocess.run([sys.executable, "-c", NO_NETWORK, str(program), *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=env)


def downloads_json() -> dict:
    """ir_datasets' facts of msmarco-passage's downloads (URL, size, md5, cache path)."""
    import ir_datasets

    return json.loads((Path(ir_datasets.__file__).parent / "etc" / "downloads.json").read_text())["msmarco-passage"]


COLLECTION = "the collection (collectionandqueries.tar.gz, 1.06 GB)"
DEV_QRELS, DL19_QRELS = "the qrels (qrels.dev.tsv, 1.2 MB)", "the qrels (2019qrels-pass.txt, 187 kB)"
MSMARCO_HOST, NIST_HOST = "msmarco.z22.web.core.windows.net", "trec.nist.gov"


@pytest.mark.usefixtures("data_mirror")
def test_msmarco_sets_offline_try_the_download_then_name_the_files_and_why_it_failed(tmp_path):
    home = tmp_path / "ir_datasets"
    home.mkdir()
    qrels, run = trec_files(tmp_path)
    base = home / "msmarco-passage"
    facts = downloads_json()
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"not the collection")
    damaged = {facts["collectionandqueries"]["url"]: {"path": str(garbage), "md5": None,
                                                      "pinned_md5": facts["collectionandqueries"]["expected_md5"]}}
    cases = (  # what each command needs (an audit all of it, embed the documents, eval the qrels), and each failure
        (["audit", "--dataset", QS2, "--systems", "bm25", "--out", str(tmp_path / "out")], QS2, [COLLECTION, DEV_QRELS],
         "dns", f"ConnectionError: Failed to resolve '{MSMARCO_HOST}' ([Errno -3] Temporary failure in name resolution)"),
        (["eval", QS1, str(run), "nDCG@10"], QS1, [DEV_QRELS],
         "refused", "ConnectionError: Failed to establish a new connection: [Errno 111] Connection refused"),
        (["embed", DL19], DL19, [COLLECTION], "timeout", f"ConnectTimeout: Connection to {MSMARCO_HOST} timed out."),
        (["eval", DL19, str(run), "nDCG@10"], DL19, [DL19_QRELS],  # two mirrors, NIST's first
         "dns", f"ConnectionError: Failed to resolve '{NIST_HOST}' ([Errno -3] Temporary failure in name resolution)"),
        (["datasets", "export", QS2, "docs"], QS2, [COLLECTION],  # served, but not the file ir_datasets pins
         damaged, "HashVerificationError: Expected md5 hash to be 31644046b18952c1386cd4564ba2ae69 but got "))
    for command, dataset, lacks, network, why in cases:
        served = network if isinstance(network, dict) else None
        done = without_network(*command, home=home, cwd=tmp_path, network="dns" if served else network,
                               stand_in=served)
        lines = done.stderr.splitlines()
        said = f"pairmeasures {command[0]}: error: "  # embed too: every command fails the same way
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert lines[0] == (f"pairmeasures: {dataset}: downloading ir_datasets' msmarco-passage files, "
                            f"{' and '.join(lacks)}, into {base}/ (once: later uses read them there)"), done.stderr
        tried = "SERVED " if served else "NETWORK ATTEMPTED"
        assert any(line.startswith(tried) for line in lines), done.stderr  # ir_datasets did try
        assert not [line for line in lines if "download error" in line or "Download failed" in line]  # said once:
        (error,) = [n for n, line in enumerate(lines) if line.startswith(said)]
        first = (f"{said}{dataset} is not available here: ir_datasets' msmarco-passage "
                 f"lacks {' and '.join(lacks)} in {base}/ ($IR_DATASETS_HOME), and downloading them failed ({why}")
        assert lines[error].startswith(first), (lines[error], first)
        assert lines[error].endswith("); run it again with network access, or fetch them elsewhere and put them there "
                                     "(below; docs/msmarco.md)."), lines[error]
        details = lines[error + 1:]
        assert details[0] == "Fetch them where there is network and put them there:", details
        for what in lacks:
            download = {COLLECTION: "collectionandqueries", DEV_QRELS: "dev/qrels", DL19_QRELS: "trec-dl-2019/qrels"}[what]
            size = what.rsplit(", ", 1)[1].rstrip(")")
            assert f"  {facts[download]['url']} ({size}, md5 {facts[download]['expected_md5']})" in details, details
            assert any(line.startswith(f"    -> {base / facts[download]['cache_path']}") for line in details), details
        if COLLECTION in lacks:
            assert f"    -> {base}/collectionandqueries.tar.gz (ir_datasets extracts collection.tsv from it)" in details
            assert "'ir_datasets export msmarco-passage docs > /dev/null'" in details[-1]
        assert details[-1].endswith("here (docs/msmarco.md).")
    assert not (tmp_path / "out").exists()  # nothing written, nothing half-downloaded: only ir_datasets' own mark
    written = {p.relative_to(home).as_posix() for p in home.rglob("*") if not p.is_dir()}
    assert {p for p in written if not p.startswith("pair/")} <= {"msmarco-passage/irds_version.txt"}, written
    debug = without_network("--debug", *cases[1][0], home=home, cwd=tmp_path, network="refused")
    assert debug.returncode == 2 and "requests.exceptions.ConnectionError: HTTPSConnectionPool(" in debug.stderr
    assert "The above exception was the direct cause of the following exception:" in debug.stderr  # raised from it

    def available() -> dict:
        listed = without_network("datasets", "--format", "json", home=home, cwd=tmp_path)
        assert listed.returncode == 0 and "NETWORK" not in listed.stderr, listed.stderr
        return {row["dataset"]: row["available"] for row in json.loads(listed.stdout)}

    first_use = "after download; documents and qrels: ir_datasets msmarco-passage, downloaded on first use: "
    rows = available()
    assert rows[QS1] == rows[QS2] == f"{first_use}{COLLECTION} and {DEV_QRELS}", rows[QS2]
    assert rows[DL19] == f"{first_use}{COLLECTION} and {DL19_QRELS}", rows[DL19]
    (base / "dev").mkdir(parents=True, exist_ok=True)  # ir_datasets made the folders it downloads into
    (base / "dev" / "qrels").write_text("1 0 1 1\n")
    (base / "irds_version.txt").unlink(missing_ok=True)
    (base / "collection.tsv").write_text("1\tone passage\n")  # not marked as ir_datasets' own: it would delete it
    rows = available()
    unmarked = (f"{base}/collection.tsv is there, but {base}/irds_version.txt does not say 'v2': ir_datasets would "
                "delete it and extract it again")
    assert rows[QS1] == rows[QS2] == rows[DL19] == f"no: {unmarked} (docs/msmarco.md)", rows[QS2]
    refused = without_network("datasets", "export", QS2, "docs", home=home, cwd=tmp_path)
    assert refused.returncode == 2 and "NETWORK" not in refused.stderr, refused.stderr
    assert refused.stderr.startswith(f"pairmeasures datasets: error: {QS2} is not available here: {unmarked}, so "
                                     "pairmeasures does not hand it to ir_datasets: move it away"), refused.stderr
    assert (base / "collection.tsv").read_text() == "1\tone passage\n" and not (base / "irds_version.txt").exists()
    (base / "irds_version.txt").write_text("v2")
    rows = available()
    assert rows[QS2] == "yes; documents and qrels: ir_datasets msmarco-passage, here", rows[QS2]
    assert rows[DL19] == f"{first_use}{DL19_QRELS}", rows[DL19]


LIBRARY_USES = """import pairmeasures as pm
from pairmeasures.datasets import DatasetUnavailableError, open_corpus
QS1, QS2, DL19 = {sets!r}
for use in (lambda: open_corpus(QS2).qrels(), lambda: open_corpus(DL19).documents(["1"]),
            lambda: next(iter(pm.datasets.load(QS1).docs_iter())), lambda: list(pm.datasets.load(QS2).qrels_iter()),
            lambda: pm.datasets.load(QS2).docs_handler().docs_store()):
    try:
        use()
    except DatasetUnavailableError as error:
        print(type(error.__cause__).__name__, str(error).splitlines()[0], sep=" | ")
print(len(list(pm.datasets.load(QS2).queries_iter())))
"""


@pytest.mark.usefixtures("data_mirror")
def test_the_library_offline_raises_the_same_error_from_the_download_error(tmp_path):
    home = tmp_path / "ir_datasets"
    done = without_network(home=home, cwd=tmp_path, script=LIBRARY_USES.format(sets=(QS1, QS2, DL19)))
    assert done.returncode == 0, done.stderr
    *failed, queries = done.stdout.splitlines()
    assert len(failed) == 5 and queries == "215", done.stdout  # the queries are the mirror's: nothing to download
    for line, lacks in zip(failed, ([COLLECTION, DEV_QRELS], [COLLECTION], [COLLECTION], [DEV_QRELS], [COLLECTION])):
        cause, message = line.split(" | ")
        assert cause == "ConnectionError" and f"lacks {' and '.join(lacks)} in " in message, line
        assert "and downloading them failed (ConnectionError: Failed to resolve" in message, line
    assert done.stderr.count("pairmeasures: pair/msmarco-passage/") == 5  # each use tried again, saying so


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
    from pairmeasures.io.memo import CacheWarning, clear_caches

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
