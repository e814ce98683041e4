"""``pairmeasures embed --engine local`` as a user runs it, and the shard store that the Ray engine writes through."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

import numpy as np
import pytest
from conftest import NEEDS_DATA

from pairmeasures._owned import MARKER
from pairmeasures.compute.cache import EmbeddingCache, text_key
from pairmeasures.compute.shards import ShardError, ShardStore, plan_shards, shard_id

CHECKOUT = str(Path(__file__).resolve().parents[1])

#: The command run in a fresh interpreter; it fails when anything imported Ray.
WITHOUT_RAY = ("import sys\nfrom pairmeasures.apps.cli import main\ncode = main(sys.argv[1:])\n"
               "assert 'ray' not in sys.modules, 'the local engine imported ray'\nsys.exit(code)")


def small_corpus(folder: Path, count: int, data: Optional[Path] = None) -> Path:
    """A BEIR folder of the first ``count`` PERSPECTRUM perspectives (one duplicate text added) and two claims, from
    ``data`` (default: PAIRMEASURES_DATA; the test is skipped, with its reason, where there is no data)."""
    if data is None:
        if not os.environ.get("PAIRMEASURES_DATA"):
            pytest.skip(NEEDS_DATA)
        data = Path(os.environ["PAIRMEASURES_DATA"])
    docs = [json.loads(line) for line in (data / "perspectrum" / "corpus.jsonl").read_text().splitlines()[:count]]
    docs.append({**docs[0], "_id": "duplicate-of-first"})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [json.loads(line) for line in (data / "perspectrum" / "queries.jsonl").read_text().splitlines()[:2]]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q['_id']}\t{docs[0]['_id']}\t1\n" for q in queries))
    return folder


def embed_cli(*args: str, cache: Path, code: str = WITHOUT_RAY, timeout: float = 900,
              **variables: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, **variables, "PAIRMEASURES_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
                   "PYTHONPATH": os.pathsep.join(filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", code, "embed", *args], env=environment, capture_output=True,
                          text=True, timeout=timeout)


def test_local_engine_fills_the_cache_and_the_index_without_ray(tmp_path, embedder, data_mirror):
    corpus = small_corpus(tmp_path / "corpus", 120, data_mirror)
    first = embed_cli(str(corpus), "--json", cache=tmp_path / "cache", TQDM_DELAY="0", TQDM_MININTERVAL="0")
    assert first.returncode == 0, first.stderr
    assert "embedding: 100%" in first.stderr  # progress as lines when stderr is not a terminal (a log file)
    # the bar moves with every batch the model embeds (64 texts on the CPU), not once the whole chunk is done
    lines = [line for line in first.stderr.splitlines() if line.startswith("embedding:")]
    assert any(" 64/120 " in line for line in lines), lines
    report = json.loads(first.stdout)
    assert set(report) == {"texts", "embedded", "cached", "engine", "workers", "seconds"}
    assert (report["texts"], report["embedded"], report["cached"], report["engine"]) == (120, 120, 0, "local")
    assert "dense index:" in first.stderr
    index = Path(first.stderr.split("dense index: ")[1].split("\n")[0])
    assert (index / "pt_meta.json").is_file() and index.parent == tmp_path / "cache" / "indexes"
    texts = [json.loads(line)["text"] for line in (corpus / "corpus.jsonl").read_text().splitlines()]
    # the audit's embedder finds every text cached, with the vectors the model gives
    cache = EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite")
    found = cache.get(embedder.key, [text_key(t) for t in texts])
    assert len(found) == 120
    expected = embedder.load().encode(texts[:8], convert_to_numpy=True)
    assert np.abs(np.stack([found[text_key(t)] for t in texts[:8]]) - expected).max() <= 1e-5
    again = embed_cli(str(corpus), "--json", cache=tmp_path / "cache")
    assert again.returncode == 0, again.stderr
    assert (json.loads(again.stdout)["embedded"], json.loads(again.stdout)["cached"]) == (0, 120)


def test_ray_options_without_the_ray_engine_are_refused(tmp_path):
    corpus = small_corpus(tmp_path / "corpus", 5)
    result = embed_cli(str(corpus), "--address", "auto", cache=tmp_path / "cache")
    assert result.returncode == 2 and "pass --engine ray" in result.stderr


def test_a_missing_source_is_an_error_naming_it(tmp_path):
    """embed fails like every other command: one line, 'pairmeasures embed: error: ...', status 2."""
    result = embed_cli(str(tmp_path / "nowhere"), cache=tmp_path / "cache")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("pairmeasures embed: error: ") and "nowhere" in lines[0]


MODEL = "ab" * 32  # a model key (a hex digest)
OTHER = "cd" * 32


def vectors(rows: int, dim: int = 4, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(rows, dim)).astype(np.float32)


def test_shards_are_named_by_their_texts_and_planned_in_order():
    keys = [text_key(str(i)) for i in range(10)]
    shards = plan_shards(keys, [str(i) for i in range(10)], 4, MODEL)
    assert [len(s.keys) for s in shards] == [4, 4, 2]
    assert shards[0].id == shard_id(keys[:4], MODEL) != shard_id(keys[1:5], MODEL)
    assert plan_shards(keys, [str(i) for i in range(10)], 4, MODEL) == shards
    # the same texts of another model make another shard, named by its model
    assert shard_id(keys[:4], OTHER) != shards[0].id and shard_id(keys[:4], OTHER).startswith(OTHER[:16] + "-")
    with pytest.raises(ValueError, match="at least one text"):
        plan_shards(keys, [], 0, MODEL)


def test_a_shard_round_trips_and_merges_into_the_cache(tmp_path):
    store = ShardStore(tmp_path / "shards", MODEL).claim()
    keys = [text_key(f"text {i}") for i in range(5)]
    store.write(shard_id(keys, MODEL), keys, vectors(5))
    assert store.finished() == [shard_id(keys, MODEL)]
    read_keys, read = store.read(shard_id(keys, MODEL))
    assert read_keys == keys and np.array_equal(read, vectors(5))
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    assert store.recover(cache) == (5, [])
    assert store.finished() == [] and [p.name for p in store.folder.iterdir()] == [MARKER]
    assert np.array_equal(np.stack([cache.get(MODEL, keys)[k] for k in keys]), vectors(5))


@pytest.mark.parametrize("damage", ["truncated vectors", "wrong row count", "changed keys", "no record",
                                    "not finite", "unreadable record"])
def test_a_damaged_shard_is_detected_deleted_and_left_to_redo(tmp_path, damage):
    store = ShardStore(tmp_path / "shards", MODEL).claim()
    keys = [text_key(f"text {i}") for i in range(6)]
    name = shard_id(keys, MODEL)
    values = vectors(6)
    if damage == "not finite":
        values[2, 1] = np.nan
    store.write(name, keys, values)
    npy, keys_file, done = (store.folder / f"{name}.{s}" for s in ("npy", "keys", "done"))
    if damage == "truncated vectors":
        npy.write_bytes(npy.read_bytes()[:-7])
    elif damage == "wrong row count":
        record = json.loads(done.read_text())
        done.write_text(json.dumps({**record, "rows": 7}))
    elif damage == "changed keys":
        keys_file.write_bytes(keys_file.read_bytes()[32:] + keys_file.read_bytes()[:32])
        record = json.loads(done.read_text())
        import hashlib
        done.write_text(json.dumps({**record, "keys": hashlib.sha256(keys_file.read_bytes()).hexdigest()}))
    elif damage == "no record":
        done.unlink()
    elif damage == "unreadable record":
        done.write_text("{not json")
    shard = plan_shards(keys, [f"text {i}" for i in range(6)], 6, MODEL)
    assert store.pending(shard) == shard
    if damage != "no record":
        with pytest.raises(ShardError, match=name):
            store.read(name)
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    merged, problems = store.recover(cache)
    assert merged == 0 and len(problems) == (damage != "no record")
    assert [p.name for p in store.folder.iterdir()] == [MARKER] and cache.get(MODEL, keys) == {}
