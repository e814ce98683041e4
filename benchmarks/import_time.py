"""`import pairmeasures` must stay fast and must not import torch or sentence-transformers.

Imports the package in fresh interpreters and records the fastest and median time. Target: < 1.5 s.

Usage: python benchmarks/import_time.py
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

from _common import save

PROBE = ("import sys, time, json; t = time.perf_counter(); import pairmeasures; t = time.perf_counter() - t; "
         "print(json.dumps({'seconds': t, 'heavy': sorted(m for m in ('torch', 'sentence_transformers', "
         "'pyterrier', 'pandas') if m in sys.modules)}))")


def main() -> None:
    runs = [json.loads(subprocess.run([sys.executable, "-c", PROBE], check=True, capture_output=True,
                                      text=True).stdout) for _ in range(7)]
    seconds = [r["seconds"] for r in runs]
    heavy = runs[0]["heavy"]
    results = {"min_s": round(min(seconds), 3), "median_s": round(statistics.median(seconds), 3), "target_s": 1.5,
               "heavy_modules_imported": heavy}
    print(f"import pairmeasures: min {min(seconds):.3f} s, median {statistics.median(seconds):.3f} s "
          f"(target < 1.5 s); heavy modules imported: {heavy or 'none'}")
    if "torch" in heavy or "sentence_transformers" in heavy:
        raise SystemExit("import pairmeasures pulled in torch or sentence-transformers")
    print("saved", save("import_time", results))


if __name__ == "__main__":
    main()
