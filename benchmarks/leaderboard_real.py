"""The committed board of real results: ``benchmarks/results/leaderboard/`` made from the shared data as a lab makes
one (docs/leaderboard.md), every step a ``python -m pairmeasures`` command measured from outside (``os.wait4``:
CPU seconds, user + system, and peak RSS):

1. ``benchmark run pair-bias-v1 --systems ... --tasks ...`` (the systems of :data:`SYSTEMS` on the tasks of
   :data:`TASKS`: the suite's tasks whose data is here offline; Perspectrum's 907 queries at depth 100 make each
   stored run about 1 MB gzipped, some 9 MB for the board);
2. ``benchmark submit --name tfidf-sklearn`` of run files made here by another system (scikit-learn's TF-IDF cosine
   over each task's documents, :func:`tfidf_runs`): a lab's submission;
3. the same ``benchmark run`` again, warm: it must write nothing, skip every record, run no system and embed
   nothing (the embedding cache files unchanged), in a small fraction of the cold run's CPU time;
4. ``leaderboard verify`` (every record recomputed from its stored run) and ``leaderboard build`` into ``site/``.

Writes results/leaderboard/{results,site}/ and results/leaderboard_real.json.

Usage: PAIRMEASURES_DATA=DIR python benchmarks/leaderboard_real.py [--out benchmarks/results/leaderboard]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import save

ROOT = Path(__file__).resolve().parent.parent
sys.path[1:1] = [str(ROOT)]

#: The systems run (ce(PATH) needs a cross-encoder folder, which this machine does not have offline).
SYSTEMS = ["bm25", "dense", "bm25>>dense", "bm25>>dense>>duogreedy(0.25)", "bm25>>dense>>duogreedy(0.5)",
           "bm25>>dense>>mmr(0.5)", "bm25>>least", "bm25>>dense>>mmr(0.25)"]
TASKS = ["pair/perspectrum", "pair/procon", "pair/grep-biasir", "pair/wiki-balance/synthetic"]
SUBMISSION = "tfidf-sklearn"


def measured(*args: str, env: dict) -> dict:
    """Run ``python -m pairmeasures ARGS``: its exit status, stdout, stderr, wall seconds, and the child's CPU seconds and peak RSS read by ``os.wait4``."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        child = subprocess.Popen([sys.executable, "-m", "pairmeasures", *args], env=env, stdout=out_file,
                                 stderr=err_file)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        out_file.seek(0)
        err_file.seek(0)
        out, err = out_file.read().decode(), err_file.read().decode()
    result = {"args": list(args), "rc": child.returncode, "stdout": out, "stderr": err,
              "wall_s": round(time.perf_counter() - start, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
              "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({child.returncode}):\n{err}")
    return result


def tfidf_runs(folder: Path, depth: int = 100) -> None:
    """A TREC run per task of :data:`TASKS` into ``folder`` (``<task id>.run``): scikit-learn's TF-IDF cosine of
    each query against every document of the task's dataset, the top ``depth``."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    from pairmeasures.datasets.profile import load_profile

    for task in TASKS:
        profile = load_profile(task)
        ids = [str(doc.get("docno", doc.get("doc_id", doc.get("_id")))) for doc in profile.corpus.docs_iter()]
        texts = profile.texts(ids)
        vectorizer = TfidfVectorizer(sublinear_tf=True).fit(texts)
        documents = vectorizer.transform(texts)
        lines = []
        for qid, query in profile.queries.items():
            scores = (documents @ vectorizer.transform([query]).T).toarray().ravel()
            top = np.argsort(-scores, kind="stable")[:depth]
            lines += [f"{qid} Q0 {ids[i]} {rank} {scores[i]:.6f} {SUBMISSION}\n" for rank, i in enumerate(top, 1)]
        target = folder / f"{task}.run"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(lines), encoding="utf-8")


def cache_files(folder: Path) -> dict:
    """``{file: (size, mtime)}`` of the embedding cache folder: what a warm run must leave untouched."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "leaderboard"))
    args = parser.parse_args()
    if not os.environ.get("PAIRMEASURES_DATA"):
        raise SystemExit("set PAIRMEASURES_DATA to a mirror of the shared data (docs/datasets.md)")
    out = Path(args.out)
    results, site = out / "results", out / "site"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "TQDM_DISABLE": "1"}
    run_args = ["benchmark", "run", "pair-bias-v1", "--systems", *SYSTEMS, "--results", str(results), "--tasks",
                *TASKS, "--json"]
    cold = measured(*run_args, env=env)
    with tempfile.TemporaryDirectory() as work:
        tfidf_runs(Path(work))
        submitted = measured("benchmark", "submit", "pair-bias-v1", "--name", SUBMISSION, "--results", str(results),
                             "--runs", work, "--json", env=env)
    from pairmeasures.compute.cache import default_cache_path

    cache = default_cache_path().parent
    before = cache_files(cache)
    warm = measured(*run_args, env=env)
    after = cache_files(cache)
    warm_summary = json.loads(warm["stdout"])
    verified = measured("leaderboard", "verify", str(results), "--json", env=env)
    built = measured("leaderboard", "build", str(results), "--out", str(site), "--force", "--json", env=env)
    sizes = {str(p): p.stat().st_size for p in results.rglob("*") if p.is_file()}
    report = {
        "systems": SYSTEMS, "submission": SUBMISSION, "tasks": TASKS,
        "cold_run": {k: cold[k] for k in ("cpu_s", "peak_rss_mb", "wall_s")} | {"summary": json.loads(cold["stdout"])},
        "submit": {k: submitted[k] for k in ("cpu_s", "peak_rss_mb")} | {"summary": json.loads(submitted["stdout"])},
        "warm_run": {k: warm[k] for k in ("cpu_s", "peak_rss_mb", "wall_s")} | {
            "summary": warm_summary, "embedding_cache_unchanged": before == after,
            "ran_nothing": warm_summary["records_written"] == 0 and
            warm_summary["records_skipped"] == len(SYSTEMS) * len(TASKS)},
        "verify": {k: verified[k] for k in ("cpu_s", "peak_rss_mb")} | {
            key: value for key, value in json.loads(verified["stdout"]).items() if key != "drift"} | {
            "drift_lines": len(json.loads(verified["stdout"])["drift"])},
        "build": {k: built[k] for k in ("cpu_s", "peak_rss_mb")},
        "results_bytes": sum(sizes.values()),
        "largest_file_bytes": max(sizes.values()),
    }
    print(json.dumps(report, indent=2))
    save("leaderboard_real", report)


if __name__ == "__main__":
    main()
