"""The embedding path on a GPU (issue 34): the model's forward pass on pre-tokenized, length-sorted batches, host to
host, run twice: the **second** pass (every batch shape's kernels warmed up by the first) is the ceiling; then the
project's ``Embedder`` end to end (the Rust tokenizer in a thread ahead of the forward pass, the batch size and the
precision it chooses, no cache) and plain sentence-transformers ``encode`` at that precision, on the same MS
MARCO-length texts, with the device recorded. Target: the Embedder's end-to-end rate >= 80% of the ceiling.

Earlier (issue 34, a lent H200, fp16, 100,000 texts): the ceiling 55,811 texts/s; the Embedder with transformers'
tokenizer 7,255/s (13%); a one-process Rust-tokenizer script 28,374-30,065/s. The Embedder's rate with the Rust
tokenizer on a GPU is still to be measured: run this there and commit results/embedding_gpu.json. On a machine
without CUDA this runs on the CPU (the rates then say nothing about a GPU; benchmarks/embedding_speed.py --base
compares the CPU path with another checkout's).

Texts: ProCon arguments cut into passages of 60 words (MS MARCO passages average ~56), repeated to ``--texts``
(distinct by a number prefix, so nothing is deduplicated). Writes results/embedding_gpu.json.

Usage: python benchmarks/embedding_gpu.py [--data DIR] [--texts 50000] [--batch-size N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import data_option, save
from embedding_speed import passages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--texts", type=int, default=50_000)
    parser.add_argument("--batch-size", type=int, default=None, help="default: the Embedder's choice for the device")
    args = parser.parse_args()

    import torch

    from pairmeasures.compute.batchtokens import batch_tokenizer
    from pairmeasures.compute.embed import Embedder
    from pairmeasures.compute.encoding import encode_pipelined, forward

    base = passages(Path(args.data), 2000)
    texts = [f"{i} {base[i % len(base)]}" for i in range(args.texts)]
    cuda = torch.cuda.is_available()
    device = torch.cuda.get_device_name(0) if cuda else "cpu (no CUDA device: these rates say nothing about a GPU)"

    def synchronize() -> None:
        if cuda:
            torch.cuda.synchronize()

    embedder = Embedder(cache=False, progress=False, batch_size=args.batch_size)
    model = embedder.load()
    embedder.embed(texts[:embedder.batch_size])  # warm-up; chooses the precision on CUDA
    half = embedder.precision_used is not None and embedder.precision_used[0] == "fp16"
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    batches = [[texts[i] for i in order[s:s + embedder.batch_size]] for s in range(0, len(order), embedder.batch_size)]

    tokenize, how = batch_tokenizer(model)
    start = time.perf_counter()
    tokens = [tokenize(batch) for batch in batches]
    tokenize_s = time.perf_counter() - start
    passes = []
    for _ in range(2):  # the first pass warms every batch shape up; the second is the ceiling
        synchronize()
        start = time.perf_counter()
        for features in tokens:  # the forward pass alone, host to host (as encode_pipelined runs it)
            forward(model, features, half)
        synchronize()
        passes.append(time.perf_counter() - start)
    forward_first_s, forward_s = passes
    del tokens

    start = time.perf_counter()
    embedder.embed(texts)
    synchronize()
    embedder_s = time.perf_counter() - start
    start = time.perf_counter()
    for _ in encode_pipelined(model, batches, half=half, tokenize=tokenize, ahead=4 if cuda else 0):
        pass
    synchronize()
    pipelined_s = time.perf_counter() - start
    start = time.perf_counter()
    with torch.autocast(model.device.type, dtype=torch.float16, enabled=half):
        model.encode(texts, batch_size=embedder.batch_size, convert_to_numpy=True, show_progress_bar=False)
    synchronize()
    encode_s = time.perf_counter() - start

    n = len(texts)
    results = {
        "device": device, "cuda": cuda, "torch": torch.__version__, "texts": n, "batch_size": embedder.batch_size,
        "precision": embedder.precision_used or ("fp32", "CPU"),
        "tokenizer": how, "tokenize_alone_texts_per_s": round(n / tokenize_s, 1),
        "forward_first_pass_texts_per_s": round(n / forward_first_s, 1),
        "ceiling_forward_second_pass_texts_per_s": round(n / forward_s, 1),
        "embedder_end_to_end_texts_per_s": round(n / embedder_s, 1),
        "pipelined_encode_texts_per_s": round(n / pipelined_s, 1),
        "st_encode_texts_per_s": round(n / encode_s, 1),
        "embedder_share_of_ceiling": round(forward_s / embedder_s, 3), "target_share": 0.8,
    }
    print(results)
    print("saved", save("embedding_gpu", results))


if __name__ == "__main__":
    main()
