"""Every kind of failure that ``apps/failures.py`` explains, made to happen for real (issue 31).

Through the commands, as a user meets them: a damaged reply cache (SQLite), a download that fails offline
(requests' ConnectionError), a damaged weight file given as ``--model`` or ``--base`` (safetensors'
SafetensorError, torch's UnpicklingError), a damaged parsed copy of a dataset (a pickle that fails: parsed again)
and a user's stage module that Python cannot parse (SyntaxError): each ends in one line that names the file or URL
and what to do, exit status not 0, the traceback only with ``--debug`` or ``PAIRMEASURES_DEBUG=1``.

Where no command lets an exception of that kind through any more (each is caught where it happens, and named there),
:func:`pairmeasures.apps.failures.failure` is given the real exception: what a command would print, should one
reach it.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from test_audit import ROOT, folder  # noqa: F401  (fixture)
from test_failures import without_network

DEBUG = "run again with --debug (or PAIRMEASURES_DEBUG=1) for the traceback"


def pairmeasures(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2",
                                                "TOKENIZERS_PARALLELISM": "false", **(env or {})})


def error_line(done: subprocess.CompletedProcess, command: str, status: int) -> str:
    """The one error line of a failed command: the given status, no traceback, the line last on stderr."""
    assert done.returncode == status, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr[-3000:]
    line = done.stderr.rstrip("\n").splitlines()[-1]
    assert line.startswith(f"pairmeasures {command}: error: "), done.stderr[-3000:]
    return line


def with_debug(args: tuple, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    """The same command with PAIRMEASURES_DEBUG=1: the traceback, then the same line."""
    return pairmeasures(*args, env={**(env or {}), "PAIRMEASURES_DEBUG": "1"}, **kwargs)


# --- SQLite: a damaged reply cache -----------------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["garbage", "cut short"])
def test_a_damaged_reply_cache_is_one_line_naming_the_file(tmp_path, damage):
    """generate-fitset's reply cache (``--cache FILE``) is not one of the caches that heal themselves: one line names
    the file and says to move it aside, before any request."""
    pytest.importorskip("openai")
    cache = tmp_path / "replies.sqlite"
    if damage == "garbage":
        cache.write_bytes(b"not a database, but notes a user kept here\n" * 200)
    else:
        db = sqlite3.connect(cache)
        db.execute("CREATE TABLE completions (key TEXT PRIMARY KEY, request TEXT NOT NULL, content TEXT NOT NULL, "
                   "finish_reason TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, created REAL NOT NULL)")
        db.executemany("INSERT INTO completions VALUES (?, ?, ?, ?, ?, ?, ?)",
                       [(str(i), "r" * 500, "c" * 500, "stop", 1, 1, 0.0) for i in range(200)])
        db.commit()
        db.close()
        with cache.open("r+b") as handle:  # the header is intact, the pages it points to are gone
            handle.truncate(cache.stat().st_size // 3)
    (tmp_path / "queries.tsv").write_text("q1\tShould zoos exist?\n")
    args = ("generate-fitset", "--queries", str(tmp_path / "queries.tsv"), "--out", str(tmp_path / "fitset"),
            "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--cache", str(cache), "--no-progress")
    line = error_line(pairmeasures(*args), "generate-fitset", 2)
    assert line.startswith(f"pairmeasures generate-fitset: error: the reply cache {cache} is damaged or is not an "
                           "SQLite database (SQLite: "), line
    assert line.endswith("move it aside or delete it (it holds only replies already received, which are asked for "
                         "again), or give another --cache, or --no-cache"), line
    assert cache.is_file() and not (tmp_path / "fitset").exists()  # the user's file is left as it is
    shown = with_debug(args)
    assert shown.returncode == 2 and shown.stderr.startswith("Traceback (most recent call last):")
    assert "sqlite3.DatabaseError: " in shown.stderr and shown.stderr.splitlines()[-1] == line


# --- requests: a download that fails offline ------------------------------------------------------------------------

def test_a_download_that_fails_offline_names_the_url(tmp_path):
    """An ir_datasets id whose files are not here (ANTIQUE's test qrels), on a machine without network: one line
    naming the URL that failed and what to do; ir_datasets did try (the stand-in network refuses it)."""
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2.0 r\n")
    args = ("eval", "antique/test", str(tmp_path / "run.txt"), "nDCG@10")
    done = without_network(*args, home=tmp_path / "ir_datasets", cwd=tmp_path)
    assert "NETWORK ATTEMPTED" in done.stderr
    line = error_line(done, "eval", 1)
    assert line.startswith("pairmeasures eval: error: downloading "
                           "https://ciir.cs.umass.edu/downloads/Antique/antique-test.qrel failed (ConnectionError: "), line
    assert "Temporary failure in name resolution" in line and "(raised at requests/" in line, line
    assert line.endswith("retry with network access, or fetch it where there is network and put it where its dataset "
                         f"expects it ($IR_DATASETS_HOME for an ir_datasets id; docs/datasets.md); {DEBUG}"), line
    shown = without_network("--debug", *args, home=tmp_path / "ir_datasets", cwd=tmp_path)
    assert shown.returncode == 1 and "Traceback (most recent call last):" in shown.stderr
    assert "requests.exceptions.ConnectionError" in shown.stderr and shown.stderr.splitlines()[-1] == line


# --- safetensors and torch: a damaged weight file as --model or --base ----------------------------------------------

def model_folder(where: Path, weights: str, content: bytes) -> Path:
    """The default model's folder with its weights replaced by ``content`` in the file ``weights``."""
    from pairmeasures.compute.embed import default_model_path

    shutil.copytree(default_model_path(), where, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    (where / weights).write_bytes(content)
    return where


def real_weights(size: int) -> bytes:
    from pairmeasures.compute.embed import default_model_path

    with open(Path(default_model_path()) / "model.safetensors", "rb") as handle:
        return handle.read(size)


@pytest.mark.parametrize("weights, content, why", [
    ("model.safetensors", b"\xff" * 64, "SafetensorError: Error while deserializing header: header too large"),
    ("model.safetensors", "cut", "SafetensorError: Error while deserializing header: incomplete metadata, file not "
                                 "fully covered"),
    ("pytorch_model.bin", b"not a torch file, a user's notes\n", "UnpicklingError: "),
])
def test_a_damaged_weight_file_as_model_names_the_file(tmp_path, weights, content, why):
    model = model_folder(tmp_path / "model", weights, real_weights(1 << 20) if content == "cut" else content)
    corpus = tmp_path / "corpus"
    (corpus / "qrels").mkdir(parents=True)
    (corpus / "corpus.jsonl").write_text('{"_id": "d1", "text": "a text"}\n')
    (corpus / "queries.jsonl").write_text('{"_id": "q1", "text": "a query"}\n')
    (corpus / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    args = ("embed", str(corpus), "--model", str(model), "--no-index")
    line = error_line(pairmeasures(*args, env={"PAIRMEASURES_CACHE_DIR": str(tmp_path / "cache")}), "embed", 2)
    assert line.startswith(f"pairmeasures embed: error: could not load the embedding model from directory "
                           f"{str(model)!r}: "), line
    assert f"; {model / weights} is damaged or cut short ({why}" in line, line
    assert line.endswith("): replace it, or the whole folder, with an intact copy of the model"), line
    assert "weights_only" not in line and "arbitrary code" not in line  # never torch's advice to load it unsafely
    shown = with_debug(args, env={"PAIRMEASURES_CACHE_DIR": str(tmp_path / "cache")})
    assert shown.returncode == 2 and shown.stderr.startswith("Traceback") and shown.stderr.splitlines()[-1] == line


def test_a_damaged_weight_file_as_base_names_it(tmp_path):
    """train-polarity --base with a weight file cut short: one line naming --base and the file (the library's
    SafetensorError ended in the generic line, which could not say which file)."""
    pytest.importorskip("accelerate", reason="transformers' Trainer needs accelerate (the train extra)")
    from test_train_polarity import claims_folder

    base = model_folder(tmp_path / "base", "model.safetensors", real_weights(1 << 20))
    args = ("train-polarity", str(claims_folder(tmp_path / "claims")), "--out", str(tmp_path / "model"), "--base",
            str(base), "--max-steps", "1", "--no-progress")
    line = error_line(pairmeasures(*args), "train-polarity", 2)
    assert line == (f"pairmeasures train-polarity: error: --base {base}: could not load the model: SafetensorError: "
                    "Error while deserializing header: incomplete metadata, file not fully covered; "
                    f"{base / 'model.safetensors'} is damaged or cut short (SafetensorError: Error while deserializing "
                    "header: incomplete metadata, file not fully covered): replace it, or the whole folder, with an "
                    "intact copy of the model"), line
    assert not (tmp_path / "model").exists() and not (tmp_path / "model.checkpoints").exists()


# --- pickle: a damaged parsed copy of a dataset -------------------------------------------------------------------

@pytest.mark.parametrize("damage", [b"\x80\xfe garbage", b"not a pickle", "cut short", b"\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\x7f"])
@pytest.mark.usefixtures("data_mirror")
def test_a_damaged_parsed_copy_of_a_dataset_is_parsed_again(tmp_path, damage):
    """The parsed copy of pair/procon's files (a pickle in the download cache) damaged: the next command parses the
    files again, with the same result. An unsupported protocol (ValueError), a frame too long (OverflowError) or a
    cut-short pickle gave an error line that named neither the file nor what to do ('unsupported pickle protocol')."""
    env = {"IR_DATASETS_HOME": str(tmp_path / "ir_datasets"), "PAIRMEASURES_CACHE_DIR": str(tmp_path / "cache")}
    args = ("datasets", "export", "pair/procon", "qrels")
    first = pairmeasures(*args, env=env)
    assert first.returncode == 0 and first.stdout.count("\n") > 100, first.stderr[-3000:]
    (parsed,) = (tmp_path / "ir_datasets" / "pair" / ".parsed").glob("pair-procon-*.pickle")
    parsed.write_bytes(parsed.read_bytes()[:len(parsed.read_bytes()) // 2] if damage == "cut short" else damage)
    with pytest.raises((pickle.UnpicklingError, EOFError, ValueError, OverflowError, MemoryError)):  # damaged indeed
        pickle.loads(parsed.read_bytes())
    again = pairmeasures(*args, env=env)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr[-3000:]
    assert again.stdout == first.stdout
    assert type(pickle.loads(parsed.read_bytes())).__name__ == "Tables"  # written again, whole


# --- SyntaxError: a user's stage module -----------------------------------------------------------------------------

def test_a_user_stage_module_python_cannot_parse_names_its_line(folder, tmp_path):  # noqa: F811
    package = tmp_path / "mine"
    package.mkdir()
    (package / "mine.py").write_text("import pyterrier as pt\n\ndef build():\n    return = pt.Transformer()\n")
    args = ("audit", "--dataset", str(folder), "--systems", "mine:build", "--measures", "nDCG@10", "--resamples",
            "100", "--no-tradeoff", "--out", str(tmp_path / "audit"))
    env = {"PAIRMEASURES_CACHE_DIR": str(tmp_path / "c"), "PYTHONPATH": f"{package}{os.pathsep}{ROOT}"}
    done = subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env})
    line = error_line(done, "audit", 2)
    assert line == (f"pairmeasures audit: error: system 'mine:build': module 'mine' cannot be read: "
                    f"{package / 'mine.py'}:4: invalid syntax: Python cannot parse that line; fix it and run again")
    assert not (tmp_path / "audit").exists()


# --- failure() with each kind, raised for real -----------------------------------------------------------------------

def raised(action) -> BaseException:
    try:
        action()
    except BaseException as exc:  # noqa: B036  (SystemExit too: what a command's code may raise)
        return exc
    raise AssertionError("nothing was raised")


def damaged_database(tmp_path: Path) -> BaseException:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"x" * 4096)
    return raised(lambda: sqlite3.connect(path).execute("SELECT * FROM sqlite_master").fetchall())


def refused_download() -> BaseException:
    import requests

    request = requests.Request("GET", "https://example.org/data/qrels.tsv").prepare()

    def send():  # what requests raises when the host cannot be resolved (no socket is opened here)
        raise requests.exceptions.ConnectionError("Failed to resolve 'example.org'", request=request)

    return raised(send)


def ir_measures_assertion() -> BaseException:
    import ir_measures

    import pairmeasures  # noqa: F401  (as in a command: our provider is on ir_measures' pipeline)

    return raised(lambda: ir_measures.calc_aggregate([ir_measures.nDCG(dcg="bogus") @ 10], [ir_measures.Qrel("q", "d", 1)],
                                                     [ir_measures.ScoredDoc("q", "d", 1.0)]))


def safetensor_error() -> BaseException:
    from safetensors.numpy import load

    return raised(lambda: load(b"\xff" * 64))


@pytest.mark.parametrize("make, starts, advice", [
    (damaged_database, "error: SQLite: file is not a database (raised at tests/test_failure_kinds.py:",
     f"a database file (a cache under $PAIRMEASURES_CACHE_DIR, or one you named) is damaged or is not a database; "
     f"{DEBUG} to see which"),
    (lambda _: refused_download(), "error: downloading https://example.org/data/qrels.tsv failed (ConnectionError: "
                                   "Failed to resolve 'example.org') (raised at tests/test_failure_kinds.py:",
     "retry with network access, or fetch it where there is network and put it where its dataset expects it "
     f"($IR_DATASETS_HOME for an ir_datasets id; docs/datasets.md); {DEBUG}"),
    (lambda _: raised(lambda: struct.unpack("<I", b"\x00")), "error: struct.error: unpack requires a buffer of 4 "
                                                             "bytes (raised at tests/test_failure_kinds.py:",
     f"a file is damaged or cut short; {DEBUG} to see which, and replace it"),
    (lambda _: raised(lambda: pickle.loads(b"xyz")), "error: UnpicklingError: invalid load key, 'x'. (raised at "
                                                         "tests/test_failure_kinds.py:",
     f"a file is damaged or cut short; {DEBUG} to see which, and replace it"),
    (lambda _: safetensor_error(), "error: SafetensorError: Error while deserializing: header too large "
                                   "(raised at ", f"a file is damaged or cut short; {DEBUG} to see which, and replace it"),
    (lambda _: raised(lambda: compile("x = = 1\n", "stage.py", "exec")),
     "error: stage.py:1: Python cannot read this file: invalid syntax; fix it", f"or {DEBUG}"),
    (lambda _: ir_measures_assertion(), "error: ir_measures refused the input: invalid param dcg='bogus' (an "
                                        "assertion at ir_measures/measures/base.py:",
     f"check the measure, file or option it was given, or {DEBUG}"),
    (lambda _: raised(lambda: sys.exit(3)), "error: the command was stopped by sys.exit(3) (raised at "
                                            "tests/test_failure_kinds.py:", DEBUG),
])
def test_failure_explains_each_kind_in_one_line(tmp_path, make, starts, advice):
    from pairmeasures.apps.failures import failure

    message, status = failure(make(tmp_path))
    assert status == 1 and "\n" not in message
    assert message.startswith(starts) and message.endswith(advice), message


def test_a_failure_of_each_kind_through_the_command_line_is_one_line_and_debug_shows_it(tmp_path):
    """An exception of each kind raised inside a command (a plugin command module raising it, as code a command
    runs would): ``main`` prints the one line and exits 1; with --debug the traceback comes first."""
    kinds = {"sqlite": "import sqlite3\nsqlite3.connect(sys.argv[1]).execute('SELECT * FROM sqlite_master')\n",
             "struct": "import struct\nstruct.unpack('<I', b'')\n",
             "pickle": "import pickle\npickle.loads(b'garbage')\n",
             "syntax": "compile('x = = 1', 'stage.py', 'exec')\n"}
    (tmp_path / "cache.sqlite").write_bytes(b"x" * 4096)
    for kind, code in kinds.items():
        script = ("import sys\nfrom pairmeasures.apps import cli\nfrom pairmeasures.apps.commands import eval_ as command\n"
                  "def run(args):\n" + "".join(f"    {line}\n" for line in code.splitlines()) +
                  "    return 0\ncommand.run = run\n"
                  "sys.exit(cli.main(sys.argv[2:]))\n")
        for debug in (False, True):
            done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "cache.sqlite"), *(["--debug"] * debug),
                                   "eval", "q", "r", "nDCG@10"], capture_output=True, text=True, timeout=300,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
            assert done.returncode == 1, (kind, done.stderr)
            lines = done.stderr.strip().splitlines()
            assert lines[-1].startswith("pairmeasures eval: error: ") and DEBUG in lines[-1], (kind, done.stderr)
            assert (lines[0] == "Traceback (most recent call last):") == debug, (kind, done.stderr)
            assert debug or len(lines) == 1, (kind, done.stderr)
