"""Evidence on real data: ``pairmeasures audit`` over the four bias benchmarks of shared/data.

Runs the command as a user does (a subprocess of this interpreter's ``pairmeasures``) for PERSPECTRUM,
ProCon, the Wiki-Balance sample (``--by domain``) and Grep-BiasIR (``--by category``), with the systems
``bm25``, ``bm25>>dense``, ``bm25>>dense>>duogreedy(0.5)`` and ``bm25>>dense>>mmr(0.5)``, and keeps
the leaderboards, summaries, manifests, plots and reports, written in place under
``results/audits/<dataset>/`` (so that the paths they write relative to their folder hold there;
``per_query.csv`` only when under 1 MB). Runs and embeddings are cached under
``$PAIRMEASURES_CACHE_DIR``, so a re-run only re-evaluates. ``results/audits/index.json`` lists each
audit's wall time and measured/excluded counts.

Usage: PAIRMEASURES_CACHE_DIR=/tmp/pmcache-ev python benchmarks/audits.py [--data DIR] [--only procon ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import RESULTS, data_option

SYSTEMS = ["bm25", "bm25>>dense", "bm25>>dense>>duogreedy(0.5)", "bm25>>dense>>mmr(0.5)"]
#: name -> (dataset id or folder under --data, --by field or None, systems)
DATASETS = {
    "perspectrum": ("pair/perspectrum", None, SYSTEMS),
    "procon": ("pair/procon", None, SYSTEMS),
    "wiki-balance-sample": ("{data}/wiki-balance-sample", "domain", SYSTEMS),
    "grep-biasir": ("pair/grep-biasir", "category", SYSTEMS),
}
PER_QUERY_LIMIT = 1_000_000


def run_audit(name: str, data: str, out_root: Path) -> dict:
    """One audit written in place into ``out_root/name`` (``--force`` replaces an earlier audit there, and only
    that), so that the paths its manifest and report write relative to the folder hold where it is kept; its wall
    time and counts. A ``per_query.csv`` of 1 MB or more is not kept (the manifest and leaderboard hold the
    rest)."""
    dataset, by, systems = DATASETS[name]
    binary = Path(sys.executable).with_name("pairmeasures")
    target = out_root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    data = os.path.relpath(data, out_root)  # run from out_root: the manifest's command and cwd name no machine path
    command = [str(binary), "audit", "--dataset", dataset.format(data=data), "--data", data,
               "--systems", *systems, "--out", name, "--force"]
    if by:
        command += ["--by", by]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=out_root)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"audit of {name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    per_query = target / "per_query.csv"
    if per_query.stat().st_size >= PER_QUERY_LIMIT:
        per_query.unlink()  # written by the audit just now, into its own folder
    board = json.loads((target / "leaderboard.json").read_text())
    manifest = json.loads((target / "manifest.json").read_text())
    return {"dataset": board["dataset"], "queries": board["queries"], "by": by, "systems": systems, "wall_s": round(wall, 1),
            "timings_s": manifest.get("timings_s"),
            "files": sorted(f.name for f in target.iterdir() if not f.name.startswith(".")),
            "measured": {m: info["measured"] for m, info in board["measures"].items()},
            "excluded": {m: info["excluded"] for m, info in board["measures"].items()},
            "means": board["systems"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--only", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    args = parser.parse_args()

    out_root = RESULTS / "audits"
    index_path = out_root / "index.json"
    index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    for name in args.only:
        print(f"auditing {name} ...", flush=True)
        index[name] = run_audit(name, str(Path(args.data).resolve()), out_root)
        print(f"  {index[name]['wall_s']} s; {index[name]['queries']} queries", flush=True)
        print((out_root / name / "leaderboard.md").read_text())
    index_path.write_text(json.dumps(dict(sorted(index.items())), indent=2) + "\n")
    print("saved", index_path)


if __name__ == "__main__":
    main()
