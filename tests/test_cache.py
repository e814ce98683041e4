"""The embedding cache: round trips, corruption, a broken file, concurrent writers, stats and clearing."""

from __future__ import annotations

import multiprocessing
import sqlite3

import numpy as np
import pytest

from pairmeasures.sideinfo.cache import EmbeddingCache, text_key


def test_round_trip_is_exact_float32_without_pickle(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    vectors = {text_key(t): np.random.default_rng(i).normal(size=5).astype(np.float32) for i, t in enumerate("abc")}
    cache.put("m1", vectors.items())
    found = cache.get("m1", list(vectors) + [text_key("missing")])
    assert set(found) == set(vectors)
    for key, vector in vectors.items():
        assert found[key].dtype == np.float32 and np.array_equal(found[key], vector)
    blob = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT vector FROM embeddings LIMIT 1").fetchone()[0]
    assert len(blob) == 20 and not blob.startswith(b"\x80")  # raw float32 bytes, not a pickle
    assert cache.get("m2", list(vectors)) == {}  # keyed by model too
    assert (cache.hits, cache.misses) == (3, 4)


def test_keys_are_exact_texts():
    assert text_key("Text") != text_key("text") != text_key("text ")
    assert text_key("\u00e9") != text_key("e\u0301")  # composed and decomposed é: different texts, no normalisation
    assert text_key("\u00e9").hex() == "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c"  # SHA-256 of c3 a9


@pytest.mark.parametrize("damage", ["truncate", "flip", "crc"])
def test_a_damaged_entry_is_reported_missing(tmp_path, damage):
    path = tmp_path / "c.sqlite"
    cache = EmbeddingCache(path)
    key = text_key("doc")
    cache.put("m", [(key, np.arange(4, dtype=np.float32))])
    db = sqlite3.connect(path)
    if damage == "truncate":
        db.execute("UPDATE embeddings SET vector = substr(vector, 1, 10)")
    elif damage == "flip":
        db.execute("UPDATE embeddings SET vector = ?", (np.arange(4, dtype=np.float32)[::-1].tobytes(),))
    else:
        db.execute("UPDATE embeddings SET crc = crc + 1")
    db.commit()
    db.close()
    assert cache.get("m", [key]) == {}
    assert cache.corrupt == 1
    cache.put("m", [(key, np.arange(4, dtype=np.float32))])  # the caller recomputes and overwrites
    assert np.array_equal(cache.get("m", [key])[key], np.arange(4, dtype=np.float32))


def test_an_unreadable_file_is_kept_aside_and_replaced(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    cache = EmbeddingCache(path)
    with pytest.warns(RuntimeWarning, match="was unreadable.*moved it to"):
        assert cache.get("m", [text_key("x")]) == {}
    kept = list(tmp_path.glob("c.sqlite.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes().startswith(b"this is not")
    cache.put("m", [(text_key("x"), np.ones(2, dtype=np.float32))])
    assert text_key("x") in cache.get("m", [text_key("x")])


def _writer(path, worker, count):
    cache = EmbeddingCache(path)
    for i in range(count):
        cache.put("m", [(text_key(f"text {i}"), np.full(8, i, dtype=np.float32)),
                        (text_key(f"worker {worker} {i}"), np.full(8, worker, dtype=np.float32))])
    cache.close()


def test_two_processes_writing_at_once(tmp_path):
    path = tmp_path / "c.sqlite"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(path, w, 150)) for w in (1, 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    cache = EmbeddingCache(path)
    keys = [text_key(f"text {i}") for i in range(150)] + [text_key(f"worker {w} {i}") for w in (1, 2) for i in range(150)]
    found = cache.get("m", keys)
    assert len(found) == 450 and cache.corrupt == 0
    assert all(np.array_equal(found[text_key(f"text {i}")], np.full(8, i, np.float32)) for i in range(150))


def test_stats_and_clear(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    cache.register_model("m1", "model one (normalize=False)")
    cache.put("m1", [(text_key(str(i)), np.zeros(3, np.float32)) for i in range(5)])
    cache.put("m2", [(text_key("x"), np.zeros(7, np.float32))])
    stats = cache.stats()
    assert [(m["entries"], m["dim"]) for m in stats.models] == [(5, 3), (1, 7)]
    assert "model one" in stats.report() and stats.bytes_on_disk > 0
    assert cache.clear("m2") == 1
    assert [m["model"] for m in cache.stats().models] == ["m1"]
    assert cache.clear() == 5
    assert cache.stats().models == []
