"""The embedding cache: round trips, corruption, a broken file, concurrent writers, threads, files that
must not be touched (locked, read-only, a directory, another program's database), stats and clearing."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
import warnings

import numpy as np
import pytest

from pairmeasures.compute.cache import EmbeddingCache, EmbeddingCacheError, text_key
from pairmeasures.compute.cachefile import SCHEMA


def test_round_trip_is_exact_float32_without_pickle(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    vectors = {text_key(t): np.random.default_rng(i).normal(size=5).astype(np.float32) for i, t in enumerate("abc")}
    cache.put("m1", vectors.items())
    found = cache.get("m1", list(vectors) + [text_key("missing")])
    assert set(found) == set(vectors)
    for key, vector in vectors.items():
        assert found[key].dtype == np.float32 and np.array_equal(found[key], vector)
    blob = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT vectors FROM blocks").fetchone()[0]
    assert blob == b"".join(vector.astype("<f4").tobytes() for vector in vectors.values())  # raw float32, no pickle
    assert cache.get("m2", list(vectors)) == {}  # keyed by model too
    assert (cache.hits, cache.misses) == (3, 4)


def test_vectors_read_once_are_read_from_memory_until_the_file_is_cleared(tmp_path):
    """A vector read and found whole is kept by the object (the same documents are looked up by every system of an
    audit): asked again, it comes from memory, not from the file; clearing the cache forgets it."""
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    key = text_key("doc")
    cache.put("m", [(key, np.arange(4, dtype=np.float32))])
    first = cache.get("m", [key, key])[key]
    with sqlite3.connect(tmp_path / "c.sqlite") as db:  # the file changes behind the object's back
        db.execute("DELETE FROM entries")
    assert cache.get("m", [key])[key] is first and not first.flags.writeable
    assert cache.get("other model", [key]) == {} and (cache.hits, cache.misses) == (2, 1)
    cache.put("m", [(key, np.arange(4, dtype=np.float32))])
    cache.clear()
    assert cache.get("m", [key]) == {}


def test_keys_are_exact_texts():
    assert text_key("Text") != text_key("text") != text_key("text ")
    assert text_key("\u00e9") != text_key("e\u0301")  # composed and decomposed é: different texts, no normalisation
    assert text_key("\u00e9").hex() == "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c"  # SHA-256 of c3 a9


@pytest.mark.parametrize("damage", ["truncate", "flip", "text", "crc"])
def test_a_damaged_entry_is_reported_missing(tmp_path, damage):
    path = tmp_path / "c.sqlite"
    cache = EmbeddingCache(path)
    key = text_key("doc")
    cache.put("m", [(key, np.arange(4, dtype=np.float32))])
    db = sqlite3.connect(path)
    if damage == "truncate":
        db.execute("UPDATE blocks SET vectors = substr(vectors, 1, 10)")
    elif damage == "flip":
        db.execute("UPDATE blocks SET vectors = ?", (np.arange(4, dtype=np.float32)[::-1].tobytes(),))
    elif damage == "text":
        db.execute("UPDATE blocks SET vectors = 'not a blob'")
    else:
        db.execute("UPDATE entries SET crc = crc + 1")
    db.commit()
    db.close()
    assert cache.get("m", [key]) == {}
    assert cache.corrupt == 1
    cache.put("m", [(key, np.arange(4, dtype=np.float32))])  # the caller recomputes and overwrites
    assert np.array_equal(cache.get("m", [key])[key], np.arange(4, dtype=np.float32))


def test_a_damaged_cache_file_is_kept_aside_and_replaced(tmp_path):
    path = tmp_path / "c.sqlite"
    header = b"SQLite format 3\0"  # an SQLite file, damaged after its header
    path.write_bytes(header + b"this is not a database" * 100)
    cache = EmbeddingCache(path)
    with pytest.warns(RuntimeWarning, match="was unreadable.*moved it to"):
        assert cache.get("m", [text_key("x")]) == {}
    kept = list(tmp_path.glob("c.sqlite.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes().startswith(header + b"this is not")
    cache.put("m", [(text_key("x"), np.ones(2, dtype=np.float32))])
    assert text_key("x") in cache.get("m", [text_key("x")])
    cache.close()
    path.write_bytes(header + b"damaged again" * 100)  # a second damaged file in the same second keeps its own name
    with pytest.warns(RuntimeWarning, match="moved it to"):
        EmbeddingCache(path).get("m", [text_key("x")])
    kept = sorted(tmp_path.glob("c.sqlite.corrupt-*"))
    assert len(kept) == 2 and {k.read_bytes()[16:23] for k in kept} == {b"this is", b"damaged"}
    assert str(os.getpid()) in kept[0].name


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path):
    """A user's file at the cache path is not the cache's to move or replace (issue 31: refused, not replaced)."""
    path = tmp_path / "embeddings.sqlite"
    path.write_bytes(b"my notes, not a database\n" * 100)
    with pytest.raises(EmbeddingCacheError, match=r"embeddings\.sqlite' is not an SQLite file .*left untouched"):
        EmbeddingCache(path).get("m", [text_key("x")])
    assert path.read_bytes() == b"my notes, not a database\n" * 100 and sorted(tmp_path.iterdir()) == [path]


def test_two_keys_of_one_entry_id_never_read_each_others_vector(tmp_path):
    """An entry's id is 8 bytes of its key: a key that shares them with a stored one is a miss (its checksum, over
    the whole key, differs), recomputed and stored in its place, never the other text's vector."""
    path = tmp_path / "c.sqlite"
    first, second = b"same8byt" + b"1" * 24, b"same8byt" + b"2" * 24
    EmbeddingCache(path).put("m", [(first, np.ones(3, np.float32))])
    reader = EmbeddingCache(path)
    assert reader.get("m", [second]) == {} and reader.get("m", [first])[first].tolist() == [1, 1, 1]
    EmbeddingCache(path).put("m", [(second, np.zeros(3, np.float32))])
    again = EmbeddingCache(path)  # (reader keeps the first vector it read, which is still that text's)
    assert again.get("m", [second])[second].tolist() == [0, 0, 0] and again.get("m", [first]) == {}


