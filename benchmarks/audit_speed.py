"""Speed of ``pairmeasures audit`` on PERSPECTRUM (907 queries, 8,370 documents), the systems of
benchmarks/audits.py there: ``bm25``, ``bm25>>dense``, ``bm25>>dense>>duogreedy(0.5)``, ``bm25>>dense>>mmr(0.5)``.

Cold: a new process with an empty cache folder (index, embeddings, runs all built). Its embedding time is the
time inside ``Embedder._compute`` (model loading and encoding; the process wraps it with a timer before it
calls the command's ``main``), and the manifest's ``timings_s`` is recorded beside it. Warm: the same command
again, as a new ``pairmeasures`` process over the filled cache (runs reused), timed from outside.

Writes results/audit_speed.json.

Usage: python benchmarks/audit_speed.py [--data DIR]
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

from _common import data_option, save
from audits import SYSTEMS

#: Run in the cold process: time Embedder._compute, then run the command; the timer is written to argv[1].
CHILD = """
import json, sys, time
from pairmeasures.sideinfo.embed import Embedder
from pairmeasures.apps.cli import main
spent = {"seconds": 0.0, "texts": 0}
compute = Embedder._compute
def timed(self, texts, keys):
    start = time.perf_counter()
    try:
        return compute(self, texts, keys)
    finally:
        spent["seconds"] += time.perf_counter() - start
        spent["texts"] += len(texts)
Embedder._compute = timed
code = main(sys.argv[2:])
open(sys.argv[1], "w").write(json.dumps(spent))
sys.exit(code)
"""


def run(command: list, env: dict) -> None:
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the audit failed ({done.returncode}):\n{done.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, PAIRMEASURES_CACHE_DIR=str(Path(scratch) / "cache"))
        audit = ["audit", "--dataset", "pair/perspectrum", "--data", str(Path(args.data).resolve()),
                 "--systems", *SYSTEMS, "--format", "csv"]
        spent_file = Path(scratch) / "embedding.json"
        start = time.perf_counter()
        run([sys.executable, "-c", CHILD, str(spent_file), *audit, "--out", f"{scratch}/cold"], env)
        cold = time.perf_counter() - start
        spent = json.loads(spent_file.read_text())
        cold_manifest = json.loads(Path(f"{scratch}/cold/manifest.json").read_text())
        start = time.perf_counter()
        run([str(Path(sys.executable).with_name("pairmeasures")), *audit, "--out", f"{scratch}/warm"], env)
        warm = time.perf_counter() - start
        warm_manifest = json.loads(Path(f"{scratch}/warm/manifest.json").read_text())
    results = {
        "dataset": "pair/perspectrum", "systems": SYSTEMS,
        "cold_s": round(cold, 1), "cold_embedding_s": round(spent["seconds"], 1), "texts_embedded": spent["texts"],
        "cold_embedding_share": round(spent["seconds"] / cold, 3),
        "cold_timings_s": cold_manifest.get("timings_s"),
        "warm_s": round(warm, 2), "warm_timings_s": warm_manifest.get("timings_s"),
        "warm_cache": warm_manifest.get("cache"),
    }
    print(json.dumps(results, indent=1))
    print("saved", save("audit_speed", results))


if __name__ == "__main__":
    main()
