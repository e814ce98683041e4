"""Issue 14's measurement: fine-tune the embedder on PERSPECTRUM training claims with ProCon excluded, then validate
polarity on PERSPECTRUM test claims and on ProCon (argument texts and headlines), base vs trained, with paired
bootstrap 95% intervals over queries.

Runs ``pairmeasures train-polarity`` as a user does (one subprocess per seed, CPU unless CUDA is present) and
records each run's command, table and training.json summary in ``results/train_polarity.json``. The models are
written under --models (default: a temporary folder) and not kept in the repository; a model there that the same
command wrote is reported without training again.

    PYTHONPATH=. python benchmarks/train_polarity.py [--data DIR] [--seeds 0 1] [--models DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import data_option, save

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", **data_option())
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--models", default=None, help="folder for the trained models (default: a temporary one)")
    args = parser.parse_args()

    from pairmeasures.train.polarity import evaluation_table

    data = Path(args.data).expanduser().resolve()
    models = Path(args.models or tempfile.mkdtemp(prefix="train-polarity-"))
    runs = []
    for seed in args.seeds:
        out = models / f"perspectrum-seed{seed}"
        command = ["pairmeasures", "train-polarity", str(data / "perspectrum"), "--out", str(out),
                   "--exclude", str(data / "procon"), "--evaluate", str(data / "procon"),
                   "--evaluate-text", "text", "title", "--evaluation-split", "test", "--seed", str(seed),
                   "--no-progress", "--force"]
        previous = out / "training.json"
        if previous.is_file() and json.loads(previous.read_text())["command"] == command:
            print(f"seed {seed}: {out} was written by this command: its training.json is reported")
        else:
            done = subprocess.run([sys.executable, "-m", *command], capture_output=True, text=True,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
            if done.returncode:
                sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
        record = json.loads(previous.read_text())
        table = evaluation_table(record["evaluation"])
        print(f"seed {seed}: {record['training']['steps']} steps, {record['seconds']:.0f} s\n{table}\n")
        runs.append({"command": " ".join(command).replace(str(data), "$PAIRMEASURES_DATA"), "seed": seed,
                     "seconds": record["seconds"], "created": record["created"], "table": table, "data": record["data"],
                     "recipe": record["recipe"], "training": {k: record["training"][k] for k in ("steps", "training_loss")},
                     "evaluation": record["evaluation"], "versions": record["versions"]})
    path = save("train_polarity", {"runs": runs})
    print(f"recorded in {path}")


if __name__ == "__main__":
    main()
