"""`pairmeasures embed`: the local engine against the Ray engine on this machine, measured side by side.

Each engine embeds the same passages (PERSPECTRUM, ProCon, Grep-BiasIR and Wiki-Balance texts, numbered copies
added until ``--passages`` distinct texts) as a user runs it: ``pairmeasures embed DIR --engine local|ray --json
--no-index`` in a fresh process with an empty cache. Recorded per engine: wall seconds (the Ray engine's include
starting its local Ray and the actors' model loading), texts per second, and the CPU seconds the whole machine
spent meanwhile (from /proc/stat: the Ray engine's raylet, GCS and actor processes are not the command's
children, so the command's own rusage would miss them; other load on the machine counts too, so read it beside
the wall time). ``overhead``: Ray's wall time over the local engine's, minus 1.

``--mode gpu`` (on a machine with a CUDA GPU): MS MARCO-length passages (60 words cut from ProCon's arguments,
numbered copies) embedded in this process, by the engines' own functions: the single-process GPU path (an
``Embedder`` filling a fresh cache: tokenizing in threads ahead of the forward pass, fp16 where it agrees) against
the Ray pool (``RayPool.embed`` into a fresh cache: Ray started, actors loaded, shards written and merged by this
process) with each ``--tokenizers`` count (0: the GPU actor tokenizes in its own threads; N: N CPU actors tokenize
ahead of it). Recorded: wall seconds (Ray's include its start and the actors' model loading), the steady rate
between the first and the last shard merged, the device, and how far the Ray vectors are from the single-process
ones. Writes results/ray_embed_gpu.json. Usage:

    PAIRMEASURES_DATA=/work/shared/data python benchmarks/ray_embed.py --passages 20000
    python benchmarks/ray_embed.py --mode gpu --passages 200000 --tokenizers 0 4 8 12
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


def run(folder: Path, engine: str, cache: Path) -> dict:
    environment = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
                   "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "PYTHONPATH": str(CHECKOUT)}
    environment["CUDA_VISIBLE_DEVICES"] = ""  # --mode cpu: the CPU engines, also on a machine with a GPU
    cpu, start = machine_cpu_seconds(), time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pairmeasures", "embed", str(folder), "--engine", engine,
                             "--json", "--no-index"], env=environment, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, machine_cpu_seconds() - cpu
    if result.returncode:
        raise SystemExit(f"{engine}: {result.stderr[-3000:]}")
    report = json.loads(result.stdout)
    return {"wall_seconds": round(wall, 2), "machine_cpu_seconds": round(cpu, 2),
            "texts_per_second": round(report["texts"] / wall, 2), "report": report}


def gpu(texts: list, tokenizer_counts: list, work: Path) -> dict:
    """The single-process GPU path against the Ray pool with each count of tokenizing actors (docstring)."""
    import numpy as np
    import torch

    from pairmeasures.compute.cache import EmbeddingCache, text_key
    from pairmeasures.compute.embed import Embedder
    from pairmeasures.compute.raypool import RayPool

    keys = [text_key(t) for t in texts]
    warm = [f"warm-up {i} {t}" for i, t in enumerate(texts[:512])]
    local = Embedder(cache=EmbeddingCache(work / "local.sqlite"), progress=False)
    local.embed(warm)  # the model loaded, kernels chosen, the precision measured: what a long run amortises
    cpu, start = machine_cpu_seconds(), time.perf_counter()
    reference = local.embed(texts)
    out: dict = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
                 "torch": torch.__version__, "passages": len(texts), "cpus": os.cpu_count(),
                 "local": {"wall_seconds": round(time.perf_counter() - start, 2),
                           "machine_cpu_seconds": round(machine_cpu_seconds() - cpu, 2),
                           "precision": local.precision_used, "batch_size": local.batch_size}}
    out["local"]["texts_per_second"] = round(len(texts) / out["local"]["wall_seconds"], 1)
    for count in tokenizer_counts:
        embedder = Embedder(cache=EmbeddingCache(work / f"ray-{count}.sqlite"), progress=False)
        merged: list = []
        cpu, start = machine_cpu_seconds(), time.perf_counter()
        with RayPool(num_cpus=os.cpu_count(), tokenizers=count, work=work / f"shards-{count}") as pool:
            rows = pool.embed(embedder, keys, texts, progress=lambda n, merged=merged: merged.append((time.perf_counter(), n)))
            shape = {"gpu_actors": pool.workers, "tokenizing_actors": pool.tokenizers}
        wall = time.perf_counter() - start
        found = embedder.cache.get(embedder.key, keys[:5000])
        vectors = np.stack([found[k] for k in keys[:5000]])
        near = reference[:5000].astype(np.float64)
        cosine = np.sum(near * vectors, 1) / (np.linalg.norm(near, axis=1) * np.linalg.norm(vectors, axis=1))
        steady = (sum(n for _, n in merged[1:]) / (merged[-1][0] - merged[0][0])) if len(merged) > 2 else None
        out[f"ray_tokenizers_{count}"] = {
            **shape, "rows": rows, "wall_seconds": round(wall, 2), "texts_per_second": round(len(texts) / wall, 1),
            "steady_texts_per_second": None if steady is None else round(steady, 1),
            "first_shard_after_seconds": round(merged[0][0] - start, 2) if merged else None,
            "machine_cpu_seconds": round(machine_cpu_seconds() - cpu, 2),
            "max_abs_difference_to_local": float(np.max(np.abs(vectors - reference[:5000]))),
            "min_cosine_to_local": float(np.min(cosine))}
        print(json.dumps({count: out[f"ray_tokenizers_{count}"]}), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", **data_option())
    parser.add_argument("--passages", type=int, default=20000)
    parser.add_argument("--mode", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--tokenizers", type=int, nargs="+", default=[0, 4, 8],
                        help="with --mode gpu: the counts of tokenizing actors to measure")
    args = parser.parse_args()
    if args.mode == "gpu":
        from embedding_speed import passages as msmarco_length

        base = msmarco_length(Path(args.data), 4000)
        texts = [f"{i} {base[i % len(base)]}" for i in range(args.passages)]
        with tempfile.TemporaryDirectory(prefix="ray-embed-gpu-") as work:
            summary = gpu(texts, args.tokenizers, Path(work))
        print(json.dumps(summary, indent=2))
        print("saved", save("ray_embed_gpu", summary))
        return
    texts = passages(Path(args.data), args.passages)
    with tempfile.TemporaryDirectory(prefix="ray-embed-") as work:
        folder = corpus(Path(work) / "corpus", texts)
        results = {engine: run(folder, engine, Path(work) / engine) for engine in ("local", "ray")}
    local, ray = results["local"], results["ray"]
    summary = {"passages": args.passages, "mode": args.mode, "cpus": os.cpu_count(), **results,
               "overhead": round(ray["wall_seconds"] / local["wall_seconds"] - 1, 3),
               "cpu_seconds_ratio": round(ray["machine_cpu_seconds"] / local["machine_cpu_seconds"], 3)}
    print(json.dumps(summary, indent=2))
    save("ray_embed", summary)


if __name__ == "__main__":
    main()
