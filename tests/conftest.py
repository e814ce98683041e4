"""Shared helpers: where the golden reference cases and the real benchmark data live.

Both default to the project's ``shared/`` folder beside (or above) this checkout and can be
pointed at a copy with ``PAIRMEASURES_GOLDEN_DIR`` and ``PAIRMEASURES_DATA_DIR``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shared_path(env: str, name: str) -> Path:
    """The folder named by ``env``, else the nearest ``shared/<name>`` above this checkout."""
    if os.environ.get(env):
        path = Path(os.environ[env])
    else:
        path = next((p / "shared" / name for p in ROOT.parents if (p / "shared" / name).is_dir()),
                    ROOT.parent / "shared" / name)
    if not path.is_dir():
        raise FileNotFoundError(f"{name} directory not found at {path}; set {env} to its location")
    return path


def load_golden(name: str) -> list[dict]:
    """Cases of one golden file (read at collection time, to parametrise tests by case)."""
    return json.loads((shared_path("PAIRMEASURES_GOLDEN_DIR", "golden") / name).read_text())["cases"]


def golden_number(value) -> float:
    """Golden files write non-finite numbers as strings."""
    return float(value.replace("Infinity", "inf")) if isinstance(value, str) else float(value)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return shared_path("PAIRMEASURES_DATA_DIR", "data")


@pytest.fixture(scope="session", autouse=True)
def private_embedding_cache(tmp_path_factory):
    """Tests (and the commands they start) never touch the user's embedding cache."""
    folder = tmp_path_factory.mktemp("embedding-cache")
    previous = os.environ.get("PAIRMEASURES_CACHE_DIR")
    os.environ["PAIRMEASURES_CACHE_DIR"] = str(folder)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    yield folder
    if previous is None:
        os.environ.pop("PAIRMEASURES_CACHE_DIR", None)
    else:
        os.environ["PAIRMEASURES_CACHE_DIR"] = previous


#: The mirror layout of pairmeasures.datasets over the shared data: Wiki-Balance Synthetic is its sample.
MIRROR = {"perspectrum": "perspectrum", "procon": "procon", "grep-biasir": "grep-biasir",
          "msmarco-gender": "msmarco-gender", "wiki-balance-categories.tsv": "wiki-balance-categories.tsv",
          "wiki-balance-synthetic": "wiki-balance-sample"}


def build_mirror(folder: Path, data: Path) -> Path:
    """``folder`` laid out as PAIRMEASURES_DATA expects, with links into ``data`` (the shared data)."""
    for name, source in MIRROR.items():
        (folder / name).symlink_to(data / source)
    return folder


@pytest.fixture(scope="session", autouse=True)
def private_dataset_folders(tmp_path_factory):
    """Tests (and the commands they start) use a private ir_datasets home, and PAIRMEASURES_DATA points
    at a mirror of the shared data, as the docs examples expect."""
    previous = {name: os.environ.get(name) for name in ("IR_DATASETS_HOME", "PAIRMEASURES_DATA")}
    os.environ["IR_DATASETS_HOME"] = str(tmp_path_factory.mktemp("ir-datasets-home"))
    try:
        data = shared_path("PAIRMEASURES_DATA_DIR", "data")
        os.environ["PAIRMEASURES_DATA"] = str(build_mirror(tmp_path_factory.mktemp("mirror"), data))
    except FileNotFoundError:
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
    from pairmeasures.sideinfo.embed import Embedder

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
