"""Shared helpers: the golden reference cases, the real-data mirror, and a private, offline session.

The golden cases are vendored in ``tests/golden/`` (see its README). Tests that need the real bias
benchmarks read the folder named by ``PAIRMEASURES_DATA`` (laid out like the project's ``shared/data``)
and are skipped, with a reason naming the variable, when it is not set. No test opens a network socket.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden"

#: The real data as the user named it, read before the session points PAIRMEASURES_DATA at its mirror.
#: (A relative path, such as CI's ``../shared/data``, is taken from the directory pytest starts in.)
DATA = str(Path(os.environ["PAIRMEASURES_DATA"]).expanduser().resolve()) if os.environ.get("PAIRMEASURES_DATA") else None
NEEDS_DATA = "needs the real-data mirror: set PAIRMEASURES_DATA to a folder laid out like shared/data"

os.environ["HF_HUB_OFFLINE"] = "1"  # before anything imports huggingface_hub: the embedder never probes the hub


def load_golden(name: str) -> list[dict]:
    """Cases of one vendored golden file (read at collection time, to parametrise tests by case)."""
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))["cases"]


def ctrl_c_reaches_it() -> None:
    """A ``preexec_fn`` for a command a test presses Ctrl-C in (sends SIGINT): SIGINT's default disposition in the
    child, so that Python turns it into KeyboardInterrupt. A test run started in the background by a shell (``cmd
    &``, nohup) has SIGINT ignored, and a child inherits that: it would run to the end and exit 0."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def golden_number(value) -> float:
    """Golden files write non-finite numbers as strings."""
    return float(value.replace("Infinity", "inf")) if isinstance(value, str) else float(value)


#: The mirror layout of pairmeasures.datasets over the shared data: Wiki-Balance Synthetic is its sample.
MIRROR = {"perspectrum": "perspectrum", "procon": "procon", "grep-biasir": "grep-biasir",
          "msmarco-gender": "msmarco-gender", "wiki-balance-categories.tsv": "wiki-balance-categories.tsv",
          "wiki-balance-synthetic": "wiki-balance-sample"}


def missing_data() -> list[str]:
    """What the folder PAIRMEASURES_DATA names lacks of the shared/data layout."""
    return [source for source in MIRROR.values() if not (Path(DATA) / source).exists()]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real data (laid out like shared/data): skips the test when PAIRMEASURES_DATA is unset, fails it
    when the folder is not laid out like that."""
    if not DATA:
        pytest.skip(NEEDS_DATA)
    if missing_data():
        pytest.fail(f"PAIRMEASURES_DATA={DATA} is not laid out like shared/data: it lacks {', '.join(missing_data())}")
    return Path(DATA)


@pytest.fixture(scope="session")
def data_mirror(data_dir) -> Path:
    """The session's PAIRMEASURES_DATA: the real data in the mirror layout pairmeasures.datasets reads."""
    return Path(os.environ["PAIRMEASURES_DATA"])


class NetworkBlockedError(OSError):
    """A test tried to open a network socket."""


#: Addresses tests tried to connect to, since the current test started.
CONNECTION_ATTEMPTS: list = []
NETWORK_PATCH = pytest.StashKey[pytest.MonkeyPatch]()
IR_DATASETS_HOME = pytest.StashKey[Path]()


def refuse_connection(address):
    CONNECTION_ATTEMPTS.append(address)
    raise NetworkBlockedError(f"a test tried to connect to {address!r}: tests run offline "
                              "(serve downloads with the stand-in network of tests/test_datasets.py)")


def pytest_configure(config):
    """Block network sockets from the start of the session (collection included): every connection but a
    local (AF_UNIX) one fails, as on a machine without network."""
    def connect(self, address, *, original=socket.socket.connect):
        if self.family != getattr(socket, "AF_UNIX", None):
            refuse_connection(address)
        return original(self, address)

    def connect_ex(self, address, *, original=socket.socket.connect_ex):
        if self.family != getattr(socket, "AF_UNIX", None):
            refuse_connection(address)
        return original(self, address)

    patch = config.stash[NETWORK_PATCH] = pytest.MonkeyPatch()
    patch.setattr(socket.socket, "connect", connect)
    patch.setattr(socket.socket, "connect_ex", connect_ex)
    patch.setattr(socket, "create_connection", lambda address, *args, **kwargs: refuse_connection(address))


def pytest_unconfigure(config):
    config.stash[NETWORK_PATCH].undo()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """A private ir_datasets home before any test module is collected: ir_datasets fixes its datasets' paths
    when it is first imported, which a test module may do at collection."""
    session.config.stash[IR_DATASETS_HOME] = Path(tempfile.mkdtemp(prefix="pairmeasures-tests-ir-datasets-"))
    os.environ["IR_DATASETS_HOME"] = str(session.config.stash[IR_DATASETS_HOME])
    import ir_datasets  # noqa: F401  now: a test that points IR_DATASETS_HOME elsewhere must not be its first import


def pytest_sessionfinish(session):
    if IR_DATASETS_HOME in session.config.stash:
        shutil.rmtree(session.config.stash[IR_DATASETS_HOME], ignore_errors=True)


@pytest.fixture(autouse=True)
def fail_on_connection_attempts():
    """A test that tried to connect fails, even where the code under test took the error for being offline."""
    CONNECTION_ATTEMPTS.clear()
    yield
    assert not CONNECTION_ATTEMPTS, f"the test tried to open network connections to {CONNECTION_ATTEMPTS}"


