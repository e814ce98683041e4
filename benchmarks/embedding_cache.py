"""Embedding cache: a second pass over 5,000 documents against the first (target: >= 20x faster).

Pass 1 embeds 5,000 PERSPECTRUM perspectives with the default model into an empty cache (the
model load included, as a user's first run pays it); pass 2 is a new Embedder over the same
texts, as a later run or another system's evaluation would be. Also reports the cache's size.

The writer (issue 34: >= 100,000 vectors/s of 384 float32): ``--writer N`` (default 100,000; 0 skips it) random
vectors are stored into an empty cache in chunks of 1,024 as the Embedder's writer thread stores them
(``EmbeddingCache.put``: one transaction a chunk), timed in wall seconds and CPU seconds. ``--writer-only`` measures
just that, and keeps the embedding passes of an earlier results/embedding_cache.json.

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
    parser.add_argument("--writer", type=int, default=100_000, help="vectors stored to time the writer (0: skip)")
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


def writer_rate(count: int, dim: int = 384, chunk: int = 1024) -> dict:
    """``count`` random float32 vectors of ``dim`` stored into an empty cache in chunks of ``chunk``."""
    from pairmeasures.compute.cache import text_key

    vectors = np.random.default_rng(0).standard_normal((count, dim)).astype(np.float32)
    keys = [text_key(f"text {i}") for i in range(count)]
    with tempfile.TemporaryDirectory() as folder:
        cache = EmbeddingCache(Path(folder) / "embeddings.sqlite")
        cache.put("warm-up", [(keys[0], vectors[0])])  # the file and its tables made
        wall, cpu = time.perf_counter(), time.process_time()
        for start in range(0, count, chunk):
            cache.put("model", list(zip(keys[start:start + chunk], vectors[start:start + chunk])))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    found = {"vectors": count, "dim": dim, "chunk": chunk, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
             "vectors_per_s": round(count / wall), "vectors_per_cpu_s": round(count / cpu), "target_per_s": 100_000}
    print(f"writer: {count:,} vectors of {dim} float32 in {wall:.1f} s ({count / wall:,.0f}/s), {cpu:.1f} CPU-s "
          f"({count / cpu:,.0f}/CPU-s); target >= 100,000/s")
    return found


if __name__ == "__main__":
    main()
