"""The evidence of DUO's axes on ProCon and PERSPECTRUM, through `pairmeasures audit` as a user runs it, against
`pairmeasures validate-polarity --json` on the same folders.

One system per dataset, `run:FILE`, ranking each query's judged documents (the evidence does not depend on the
systems); `--measures Duo@10 --no-tradeoff`, default seed 0 and 10,000 resamples. Recorded per dataset: the held-out
accuracies with their intervals (`leaderboard.json`'s `polarity_axes`), the same held-out scores counted in hindsight
(signs chosen on the scored documents), validate-polarity's accuracies on all its queries and on the queries the
evidence measured, and the seconds each command took.

Usage: python benchmarks/axis_evidence.py [--data DIR, default $PAIRMEASURES_DATA]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import data_option, save

DATASETS = ("procon", "perspectrum")
ACCURACIES = ("accuracy", "consistent_accuracy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    args = parser.parse_args()
    results = {}
    for name in DATASETS:
        folder = Path(args.data) / name
        with tempfile.TemporaryDirectory() as work:
            run = Path(work) / "judged.run"
            with open(folder / "qrels" / "test.tsv", newline="") as handle:
                rows = list(csv.DictReader(handle, delimiter="\t"))
            ranked: dict = {}
            for row in rows:
                ranked.setdefault(row["query-id"], []).append(row["corpus-id"])
            run.write_text("".join(f"{q} Q0 {d} {r} {len(docs) - r} judged\n" for q, docs in ranked.items()
                                   for r, d in enumerate(docs)))
            audit = ["pairmeasures", "audit", "--data", str(args.data), "--dataset", f"pair/{name}", "--systems",
                     f"run:{run}", "--measures", "Duo@10", "--no-tradeoff", "--out", str(Path(work) / "audit")]
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "pairmeasures", *audit[1:]], capture_output=True, text=True, check=True)
            audit_seconds = time.perf_counter() - started
            axes = json.loads((Path(work) / "audit" / "leaderboard.json").read_text())["polarity_axes"]
            started = time.perf_counter()
            reference = json.loads(subprocess.run(
                [sys.executable, "-m", "pairmeasures", "validate-polarity", str(folder), "--json", "--per-query",
                 str(Path(work) / "per_query.json")], capture_output=True, text=True, check=True).stdout)
            validate_seconds = time.perf_counter() - started
            reference["per_query"] = json.loads((Path(work) / "per_query.json").read_text())
        measured = {r["query_id"] for r in axes["per_query"]}
        same = [r for r in reference["per_query"] if r["query_id"] in measured]
        documents = sum(r["documents"] for r in same)
        results[name] = {
            "command": " ".join(audit[:-1] + ["OUT"]).replace(str(run), "judged.run").replace(str(args.data), "$PAIRMEASURES_DATA"),
            "queries": axes["queries"], "documents": axes["documents"], "skipped_queries": axes["skipped_queries"],
            "held_out": {m: axes[m] for m in ACCURACIES}, "in_hindsight": axes["in_hindsight"],
            "warning": axes["warning"],
            "validate_polarity": {"queries": reference["queries"], "documents": reference["documents"],
                                  **{m: reference[m] for m in ACCURACIES}},
            "validate_polarity_same_queries": {m: sum(r[m] * r["documents"] for r in same) / documents
                                               for m in ACCURACIES},
            "seconds": {"audit": round(audit_seconds, 1), "validate_polarity": round(validate_seconds, 1)},
            "stderr": [line for line in done.stderr.splitlines() if "AxisWarning" in line],
        }
        held, hindsight = results[name]["held_out"], results[name]["in_hindsight"]
        print(f"{name}: {axes['queries']} queries, {axes['documents']} documents; held out: "
              + ", ".join(f"{m} {held[m]['value']:.3f} [{held[m]['low']:.3f}, {held[m]['high']:.3f}]" for m in ACCURACIES)
              + "; in hindsight: " + ", ".join(f"{m} {hindsight[m]:.3f}" for m in ACCURACIES)
              + "; validate-polarity (same queries): "
              + ", ".join(f"{reference[m]:.3f} ({results[name]['validate_polarity_same_queries'][m]:.3f})"
                          for m in ACCURACIES))
    print("saved", save("axis_evidence", results))


if __name__ == "__main__":
    main()