#: What running Python and pytest leaves in a checkout, and may.
TOOL_CACHES = re.compile(r"(^|/)(__pycache__|\.pytest_cache|\.hypothesis)/|\.pyc$")


def untracked_paths() -> set[str] | None:
    """The checkout's untracked and ignored paths (as ``git status`` lists them), tool caches aside; None
    outside a git checkout."""
    try:
        status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True,
                                text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if status.returncode != 0:
        return None
    paths = {line[3:] for line in status.stdout.splitlines() if line[:2] in ("??", "!!")}
    return {path for path in paths if not TOOL_CACHES.search(path)}


@pytest.fixture(scope="session", autouse=True)
def source_tree_stays_clean():
    """No test writes into the source tree (a build of the example plugin once left build/ there)."""
    before = untracked_paths()
    yield
    after = untracked_paths()
    if before is not None and after is not None:
        assert after <= before, f"the tests wrote into the source tree: {sorted(after - before)}"


@pytest.fixture(scope="session", autouse=True)
def private_embedding_cache(tmp_path_factory):
    """Tests (and the commands they start) never touch the user's embedding cache."""
    folder = tmp_path_factory.mktemp("embedding-cache")
    previous = os.environ.get("PAIRMEASURES_CACHE_DIR")
    os.environ["PAIRMEASURES_CACHE_DIR"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("PAIRMEASURES_CACHE_DIR", None)
    else:
        os.environ["PAIRMEASURES_CACHE_DIR"] = previous


def build_mirror(folder: Path, data: Path) -> Path:
    """``folder`` laid out as PAIRMEASURES_DATA expects, with links into ``data`` (the shared data)."""
    for name, source in MIRROR.items():
        (folder / name).symlink_to(data / source)
    return folder


@pytest.fixture(scope="session", autouse=True)
def private_dataset_folders(tmp_path_factory):
    """Tests (and the commands they start) see PAIRMEASURES_DATA pointing at a mirror of the real data, as the
    docs examples expect (unset when there is none); their ir_datasets home is private (``pytest_sessionstart``)."""
    previous = {"PAIRMEASURES_DATA": os.environ.get("PAIRMEASURES_DATA")}
    if DATA and not missing_data():
        os.environ["PAIRMEASURES_DATA"] = str(build_mirror(tmp_path_factory.mktemp("mirror"), Path(DATA)))
    else:
        os.environ.pop("PAIRMEASURES_DATA", None)
    yield
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def embedder():
    """One default-model embedder for the whole session (the model loads once)."""
    from pairmeasures.compute.embed import Embedder

    return Embedder()


@pytest.fixture(scope="session")
def procon_subset(tmp_path_factory, data_dir) -> Path:
    """A small BEIR folder: the first four ProCon debates (all their arguments and labels)."""
    import pandas as pd

    source = data_dir / "procon"
    queries = [json.loads(line) for line in (source / "queries.jsonl").read_text().splitlines()][:4]
    keep = {q["_id"] for q in queries}
    folder = tmp_path_factory.mktemp("procon4")
    (folder / "qrels").mkdir()
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    corpus = [json.loads(line) for line in (source / "corpus.jsonl").read_text().splitlines()]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus if d["query_id"] in keep))
    for name in ("qrels/test.tsv", "labels.tsv"):
        table = pd.read_csv(source / name, sep="\t", dtype=str)
        table[table["query-id"].isin(keep)].to_csv(folder / name, sep="\t", index=False)
    return folder


@pytest.fixture(scope="session")
def msmarco_miniature(data_dir, data_mirror):
    """ir_datasets' own msmarco-passage files, written small into the session's private home, so that the
    MS MARCO gender query sets have documents: the passages the sample runs rank in their top 10 (text
    ``miniature passage {id}``) and made-up judgements (bert_L2's top-scored passages are relevant, and
    ``outsider``, a dev query in neither set, judges the first passage)."""
    from types import SimpleNamespace

    import ir_datasets
    import pandas as pd
    import pyterrier as pt

    home = Path(ir_datasets.util.home_path()) / "msmarco-passage"
    assert home.parent == Path(os.environ["IR_DATASETS_HOME"])  # the private home, never the user's
    runs = {name: pt.io.read_results(str(data_dir / "msmarco-gender" / "runs" / f"{name}.run.gz")).drop(columns="name")
            for name in ("BM25", "bert_L2")}
    ranked = pd.concat(runs.values())
    passages = sorted(set(ranked[ranked["rank"] <= 10].docno), key=int)
    (home / "dev").mkdir(parents=True, exist_ok=True)
    (home / "collection.tsv").write_text("".join(f"{p}\tminiature passage {p}\n" for p in passages))
    (home / "irds_version.txt").write_text("v2")  # the collection format ir_datasets expects: keeps collection.tsv
    bert = runs["bert_L2"]
    best = bert[bert.score == bert.groupby("qid").score.transform("max")]
    outsider = "1"
    judgements = "".join(f"{q} 0 {d} 1\n" for q, d in zip(best.qid, best.docno)) + f"{outsider} 0 {passages[0]} 1\n"
    (home / "dev" / "qrels").write_text(judgements)
    return SimpleNamespace(runs=runs, passages=passages, best=best, judgements=judgements, outsider=outsider)