def test_many_vectors_in_blocks_read_back_exactly_in_any_order(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    vectors = np.random.default_rng(0).standard_normal((3000, 16)).astype(np.float32)
    keys = [text_key(f"text {i}") for i in range(3000)]
    for start in range(0, 3000, 1000):
        cache.put_block("m", keys[start:start + 1000], vectors[start:start + 1000])
    cache.put_block("m", keys[10:12], vectors[10:12] + 1)  # replaced: the newer block's rows are read
    order = np.random.default_rng(1).permutation(3000)
    found = EmbeddingCache(tmp_path / "c.sqlite").get("m", [keys[i] for i in order])
    expected = vectors.copy()
    expected[10:12] += 1
    assert len(found) == 3000 and all(np.array_equal(found[keys[i]], expected[i]) for i in range(3000))
    with pytest.raises(ValueError, match="3 keys but vectors of shape"):
        cache.put_block("m", keys[:3], vectors[:2])


def _first_format(path, extra=""):
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE models (model TEXT PRIMARY KEY, description TEXT NOT NULL, created REAL NOT NULL);"
                     "CREATE TABLE embeddings (model TEXT NOT NULL, text_key BLOB NOT NULL, dim INTEGER NOT NULL, "
                     f"vector BLOB NOT NULL, crc INTEGER NOT NULL{extra}, PRIMARY KEY (model, text_key)) WITHOUT ROWID;"
                     "INSERT INTO models VALUES ('m', 'a model', 0);")
    db.commit()
    db.close()


