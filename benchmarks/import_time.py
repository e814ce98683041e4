"""`import pairmeasures`, `pairmeasures --help` and `pairmeasures audit --help` must stay fast, and the import
must not load torch, sentence-transformers, PyTerrier or pandas.

Each is run in fresh interpreters, interleaved with a baseline measured in the same run (`python -c "import
ir_measures"`, the library pairmeasures extends), and timed in CPU seconds of the child process (user + system),
so a busy machine does not hide a change. Records min and median of each, and each median's ratio to the
baseline's. Targets: import under 1.5 s and no heavy module; `--help` loads no PyTerrier.

Usage: python benchmarks/import_time.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from typing import Optional

from _common import save

PROBE = ("import sys, time, json; t = time.perf_counter(); import pairmeasures; t = time.perf_counter() - t; "
         "print(json.dumps({'seconds': t, 'heavy': sorted(m for m in ('torch', 'sentence_transformers', "
         "'pyterrier', 'pandas') if m in sys.modules)}))")
HELP_PROBE = ("import sys, runpy; sys.argv = ['pairmeasures'] + sys.argv[1:]\n"
              "try:\n    runpy.run_module('pairmeasures', run_name='__main__')\nexcept SystemExit:\n    pass\n"
              "print('PYTERRIER' if 'pyterrier' in sys.modules else 'no pyterrier', file=sys.stderr)")
COMMANDS = {
    "baseline: import ir_measures": [sys.executable, "-c", "import ir_measures"],
    "import pairmeasures": [sys.executable, "-c", PROBE],
    "pairmeasures --help": [sys.executable, "-c", HELP_PROBE, "--help"],
    "pairmeasures audit --help": [sys.executable, "-c", HELP_PROBE, "audit", "--help"],
}


def cpu_seconds(command: list, env: Optional[dict] = None) -> tuple[float, subprocess.CompletedProcess]:
    """The child's CPU seconds (user + system) and its result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7, help="runs of each command, interleaved (default 7)")
    args = parser.parse_args()
    seconds: dict = {name: [] for name in COMMANDS}
    heavy, help_loads_pyterrier = [], False
    for _ in range(args.rounds):
        for name, command in COMMANDS.items():
            spent, done = cpu_seconds(command)
            seconds[name].append(spent)
            if name == "import pairmeasures":
                heavy = json.loads(done.stdout)["heavy"]
            if "--help" in name:
                help_loads_pyterrier |= "PYTERRIER" in done.stderr
    baseline = statistics.median(seconds["baseline: import ir_measures"])
    results = {name: {"min_cpu_s": round(min(v), 3), "median_cpu_s": round(statistics.median(v), 3),
                      "median_over_baseline": round(statistics.median(v) / baseline, 2)} for name, v in seconds.items()}
    results.update({"target_import_s": 1.5, "heavy_modules_imported": heavy, "help_loads_pyterrier": help_loads_pyterrier,
                    "rounds": args.rounds})
    for name, row in results.items():
        if isinstance(row, dict):
            print(f"{name:<30} min {row['min_cpu_s']:.3f} CPU-s, median {row['median_cpu_s']:.3f} CPU-s "
                  f"({row['median_over_baseline']:.2f}x the baseline)")
    print(f"heavy modules imported by `import pairmeasures`: {heavy or 'none'}; --help loads PyTerrier: "
          f"{help_loads_pyterrier}")
    if "torch" in heavy or "sentence_transformers" in heavy:
        raise SystemExit("import pairmeasures pulled in torch or sentence-transformers")
    if help_loads_pyterrier:
        raise SystemExit("pairmeasures --help loaded PyTerrier")
    print("saved", save("import_time", results))


if __name__ == "__main__":
    main()
