"""Embedding backends against torch float32, in one run on the same texts: speed, agreement, accuracy.

Short texts: PERSPECTRUM perspectives (default 2,000); long texts: ProCon argument paragraphs (default 300).
Each round embeds both sets with every backend in turn (no cache; the model loaded beforehand), so a
busy machine slows all backends alike; the best round counts. Then the cosine similarity of each
backend's vectors to float32's, and ``validate_polarity`` accuracy on PERSPECTRUM and ProCon per backend
(each with its own empty cache). A backend would become the default only at >= 1.5x on both lengths
with accuracy within 0.005 on both datasets. The ONNX model is built in a temporary cache directory,
so its one-off build time is measured too (in ``load_s``).

Usage: python benchmarks/embedding_backends.py [--data DIR] [--short 2000] [--long 300] [--rounds 3]
       [--backends torch torch-int8 onnx-int8]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import data_option, save

DEFAULT_RULE = {"min_speedup": 1.5, "max_accuracy_change": 0.005}


def texts(path: Path, count: int) -> list[str]:
    with path.open() as handle:
        return list(dict.fromkeys(json.loads(line)["text"] for line in handle))[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--short", type=int, default=2000)
    parser.add_argument("--long", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=None)
    args = parser.parse_args()
    os.environ["PAIRMEASURES_CACHE_DIR"] = tempfile.mkdtemp(prefix="pairmeasures-backends-")

    import torch

    from pairmeasures.analysis.polarity import validate_polarity
    from pairmeasures.compute.cache import EmbeddingCache
    from pairmeasures.compute.embed import BACKENDS, Embedder

    backends = args.backends or list(BACKENDS)
    assert backends[0] == "torch", "the first backend is the baseline: torch"
    sets = {"short": texts(Path(args.data) / "perspectrum" / "corpus.jsonl", args.short),
            "long": texts(Path(args.data) / "procon" / "corpus.jsonl", args.long)}
    embedders, load_s = {}, {}
    for backend in backends:
        start = time.perf_counter()
        embedders[backend] = Embedder(cache=False, backend=backend, progress=False)
        embedders[backend].embed(["warm up"])
        load_s[backend] = round(time.perf_counter() - start, 2)
    best = {(b, s): float("inf") for b in backends for s in sets}
    vectors = {}
    for round_ in range(args.rounds):
        for name, batch in sets.items():
            for backend in backends:
                start = time.perf_counter()
                vectors[backend, name] = embedders[backend].embed(batch)
                best[backend, name] = min(best[backend, name], time.perf_counter() - start)
                print(f"round {round_ + 1}: {backend} {name} {len(batch) / best[backend, name]:.0f} texts/s (best so far)",
                      flush=True)
    results: dict = {"texts": {name: len(batch) for name, batch in sets.items()}, "rounds": args.rounds,
                     "torch_threads": torch.get_num_threads(), "rule": DEFAULT_RULE, "backends": {}}
    for backend in backends:
        row: dict = {"load_s": load_s[backend]}
        for name, batch in sets.items():
            a, b = vectors[backend, name], vectors["torch", name]
            cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
            row[name] = {"texts_per_s": round(len(batch) / best[backend, name], 1),
                         "speedup": round(best["torch", name] / best[backend, name], 2),
                         "cosine_mean": round(float(cos.mean()), 5), "cosine_min": round(float(cos.min()), 5)}
        results["backends"][backend] = row
    del embedders, vectors
    with tempfile.TemporaryDirectory() as folder:
        for backend in backends:
            for dataset in ("perspectrum", "procon"):
                embedder = Embedder(backend=backend, cache=EmbeddingCache(Path(folder) / f"{backend}.sqlite"),
                                    progress=False)
                report = validate_polarity(Path(args.data) / dataset, embedder=embedder)
                results["backends"][backend][dataset] = {
                    "accuracy": round(report["accuracy"], 4), "consistent_accuracy": round(report["consistent_accuracy"], 4),
                    "seconds": report["seconds"]}
                print(f"{backend} {dataset}: accuracy {report['accuracy']:.4f}, consistent "
                      f"{report['consistent_accuracy']:.4f} ({report['seconds']} s)", flush=True)
    base = results["backends"]["torch"]
    for backend in backends[1:]:
        row = results["backends"][backend]
        change = max(abs(row[d][m] - base[d][m]) for d in ("perspectrum", "procon")
                     for m in ("accuracy", "consistent_accuracy"))
        row["max_accuracy_change"] = round(change, 4)
        row["qualifies_as_default"] = bool(min(row["short"]["speedup"], row["long"]["speedup"])
                                           >= DEFAULT_RULE["min_speedup"] and change <= DEFAULT_RULE["max_accuracy_change"])
        print(f"{backend}: {row['short']['speedup']}x short, {row['long']['speedup']}x long against torch float32; "
              f"cosine to float32 mean {row['short']['cosine_mean']:.4f} / {row['long']['cosine_mean']:.4f}, "
              f"min {min(row['short']['cosine_min'], row['long']['cosine_min']):.4f}; accuracy moves by up to "
              f"{change:.4f}; default-worthy: {row['qualifies_as_default']}")
    print("saved", save("embedding_backends", results))


if __name__ == "__main__":
    main()