def test_a_cache_of_the_first_format_is_kept_aside_once_and_a_new_one_started(tmp_path):
    path = tmp_path / "embeddings.sqlite"
    _first_format(path)
    before = path.read_bytes()
    with pytest.warns(RuntimeWarning, match=r"was of an earlier format; moved it to .*embeddings\.sqlite\.format1-"):
        EmbeddingCache(path).put("m", [(text_key("x"), np.ones(2, np.float32))])
    kept = list(tmp_path.glob("embeddings.sqlite.format1-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert text_key("x") in EmbeddingCache(path).get("m", [text_key("x")])  # the new one, once


def test_a_lookalike_of_the_first_format_and_a_newer_format_are_left_untouched(tmp_path):
    lookalike = tmp_path / "lookalike.sqlite"
    _first_format(lookalike, extra=", note TEXT")  # another column: not a file this module wrote
    newer = tmp_path / "newer.sqlite"
    with EmbeddingCache(newer) as cache:
        cache.put("m", [(text_key("x"), np.ones(2, np.float32))])
    db = sqlite3.connect(newer)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    before = _snapshot(tmp_path)
    with pytest.raises(EmbeddingCacheError, match=r"lookalike\.sqlite' is an SQLite database of another program"):
        EmbeddingCache(lookalike).get("m", [text_key("x")])
    with pytest.raises(EmbeddingCacheError, match=r"newer\.sqlite' is of format 99.*reads format 2.*left untouched"):
        EmbeddingCache(newer).get("m", [text_key("x")])
    assert _snapshot(tmp_path) == before


def test_a_new_cache_is_written_on_large_pages(tmp_path):
    EmbeddingCache(tmp_path / "c.sqlite").put("m", [(text_key("x"), np.ones(2, np.float32))])
    assert sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA page_size").fetchone()[0] == 65536


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_a_locked_database_is_reported_and_never_moved(tmp_path):
    path = tmp_path / "c.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.executescript(SCHEMA)  # ours, in rollback-journal mode, where an exclusive lock keeps readers out
    holder.execute("BEGIN EXCLUSIVE")
    try:
        before = path.read_bytes()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(EmbeddingCacheError, match=r"c\.sqlite.*SQLITE_BUSY.*another process holds it.*left as it is"):
                EmbeddingCache(path, timeout=0.1).get("m", [text_key("x")])
        assert path.read_bytes() == before and not list(tmp_path.glob("*.corrupt-*"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert EmbeddingCache(path).get("m", [text_key("x")]) == {}  # usable once released


def test_a_directory_is_an_error_naming_it(tmp_path):
    folder = tmp_path / "embeddings.sqlite"
    folder.mkdir()
    with pytest.raises(EmbeddingCacheError, match=r"embeddings\.sqlite' is a directory"):
        EmbeddingCache(folder).get("m", [text_key("x")])
    assert folder.is_dir() and not list(tmp_path.glob("*.corrupt-*"))


def test_another_programs_database_is_an_error_and_untouched(tmp_path):
    path = tmp_path / "other.sqlite"
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE notes (body TEXT)")
    other.execute("INSERT INTO notes VALUES ('keep me')")
    other.commit()
    other.close()
    before = _snapshot(tmp_path)
    with pytest.raises(EmbeddingCacheError, match=r"other\.sqlite' is an SQLite database of another program.*notes"):
        EmbeddingCache(path).put("m", [(text_key("x"), np.ones(2, np.float32))])
    assert _snapshot(tmp_path) == before


def test_an_empty_file_becomes_a_cache(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache = EmbeddingCache(path)
        cache.put("m", [(text_key("x"), np.ones(2, np.float32))])
    assert text_key("x") in cache.get("m", [text_key("x")])


def _read_only_location(monkeypatch, folder):
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if (mode & os.W_OK and str(p).startswith(str(folder)))
                        else real(p, mode, **kw))


def test_a_read_only_cache_is_read_and_not_written(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    writer = EmbeddingCache(path)
    writer.put("m", [(text_key("old"), np.ones(3, np.float32))])
    writer.close()
    before = path.read_bytes()
    _read_only_location(monkeypatch, tmp_path)
    cache = EmbeddingCache(path)
    with pytest.warns(RuntimeWarning, match="is read-only.*computed but not stored") as caught:
        assert np.array_equal(cache.get("m", [text_key("old")])[text_key("old")], np.ones(3, np.float32))
        cache.put("m", [(text_key("new"), np.zeros(3, np.float32))])
        cache.register_model("m", "model m")
        assert cache.get("m", [text_key("new")]) == {}
    assert len(caught) == 1 and cache.read_only
    with pytest.raises(EmbeddingCacheError, match="read-only"):
        cache.clear()
    cache.close()
    assert path.read_bytes() == before  # (SQLite may add its -shm index where, unlike here, the folder is writable)


def test_a_cache_that_cannot_be_created_computes_without_storing(tmp_path, monkeypatch):
    _read_only_location(monkeypatch, tmp_path)
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    with pytest.warns(RuntimeWarning, match="cannot be created.*computed but not stored"):
        cache.put("m", [(text_key("x"), np.ones(2, np.float32))])
    assert cache.get("m", [text_key("x")]) == {} and cache.stats().models == []
    assert not (tmp_path / "c.sqlite").exists()


def test_one_cache_shared_by_threads(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    errors: list = []

    def work(worker: int) -> None:
        try:
            for i in range(40):
                key = text_key(f"{worker} {i}")
                cache.put("m", [(key, np.full(4, worker * 1000 + i, np.float32))])
                found = cache.get("m", [key, text_key(f"{(worker + 1) % 6} {i}")])
                assert np.array_equal(found[key], np.full(4, worker * 1000 + i, np.float32))
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(cache.get("m", [text_key(f"{w} {i}") for w in range(6) for i in range(40)])) == 240
    assert cache.corrupt == 0


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


def _opener(path, barrier):
    barrier.wait()
    cache = EmbeddingCache(path)
    cache.put("m", [(text_key("shared"), np.ones(4, dtype=np.float32))])
    cache.close()


def test_processes_creating_one_cache_at_once_see_all_its_tables_or_none(tmp_path):
    """The schema is created in one transaction: a process opening the new file meanwhile never sees a part of it
    (which would read as another program's database)."""
    context = multiprocessing.get_context("spawn")
    for attempt in range(3):
        path = tmp_path / f"new-{attempt}.sqlite"
        barrier = context.Barrier(6)
        workers = [context.Process(target=_opener, args=(path, barrier)) for _ in range(6)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        assert [worker.exitcode for worker in workers] == [0] * 6
        assert len(EmbeddingCache(path).get("m", [text_key("shared")])) == 1


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


def test_cache_clear_matches_the_model_exactly(tmp_path, capsys):
    from pairmeasures.apps.cli import main

    path = tmp_path / "c.sqlite"
    cache = EmbeddingCache(path)
    for key, name in (("k1", "all-MiniLM-L6-v2 (normalize=False)"), ("k2", "all-MiniLM-L6-v2 (normalize=True)"),
                      ("k3", "/models/a (normalize=False)")):
        cache.register_model(key, name)
        cache.put(key, [(text_key(name), np.zeros(3, np.float32))])
    cache.close()
    clear = ["cache", "clear", "--yes", "--cache", str(path), "--model"]
    assert main(clear + ["a"]) == 2  # once a substring of nearly every model
    assert "'a' names no model" in capsys.readouterr().err
    assert main(clear + ["all-MiniLM-L6-v2"]) == 2
    error = capsys.readouterr().err
    assert "matches several models" in error and "normalize=True) [k2]" in error and "[k3]" in error
    assert main(clear + ["all-MiniLM-L6-v2 (normalize=True)"]) == 0
    assert main(clear + ["/models/a"]) == 0
    assert main(clear + ["k1"]) == 0
    assert "deleted 1 embeddings" in capsys.readouterr().out
    assert EmbeddingCache(path).stats().models == []


def test_cache_clear_by_name_prefers_current_entries_over_old_normalisation_keyed_ones(tmp_path, capsys):
    from pairmeasures.apps.cli import main

    path = tmp_path / "c.sqlite"
    cache = EmbeddingCache(path)
    for key, name in (("old", "all-MiniLM-L6-v2 (normalize=False)"), ("new", "all-MiniLM-L6-v2")):
        cache.register_model(key, name)
        cache.put(key, [(text_key(name), np.zeros(3, np.float32))])
    clear = ["cache", "clear", "--yes", "--cache", str(path), "--model"]
    assert main(clear + ["all-MiniLM-L6-v2"]) == 0
    assert [m["model"] for m in cache.stats().models] == ["old"]
    assert main(clear + ["all-MiniLM-L6-v2"]) == 0  # then the old entries, by the same name
    assert cache.stats().models == []


def test_commands_say_in_one_line_that_a_cache_of_the_first_format_was_kept_aside(tmp_path):
    """``cache info`` and an audit, as a user runs them over a cache the earlier format wrote: one line each,
    ``pairmeasures COMMAND: EmbeddingCacheWarning: ...`` naming where it was kept (the audit shows every
    CacheWarning, so this is never silenced), and the file is there."""
    import subprocess
    import sys

    from pairmeasures.demo import debates_dir

    def run(folder, *args):
        folder.mkdir()
        _first_format(folder / "embeddings.sqlite")
        done = subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True,
                              timeout=600, env={**os.environ, "PAIRMEASURES_CACHE_DIR": str(folder),
                                                "TQDM_DISABLE": "1"})
        assert done.returncode == 0, done.stderr
        [kept] = folder.glob("embeddings.sqlite.format1-*")
        lines = [line for line in done.stderr.splitlines() if "earlier format" in line]
        assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        return lines[0], kept

    line, kept = run(tmp_path / "info", "cache", "info")
    assert line.startswith("pairmeasures cache: EmbeddingCacheWarning: embedding cache ") and str(kept) in line
    line, kept = run(tmp_path / "audit", "audit", "--dataset", str(debates_dir()), "--systems", "bm25", "--measures",
                     "nDCG@10", "Duo@10", "--resamples", "100", "--no-tradeoff", "--out", str(tmp_path / "out"))
    assert line.startswith("pairmeasures audit: EmbeddingCacheWarning: embedding cache ") and str(kept) in line
