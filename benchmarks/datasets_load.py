"""Loading a dataset again: the second load against the first (targets: >= 20x in the same process,
>= 2x in a new process).

The first load of each pair/... dataset, with an empty cache, parses and checks its mirror files
(a mirror of the shared data, Wiki-Balance Synthetic being its sample); the second load in the same
process reuses the records; a load in a new process reuses the records the first one pickled
into the cache. A load reads every record: documents, queries, qrels, labels and query metadata.

Usage: python benchmarks/datasets_load.py [--data DIR, default $PAIRMEASURES_DATA]
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

MIRROR = {"perspectrum": "perspectrum", "procon": "procon", "grep-biasir": "grep-biasir",
          "msmarco-gender": "msmarco-gender", "wiki-balance-categories.tsv": "wiki-balance-categories.tsv",
          "wiki-balance-synthetic": "wiki-balance-sample"}
DATASETS = ("pair/perspectrum", "pair/procon", "pair/grep-biasir", "pair/wiki-balance/synthetic",
            "pair/msmarco-passage/dev/gender-qs1")



def load_everything(name: str) -> int:
    """Read every record of a dataset; returns how many."""
    import ir_datasets

    dataset = ir_datasets.load(name)
    records = [list(dataset.queries_iter())]
    if hasattr(dataset, "labels_iter"):  # the MS MARCO sets take passages and qrels from ir_datasets' msmarco-passage
        records += [list(dataset.docs_iter()), list(dataset.qrels_iter()), list(dataset.labels_iter()),
                    list(dataset.query_info_iter())]
    return sum(map(len, records))


def time_loads() -> dict[str, float]:
    """Seconds to load each dataset, in this process."""
    import ir_datasets  # noqa: F401  (imported before timing: its import is not a load)

    import pairmeasures  # noqa: F401  (registers the datasets)

    seconds = {}
    for name in DATASETS:
        start = time.perf_counter()
        load_everything(name)
        seconds[name] = time.perf_counter() - start
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        mirror = Path(folder) / "mirror"
        mirror.mkdir()
        for name, source in MIRROR.items():
            (mirror / name).symlink_to(Path(args.data).resolve() / source)
        os.environ["PAIRMEASURES_DATA"] = str(mirror)
        os.environ["IR_DATASETS_HOME"] = str(Path(folder) / "ir_datasets")  # an empty cache, before ir_datasets loads
        first, second = time_loads(), time_loads()
        child = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
                 "from datasets_load import time_loads; print(json.dumps(time_loads()))")
        new_process = json.loads(subprocess.run([sys.executable, "-c", child], check=True, capture_output=True,
                                                text=True).stdout)
    total = {label: sum(times.values()) for label, times in
             (("first", first), ("second", second), ("new_process", new_process))}
    rows = {name: {"first_s": round(first[name], 4), "second_s": round(second[name], 6),
                   "new_process_s": round(new_process[name], 4)} for name in DATASETS}
    for name, row in rows.items():
        print(f"{name:40s} first {row['first_s']:.3f} s, again {row['second_s'] * 1000:.2f} ms, "
              f"new process {row['new_process_s']:.3f} s")
    same, fresh = total["first"] / total["second"], total["first"] / total["new_process"]
    print(f"all five: first load {total['first']:.3f} s; again in the same process {total['second'] * 1000:.1f} ms -> "
          f"{same:.0f}x (target >= 20x); in a new process {total['new_process']:.3f} s -> {fresh:.1f}x (target >= 2x)")
    results = {"datasets": rows, "first_s": round(total["first"], 4), "second_s": round(total["second"], 6),
               "new_process_s": round(total["new_process"], 4), "speedup_same_process": round(same, 1),
               "speedup_new_process": round(fresh, 1), "target_same_process": 20, "target_new_process": 2}
    print("saved", save("datasets_load", results))


if __name__ == "__main__":
    main()
