"""`pairmeasures eval` against the `ir_measures` command on the same ~1M-line TREC run: no slower.

Builds a synthetic TREC run (``--queries`` x ``--docs`` lines, 1,000 x 1,000 by default, scores descending within
each query, as run files are) and qrels (``--judged`` documents a query, half of them from the run's top 100, graded
0-3) from ``--seed``, then runs ``ir_measures QRELS RUN MEASURES`` and ``pairmeasures eval QRELS RUN MEASURES`` in
fresh interpreters, interleaved for ``--rounds`` rounds, timed in CPU seconds of the child process (user + system,
so a busy machine does not hide a change), after one untimed run of each that writes their compiled modules. Both
print the same TSV lines (checked). Records min and median of each
and the ratio of the medians; the target is at most 1.0x the ir_measures command.

Usage: python benchmarks/eval_speed.py [--rounds 5] [--queries 1000] [--docs 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from _common import save
from import_time import cpu_seconds

ROOT = Path(__file__).resolve().parents[1]
MEASURES = ["nDCG@10", "P@10", "R@100", "AP", "RR"]


def write_files(folder: Path, queries: int, docs: int, judged: int, seed: int) -> tuple[Path, Path]:
    """A TREC run and qrels in ``folder``, the same for the same arguments."""
    rng = np.random.default_rng(seed)
    run, qrels = folder / "run.trec", folder / "qrels.trec"
    with run.open("w") as run_file, qrels.open("w") as qrels_file:
        for q in range(queries):
            ids = rng.choice(50 * docs, size=docs, replace=False)
            scores = np.sort(rng.normal(10, 3, size=docs))[::-1]
            run_file.write("".join(f"q{q} Q0 d{d} {rank} {score:.4f} synthetic\n"
                                   for rank, (d, score) in enumerate(zip(ids, scores), start=1)))
            top = rng.choice(ids[:100], size=judged // 2, replace=False)
            rest = rng.choice(np.setdiff1d(np.arange(50 * docs), top), size=judged - judged // 2, replace=False)
            grades = rng.integers(0, 4, size=judged)
            qrels_file.write("".join(f"q{q} 0 d{d} {g}\n" for d, g in zip(np.concatenate([top, rest]), grades)))
    return qrels, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="runs of each command, interleaved (default 5)")
    parser.add_argument("--queries", type=int, default=1000, help="queries of the run (default 1000)")
    parser.add_argument("--docs", type=int, default=1000, help="documents a query (default 1000)")
    parser.add_argument("--judged", type=int, default=50, help="judged documents a query (default 50)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # both packages' compiled modules written, as an installed package has them (a checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would compile pairmeasures' sources on every run: ~0.07 CPU-s, not the command's)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as folder:
        qrels, run = write_files(Path(folder), args.queries, args.docs, args.judged, args.seed)
        lines = args.queries * args.docs
        commands = {
            "ir_measures QRELS RUN MEASURES": [sys.executable, "-m", "ir_measures", str(qrels), str(run), *MEASURES],
            "pairmeasures eval QRELS RUN MEASURES": [sys.executable, "-m", "pairmeasures", "eval", str(qrels), str(run),
                                                     *MEASURES],
        }
        seconds: dict = {name: [] for name in commands}
        outputs: dict = {}
        for command in commands.values():  # once, not timed: the compiled modules written
            cpu_seconds(command, env=env)
        for _ in range(args.rounds):
            for name, command in commands.items():
                spent, done = cpu_seconds(command, env=env)
                seconds[name].append(spent)
                outputs[name] = done.stdout
    baseline, ours = (statistics.median(v) for v in seconds.values())
    same = len(set(outputs.values())) == 1
    results = {name: {"min_cpu_s": round(min(v), 3), "median_cpu_s": round(statistics.median(v), 3),
                      "all_cpu_s": [round(x, 3) for x in v]} for name, v in seconds.items()}
    results.update({"lines": lines, "queries": args.queries, "measures": MEASURES, "rounds": args.rounds,
                    "seed": args.seed, "median_over_ir_measures": round(ours / baseline, 3), "target": 1.0,
                    "same_output": same})
    for name, row in seconds.items():
        print(f"{name:<40} min {min(row):.3f} CPU-s, median {statistics.median(row):.3f} CPU-s")
    print(f"{lines:,} run lines: pairmeasures eval takes {ours / baseline:.2f}x the ir_measures command's CPU time "
          f"(target <= 1.0x); same output: {same}")
    if not same:
        raise SystemExit("the two commands printed different values:\n" + "\n".join(outputs.values()))
    print("saved", save("eval_speed", results))


if __name__ == "__main__":
    main()
