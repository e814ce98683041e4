"""Embedding cache: a second pass over 5,000 documents against the first (target: >= 20x faster).

Pass 1 embeds 5,000 PERSPECTRUM perspectives with the default model into an empty cache (the
model load included, as a user's first run pays it); pass 2 is a new Embedder over the same
texts, as a later run or another system's evaluation would be. Also reports the cache's size.

Usage: python benchmarks/embedding_cache.py [--data DIR, default $PAIRMEASURES_DATA] [--documents 5000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import data_option, save

from pairmeasures.sideinfo.cache import EmbeddingCache
from pairmeasures.sideinfo.embed import Embedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--documents", type=int, default=5000)
    args = parser.parse_args()
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
    print("saved", save("embedding_cache", results))


if __name__ == "__main__":
    main()
