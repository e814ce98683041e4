"""Warm polarity evaluation: DUO with axes fitted on PERSPECTRUM, every embedding already cached.

A synthetic run over PERSPECTRUM: each of the 907 claims ranks its judged perspectives and
random other ones of the corpus, ``--per-query`` documents in all (default 92: about 83k rows).
``ir_measures.calc_aggregate([Duo(polarity="pca:DIR", missing="skip")], qrels, run)`` then fits one axis per claim
and projects every row, as a user's audit does. Each timing is a new process (nothing cached
in memory) with a warm embedding cache (a private one, filled by a first, cold run). Reported:
the evaluation's seconds, the part inside the embedder (``Embedder.embed_distinct``, or ``embed``
in code before it: hashing, cache lookups, gathering rows) and the whole process. Target: the
warm evaluation takes at most 1 s. On a machine shared with other work, ``OPENBLAS_NUM_THREADS=1``
keeps NumPy's per-query SVDs from waiting on busy cores (the setting is recorded).

``--compare REV`` also times the code of a git revision (e.g. the one before a change),
alternating with this checkout's in the same session, each with its own warm cache.

Usage: python benchmarks/warm_polarity.py [--data DIR] [--per-query 92] [--repeat 3] [--compare REV]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import data_option, save

ROOT = Path(__file__).resolve().parent.parent


def make_run(folder: Path, per_query: int, seed: int = 0):
    """A run of every claim's judged documents plus random others, and the qrels, as DataFrames."""
    import numpy as np
    import pandas as pd

    qrels = pd.read_csv(folder / "qrels" / "test.tsv", sep="\t", dtype=str).rename(
        columns={"query-id": "query_id", "corpus-id": "doc_id", "score": "relevance"}).astype({"relevance": int})
    with (folder / "corpus.jsonl").open() as handle:
        corpus = np.array([json.loads(line)["_id"] for line in handle], dtype=object)
    rng = np.random.default_rng(seed)
    frames = []
    for query_id, judged in qrels.groupby("query_id", sort=True)["doc_id"]:
        others = rng.choice(corpus[~np.isin(corpus, judged.to_numpy())], max(per_query - len(judged), 0), replace=False)
        docs = rng.permutation(np.concatenate([judged.to_numpy(), others]))
        frames.append(pd.DataFrame({"query_id": query_id, "doc_id": docs, "score": np.arange(len(docs), 0, -1.0)}))
    return pd.concat(frames, ignore_index=True), qrels


def child(folder: Path, per_query: int) -> None:
    """One evaluation in this process; prints its timings as JSON."""
    started = time.perf_counter()
    import ir_measures

    import pairmeasures as pm
    from pairmeasures.compute.embed import Embedder

    spent = {"embed_s": 0.0}
    name = "embed_distinct" if hasattr(Embedder, "embed_distinct") else "embed"  # the code before had embed only
    embed = getattr(Embedder, name)

    def timed(self, texts):
        start = time.perf_counter()
        try:
            return embed(self, texts)
        finally:
            spent["embed_s"] += time.perf_counter() - start

    setattr(Embedder, name, timed)
    run, qrels = make_run(folder, per_query)
    measure = pm.Duo(polarity=f"pca:{folder}", missing="skip")  # a few claims have one perspective only
    start = time.perf_counter()
    value = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    evaluation = time.perf_counter() - start
    print(json.dumps({"rows": len(run), "queries": int(run["query_id"].nunique()), "duo": value,
                      "evaluation_s": evaluation, "embed_s": spent["embed_s"],
                      "process_s": time.perf_counter() - started}))


def measure(source: Path, folder: Path, per_query: int, cache: Path) -> dict:
    """Run :func:`child` in a new interpreter with ``source`` on the path and ``cache`` as the cache folder."""
    env = {**os.environ, "PYTHONPATH": str(source), "PAIRMEASURES_CACHE_DIR": str(cache), "PYTHONWARNINGS": "ignore"}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", "--data", str(folder.parent), "--per-query",
                          str(per_query)], env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - start
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--per-query", type=int, default=92, help="documents per claim (default 92: ~83k rows)")
    parser.add_argument("--repeat", type=int, default=3, help="warm runs per version (default 3)")
    parser.add_argument("--compare", metavar="REV", default=None, help="also time this git revision's code")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = Path(args.data) / "perspectrum"
    if args.child:
        child(folder, args.per_query)
        return
    with tempfile.TemporaryDirectory() as scratch:
        versions = {"this checkout": ROOT}
        if args.compare:
            versions = {args.compare: Path(scratch) / "compare", **versions}
            versions[args.compare].mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.compare, "pairmeasures"],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(versions[args.compare])], input=archive, check=True)
        caches = {name: Path(scratch) / f"cache-{i}" for i, name in enumerate(versions)}
        cold = {name: measure(source, folder, args.per_query, caches[name]) for name, source in versions.items()}
        warm: dict = {name: [] for name in versions}
        for _ in range(args.repeat):  # interleaved, so load on a shared machine hits every version alike
            for name, source in versions.items():
                warm[name].append(measure(source, folder, args.per_query, caches[name]))
    results: dict = {"rows": cold["this checkout"]["rows"], "queries": cold["this checkout"]["queries"],
                     "target_warm_evaluation_s": 1.0, "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                     "versions": {}}
    for name, runs in warm.items():
        summary = {key: {"min": round(min(r[key] for r in runs), 3), "median": round(statistics.median(r[key] for r in runs), 3)}
                   for key in ("evaluation_s", "embed_s", "process_s")}
        summary["cold_evaluation_s"] = round(cold[name]["evaluation_s"], 2)
        summary["duo"] = runs[0]["duo"]
        results["versions"][name] = summary
        print(f"{name}: warm evaluation {summary['evaluation_s']['min']:.2f} s (median {summary['evaluation_s']['median']:.2f}), "
              f"of which in the embedder {summary['embed_s']['min']:.2f} s; whole process {summary['process_s']['min']:.2f} s; "
              f"cold evaluation {summary['cold_evaluation_s']:.1f} s; DUO {summary['duo']:.4f}")
    print(f"{results['rows']:,} rows, {results['queries']} queries; target: warm evaluation <= 1 s")
    print("saved", save("warm_polarity", results))


if __name__ == "__main__":
    main()
