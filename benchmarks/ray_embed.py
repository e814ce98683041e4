"""`pairmeasures embed`: the local engine against the Ray engine on this machine, measured side by side.

Each engine embeds the same passages (PERSPECTRUM, ProCon, Grep-BiasIR and Wiki-Balance texts, numbered copies
added until ``--passages`` distinct texts) as a user runs it: ``pairmeasures embed DIR --engine local|ray --json
--no-index`` in a fresh process with an empty cache. Recorded per engine: wall seconds (the Ray engine's include
starting its local Ray and the actors' model loading), texts per second, and the CPU seconds the whole machine
spent meanwhile (from /proc/stat: the Ray engine's raylet, GCS and actor processes are not the command's
children, so the command's own rusage would miss them; other load on the machine counts too, so read it beside
the wall time). ``overhead``: Ray's wall time over the local engine's, minus 1.

``--mode gpu`` (on a machine with a CUDA GPU; none here): the same on the GPU, where the Ray pool holds one fp16
actor per GPU. Usage:

    PAIRMEASURES_DATA=/work/shared/data python benchmarks/ray_embed.py --passages 20000
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

CHECKOUT = Path(__file__).resolve().parents[1]


def passages(data: Path, count: int) -> list:
    texts: list = []
    for name in ("perspectrum", "procon", "grep-biasir", "wiki-balance-sample"):
        texts += [json.loads(line)["text"] for line in (data / name / "corpus.jsonl").read_text().splitlines()]
    texts = list(dict.fromkeys(t for t in texts if t.strip()))
    out = texts[:count]
    copy = 1
    while len(out) < count:
        out += [f"{t} ({copy})" for t in texts[:count - len(out)]]
        copy += 1
    return out


def corpus(folder: Path, texts: list) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": str(i), "text": t}) + "\n"
                                                 for i, t in enumerate(texts)))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "school uniforms"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\t0\t1\n")
    return folder


def machine_cpu_seconds() -> float:
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    busy = sum(fields) - fields[3] - fields[4]  # all but idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def run(folder: Path, engine: str, cache: Path, device: str) -> dict:
    environment = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
                   "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "PYTHONPATH": str(CHECKOUT)}
    if device == "cpu":
        environment["CUDA_VISIBLE_DEVICES"] = ""
    cpu, start = machine_cpu_seconds(), time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pairmeasures", "embed", str(folder), "--engine", engine,
                             "--json", "--no-index"], env=environment, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, machine_cpu_seconds() - cpu
    if result.returncode:
        raise SystemExit(f"{engine}: {result.stderr[-3000:]}")
    report = json.loads(result.stdout)
    return {"wall_seconds": round(wall, 2), "machine_cpu_seconds": round(cpu, 2),
            "texts_per_second": round(report["texts"] / wall, 2), "report": report}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", **data_option())
    parser.add_argument("--passages", type=int, default=20000)
    parser.add_argument("--mode", choices=("cpu", "gpu"), default="cpu")
    args = parser.parse_args()
    texts = passages(Path(args.data), args.passages)
    with tempfile.TemporaryDirectory(prefix="ray-embed-") as work:
        folder = corpus(Path(work) / "corpus", texts)
        results = {engine: run(folder, engine, Path(work) / engine, args.mode) for engine in ("local", "ray")}
    local, ray = results["local"], results["ray"]
    summary = {"passages": args.passages, "mode": args.mode, "cpus": os.cpu_count(), **results,
               "overhead": round(ray["wall_seconds"] / local["wall_seconds"] - 1, 3),
               "cpu_seconds_ratio": round(ray["machine_cpu_seconds"] / local["machine_cpu_seconds"], 3)}
    print(json.dumps(summary, indent=2))
    save("ray_embed", summary)


if __name__ == "__main__":
    main()
