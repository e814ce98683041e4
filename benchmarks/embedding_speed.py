"""The project's ``Embedder`` against plain sentence-transformers ``encode`` on the same texts, side by side, in CPU
seconds (issue 25: on the CPU the Embedder must be no slower).

Texts: short (PERSPECTRUM perspectives, default 600) and MS MARCO-length (ProCon arguments cut into passages of 60
words, default 200). Each round embeds each set with both, alternately (the Embedder without a cache, its model
loaded beforehand; ``encode`` with its default batch size 32 and the same model object), so a busy machine slows both
alike; the smallest CPU time (``time.process_time``: every thread of the process) of each counts. The vectors of
both are compared (cosine). Writes results/embedding_speed.json.

With ``--base DIR`` (another checkout of pairmeasures, e.g. the main branch) it measures instead that checkout's
Embedder against this one's, side by side: each round starts one process per checkout (alternating which goes first,
``PYTHONPATH`` pointing at it), each embeds both sets once with its model loaded beforehand, and the smallest CPU time
of each side counts. Writes results/embedding_speed_vs_base.json.

Usage: python benchmarks/embedding_speed.py [--data DIR] [--short 600] [--long 200] [--rounds 3] [--base DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _common import data_option, save


def short_texts(data: Path, count: int) -> list[str]:
    with (data / "perspectrum" / "corpus.jsonl").open() as handle:
        return list(dict.fromkeys(json.loads(line)["text"] for line in handle))[:count]


def passages(data: Path, count: int, words: int = 60) -> list[str]:
    """MS MARCO-length passages (``words`` words) cut from ProCon's arguments."""
    found: list[str] = []
    with (data / "procon" / "corpus.jsonl").open() as handle:
        for line in handle:
            tokens = json.loads(line)["text"].split()
            found += [" ".join(tokens[i:i + words]) for i in range(0, len(tokens) - words + 1, words)]
            if len(found) >= count:
                break
    return list(dict.fromkeys(found))[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--short", type=int, default=600)
    parser.add_argument("--long", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", help="another pairmeasures checkout: its Embedder against this one's, side by side")
    parser.add_argument("--one-side", action="store_true", help=argparse.SUPPRESS)  # a process of --base
    args = parser.parse_args()
    if args.base:
        return against_base(args)
    if args.one_side:
        return one_side(args)

    import torch

    from pairmeasures.compute.embed import Embedder

    data = Path(args.data)
    sets = {"short": short_texts(data, args.short), "msmarco_length": passages(data, args.long)}
    embedder = Embedder(cache=False, progress=False, device="cpu")
    model = embedder.load()
    embedder.embed(["warm up"])
    model.encode(["warm up"], show_progress_bar=False)
    best = {(who, name): float("inf") for who in ("embedder", "st_encode") for name in sets}
    vectors: dict = {}
    for number in range(args.rounds):
        for name, texts in sets.items():
            for who in ("embedder", "st_encode") if number % 2 == 0 else ("st_encode", "embedder"):
                start = time.process_time()
                if who == "embedder":
                    vectors[who, name] = embedder.embed(texts)
                else:
                    vectors[who, name] = model.encode(texts, convert_to_numpy=True, show_progress_bar=False)
                best[who, name] = min(best[who, name], time.process_time() - start)
            print(f"round {number + 1} {name}: embedder {best['embedder', name]:.1f} CPU-s, st encode "
                  f"{best['st_encode', name]:.1f} CPU-s (best so far)", flush=True)
    results: dict = {"rounds": args.rounds, "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                     "batch_size": {"embedder": embedder.batch_size, "st_encode": 32}, "sets": {}}
    for name, texts in sets.items():
        a, b = vectors["embedder", name].astype(np.float64), vectors["st_encode", name].astype(np.float64)
        cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        results["sets"][name] = {
            "texts": len(texts), "mean_words": round(float(np.mean([len(t.split()) for t in texts])), 1),
            "embedder_cpu_s": round(best["embedder", name], 2), "st_encode_cpu_s": round(best["st_encode", name], 2),
            "embedder_texts_per_cpu_s": round(len(texts) / best["embedder", name], 1),
            "st_encode_texts_per_cpu_s": round(len(texts) / best["st_encode", name], 1),
            "cpu_ratio_embedder_to_st": round(best["embedder", name] / best["st_encode", name], 3),
            "cosine_min": round(float(cosine.min()), 6)}
    print(json.dumps(results, indent=1))
    print("saved", save("embedding_speed", results))


def one_side(args) -> None:
    """One process of ``--base``: the Embedder of the checkout on PYTHONPATH embeds both sets once; prints its CPU
    seconds as a JSON line. The Embedder is taken from that checkout's own files (``compute/embed.py``, or
    ``sideinfo/embed.py`` before the split): the editable install's finder would otherwise serve a module the
    checkout lacks from this one."""
    import importlib

    root = Path(os.environ["PYTHONPATH"].split(os.pathsep)[0]).resolve()
    name = next(f"pairmeasures.{place}.embed" for place in ("compute", "sideinfo")
                if (root / "pairmeasures" / place / "embed.py").is_file())
    module = importlib.import_module(name)
    if not Path(module.__file__).resolve().is_relative_to(root):
        raise SystemExit(f"--one-side imported {module.__file__}, not the checkout {root}")
    Embedder = module.Embedder

    data = Path(args.data)
    sets = {"short": short_texts(data, args.short), "msmarco_length": passages(data, args.long)}
    embedder = Embedder(cache=False, progress=False, device="cpu")
    embedder.load()
    embedder.embed(["warm up"])
    found = {}
    for name, texts in sets.items():
        start = time.process_time()
        embedder.embed(texts)
        found[name] = {"texts": len(texts), "cpu_s": time.process_time() - start}
    print(json.dumps({"sets": found, "tokenizer": getattr(embedder, "tokenizer_used", None) or "model (encode)",
                      "module": module.__file__}))


def against_base(args) -> None:
    here = str(Path(__file__).resolve().parent.parent)
    sides = {"base": str(Path(args.base).resolve()), "this": here}
    best: dict = {}
    how: dict = {}
    for number in range(args.rounds):
        for side in ("base", "this") if number % 2 == 0 else ("this", "base"):
            environment = {**os.environ, "PYTHONPATH": sides[side]}
            command = [sys.executable, __file__, "--one-side", "--data", args.data, "--short", str(args.short),
                       "--long", str(args.long)]
            out = subprocess.run(command, env=environment, capture_output=True, text=True, check=True)
            found = json.loads(out.stdout.strip().splitlines()[-1])
            how[side] = f"{found['tokenizer']} ({found['module']})"
            for name, measured in found["sets"].items():
                best[side, name] = min(best.get((side, name), float("inf")), measured["cpu_s"])
                best["texts", name] = measured["texts"]
        print(f"round {number + 1}: " + ", ".join(f"{side} {name} {best[side, name]:.2f}"
                                                  for side in sides for name in ("short", "msmarco_length")), flush=True)
    results: dict = {"rounds": args.rounds, "base": sides["base"], "this": sides["this"], "tokenizer": how, "sets": {}}
    for name in ("short", "msmarco_length"):
        results["sets"][name] = {"texts": best["texts", name], "base_cpu_s": round(best["base", name], 3),
                                 "this_cpu_s": round(best["this", name], 3),
                                 "cpu_ratio_this_to_base": round(best["this", name] / best["base", name], 3)}
    print(json.dumps(results, indent=1))
    print("saved", save("embedding_speed_vs_base", results))


if __name__ == "__main__":
    main()
