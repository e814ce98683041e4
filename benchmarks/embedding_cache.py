"""Embedding cache: a second pass over 5,000 documents against the first (target: >= 20x faster).

Pass 1 embeds 5,000 PERSPECTRUM perspectives with the default model into an empty cache (the
model load included, as a user's first run pays it); pass 2 is a new Embedder over the same
texts, as a later run or another system's evaluation would be. Also reports the cache's size.

The writer (issue 34: >= 100,000 vectors/s of 384 float32): ``--writer N`` (default 300,000, some 440 MiB: the journal is copied into the file more than once meanwhile; 0 skips it) random
vectors are stored into an empty cache in chunks of 4,096 as the Embedder's writer thread stores them
(``EmbeddingCache.put_block``: one block, one transaction, a chunk), timed in wall seconds and CPU seconds, then a
twentieth of them read back in random order; the first format's writer (one vector a row, chunks of 1,024) is
timed beside it in the same run, as the baseline. ``--writer-only`` measures just that, and keeps the embedding
passes of an earlier results/embedding_cache.json.

Usage: python benchmarks/embedding_cache.py [--data DIR, default $PAIRMEASURES_DATA] [--documents 5000]
       [--writer 100000] [--writer-only]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import RESULTS, data_option, save

from pairmeasures.compute.cache import EmbeddingCache
from pairmeasures.compute.embed import Embedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **{**data_option(), "required": False})  # --writer-only needs none
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--writer", type=int, default=300_000, help="vectors stored to time the writer (0: skip)")
    parser.add_argument("--writer-only", action="store_true", help="time the writer only (no data needed)")
    args = parser.parse_args()
    if args.writer_only:
        earlier = RESULTS / "embedding_cache.json"
        results = json.loads(earlier.read_text())["results"] if earlier.is_file() else {}
        results["writer"] = writer_rate(args.writer)
        print("saved", save("embedding_cache", results))
        return
    if args.data is None:
        parser.error("the embedding passes need --data DIR (or PAIRMEASURES_DATA); --writer-only needs none")
    with (Path(args.data) / "perspectrum" / "corpus.jsonl").open() as handle:
        texts = [json.loads(line)["text"] for line in handle][: args.documents]
    with tempfile.TemporaryDirectory() as folder:
        cache = EmbeddingCache(Path(folder) / "embeddings.sqlite")
        start = time.perf_counter()
        first = Embedder(cache=cache, progress=True).embed(texts)
        t_first = time.perf_counter() - start
        start = time.perf_counter()
        second_embedder = Embedder(cache=cache)
        second = second_embedder.embed(texts)
        t_second = time.perf_counter() - start
        assert np.array_equal(first, second) and second_embedder.computed == 0
        size = cache.stats().bytes_on_disk
    results = {"documents": len(texts), "distinct_texts": len(set(texts)), "first_pass_s": round(t_first, 2),
               "second_pass_s": round(t_second, 3), "speedup": round(t_first / t_second, 1), "target_speedup": 20,
               "cache_mib": round(size / 2**20, 2)}
    print(f"{len(texts)} documents: first pass {t_first:.1f} s (model load + embedding), second pass {t_second:.3f} s "
          f"from the cache -> {t_first / t_second:.0f}x (target >= 20x); cache {size / 2**20:.1f} MiB")
    if args.writer:
        results["writer"] = writer_rate(args.writer)
    print("saved", save("embedding_cache", results))


#: The first format's table and writer (one vector a row, keyed by model and 32-byte key), the baseline measured in
#: the same run.
_FIRST_FORMAT = """CREATE TABLE embeddings (model TEXT NOT NULL, text_key BLOB NOT NULL, dim INTEGER NOT NULL,
    vector BLOB NOT NULL, crc INTEGER NOT NULL, PRIMARY KEY (model, text_key)) WITHOUT ROWID;"""


def _first_format_put(connection, model: str, keys: list, vectors: np.ndarray) -> None:
    import zlib

    rows = sorted(((model, key, vectors.shape[1], blob, zlib.crc32(blob))
                   for key, blob in zip(keys, (v.tobytes() for v in vectors))), key=lambda row: row[1])
    connection.execute("BEGIN IMMEDIATE")
    connection.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?)", rows)
    connection.execute("COMMIT")


def writer_rate(count: int, dim: int = 384, chunk: int = 4096, baseline_chunk: int = 1024) -> dict:
    """``count`` random float32 vectors of ``dim`` stored into an empty cache in chunks of ``chunk`` (as the
    Embedder's writer thread stores them: ``put_block``), then ``count // 20`` of them read back in random order;
    beside it, the first format's writer (chunks of ``baseline_chunk``, as it was used), in the same run."""
    import random
    import sqlite3

    from pairmeasures.compute.cache import text_key

    vectors = np.random.default_rng(0).standard_normal((count, dim)).astype(np.float32)
    keys = [text_key(f"text {i}") for i in range(count)]
    with tempfile.TemporaryDirectory() as folder:
        cache = EmbeddingCache(Path(folder) / "embeddings.sqlite")
        cache.put("warm-up", [(keys[0], vectors[0])])  # the file and its tables made
        wall, cpu = time.perf_counter(), time.process_time()
        for start in range(0, count, chunk):
            cache.put_block("model", keys[start:start + chunk], vectors[start:start + chunk])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        sample = random.Random(0).sample(keys, max(1, count // 20))
        read_wall, read_cpu = time.perf_counter(), time.process_time()
        found = EmbeddingCache(Path(folder) / "embeddings.sqlite").get("model", sample)
        read_wall, read_cpu = time.perf_counter() - read_wall, time.process_time() - read_cpu
        assert len(found) == len(sample)
        size = sum(path.stat().st_size for path in Path(folder).iterdir())
    with tempfile.TemporaryDirectory() as folder:
        connection = sqlite3.connect(Path(folder) / "first.sqlite", isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.executescript(_FIRST_FORMAT)
        base_wall, base_cpu = time.perf_counter(), time.process_time()
        for start in range(0, count, baseline_chunk):
            _first_format_put(connection, "model", keys[start:start + baseline_chunk],
                              vectors[start:start + baseline_chunk])
        base_wall, base_cpu = time.perf_counter() - base_wall, time.process_time() - base_cpu
        connection.close()
    found_rate = {"vectors": count, "dim": dim, "chunk": chunk, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                  "vectors_per_s": round(count / wall), "vectors_per_cpu_s": round(count / cpu),
                  "target_per_s": 100_000, "met": count / wall >= 100_000, "file_mib": round(size / 2**20, 1),
                  "read": {"vectors": len(sample), "wall_s": round(read_wall, 3), "cpu_s": round(read_cpu, 3),
                           "vectors_per_s": round(len(sample) / read_wall)},
                  "first_format": {"chunk": baseline_chunk, "wall_s": round(base_wall, 2), "cpu_s": round(base_cpu, 2),
                                   "vectors_per_s": round(count / base_wall)},
                  "speedup_wall": round(base_wall / wall, 2), "speedup_cpu": round(base_cpu / cpu, 2)}
    print(f"writer: {count:,} vectors of {dim} float32 in {wall:.1f} s ({count / wall:,.0f}/s), {cpu:.1f} CPU-s "
          f"({count / cpu:,.0f}/CPU-s); target >= 100,000/s; the first format in the same run: {count / base_wall:,.0f}/s "
          f"({base_wall / wall:.1f}x slower, {base_cpu / cpu:.1f}x the CPU)")
    print(f"reader: {len(sample):,} of them in random order in {read_wall:.2f} s ({len(sample) / read_wall:,.0f}/s)")
    found_rate["merge"] = merge_rate(vectors, keys)
    return found_rate


def merge_rate(vectors: np.ndarray, keys: list, shard: int = 2048) -> dict:
    """The Ray driver's part: finished shards of ``shard`` vectors (as actors write them, not timed) merged into the
    cache as ``embed --engine ray`` merges them (each read and checked against its record, stored, deleted)."""
    from pairmeasures.compute.shards import ShardStore, plan_shards

    model = "0123456789abcdef" * 4
    with tempfile.TemporaryDirectory() as folder:
        store = ShardStore(Path(folder) / "shards", model).claim()
        shards = plan_shards(keys, [""] * len(keys), shard, model)
        for number, planned in enumerate(shards):
            store.write(planned.id, planned.keys, vectors[number * shard:(number + 1) * shard])
        cache = EmbeddingCache(Path(folder) / "embeddings.sqlite")
        wall, cpu = time.perf_counter(), time.process_time()
        merged = sum(store.merge(planned.id, cache) for planned in shards)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"merge: {merged:,} vectors in shards of {shard:,} merged in {wall:.1f} s ({merged / wall:,.0f}/s, "
          f"{merged / cpu:,.0f}/CPU-s)")
    return {"vectors": merged, "shard": shard, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "vectors_per_s": round(merged / wall), "vectors_per_cpu_s": round(merged / cpu)}


if __name__ == "__main__":
    main()
