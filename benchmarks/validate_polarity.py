"""Run `pairmeasures validate-polarity --json` on PERSPECTRUM and ProCon, as a user would, and record it.

Default model (all-MiniLM-L6-v2); the paper's axis (first principal component), plus the best
label-free variant found for ProCon (headline text, negated-query anchors within 5 axes).

Usage: python benchmarks/validate_polarity.py [--data DIR, default $PAIRMEASURES_DATA]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _common import data_option, save

RUNS = {
    "perspectrum": [],
    "procon": [],
    "procon, headlines, negated-query anchors within 5 axes": ["--text", "title", "--anchors", "negated-query",
                                                               "--anchor-within", "5"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    args = parser.parse_args()
    results = {}
    for name, options in RUNS.items():
        folder = Path(args.data) / name.split(",")[0]
        command = [sys.executable, "-m", "pairmeasures", "validate-polarity", str(folder), "--json", *options]
        report = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        results[name] = {"command": "pairmeasures validate-polarity DIR --json " + " ".join(options), **report}
        print(f"{name}: accuracy {report['accuracy']:.4f}, consistent accuracy {report['consistent_accuracy']:.4f} "
              f"({report['queries']} queries, {report['documents']} documents, skipped {report['skipped_queries']})")
    print("saved", save("validate_polarity", results))


if __name__ == "__main__":
    main()
