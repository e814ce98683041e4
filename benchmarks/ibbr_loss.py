"""The IBBR fairness term's added time per training step over the ranking loss alone (target: at most 15%).

One training step = encode a batch of B (query, positive, K negatives) with the offline all-MiniLM-L6-v2, the loss,
backward, an AdamW step. Steps with the full IBBRLoss (PD and TS, fixed and learned λ) alternate with steps whose
loss is the ranking term only, in the same run on the same batch; the medians are compared. The fairness term is
also timed alone on the batch's score matrix (forward + backward), which is what it adds in principle.

    PYTHONPATH=. python benchmarks/ibbr_loss.py [--batch-size 32] [--negatives 4] [--steps 2] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

from _common import save


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--negatives", type=int, default=4)
    parser.add_argument("--steps", type=int, default=2, help="timed steps per variant (after one warm-up each)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from pairmeasures.compute.embed import default_model_path
    from pairmeasures.train.ibbr import IBBRLoss, normed_prf, ranking_loss, t_statistic_loss

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = SentenceTransformer(str(default_model_path()), device="cpu")
    model.train()
    batch, k = args.batch_size, args.negatives
    words = "the a nurse engineer said that she he worked on a project about rivers cities music history".split()

    def sentence(seed: int, length: int) -> str:
        return " ".join(words[(seed * 7 + i * 3) % len(words)] for i in range(length))

    columns = [[sentence(row + 100 * column, 8 if column == 0 else 40) for row in range(batch)]
               for column in range(2 + k)]
    features = [model.tokenize(texts) for texts in columns]
    labels = torch.tensor([1, -1, 0, 1] * (batch // 4) + [1] * (batch % 4))
    variants = {"pd": IBBRLoss(model, fairness="pd", lambda_=1.0, scale=20.0),
                "ts": IBBRLoss(model, fairness="ts", lambda_=1.0, scale=20.0),
                "ts-auto": IBBRLoss(model, fairness="ts", lambda_="auto", scale=20.0)}
    optimizers = {name: torch.optim.AdamW(loss.parameters(), lr=1e-6) for name, loss in variants.items()}

    def ranking_only() -> torch.Tensor:
        embeddings = [model(dict(f))["sentence_embedding"] for f in features]
        scores = torch.einsum("bd,bkd->bk", embeddings[0], torch.stack(embeddings[1:], dim=1))
        return ranking_loss(scores, 20.0)

    def step(name: str) -> float:
        optimizer = optimizers["ts" if name == "ranking" else name]
        start = time.perf_counter()
        if name == "ranking":
            loss = ranking_only()
        else:
            loss = torch.stack(list(variants[name]([dict(f) for f in features], labels).values())).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return time.perf_counter() - start

    order = ["ranking", *variants]
    times: dict[str, list[float]] = {name: [] for name in order}
    for name in order:
        step(name)  # warm-up
    for _ in range(args.steps):
        for name in order:
            times[name].append(step(name))
    medians = {name: statistics.median(values) for name, values in times.items()}

    scores = torch.randn(batch, 1 + k, requires_grad=True)
    repeat = 2000
    start = time.perf_counter()
    for _ in range(repeat):
        value = t_statistic_loss(normed_prf(scores), labels)
        assert value is not None
        value.backward()
    term_alone = (time.perf_counter() - start) / repeat

    results = {
        "batch_size": batch, "negatives": k, "texts_per_step": batch * (2 + k), "threads": args.threads,
        "steps_per_variant": args.steps, "device": "cpu", "model": "all-MiniLM-L6-v2",
        "step_seconds_median": {name: round(value, 4) for name, value in medians.items()},
        "overhead_vs_ranking_only": {name: round(medians[name] / medians["ranking"] - 1, 4) for name in variants},
        "fairness_term_alone_ms": round(term_alone * 1e3, 4),
        "fairness_term_alone_share_of_step": round(term_alone / medians["ranking"], 6),
        "target_overhead": 0.15,
    }
    for name in order:
        line = f"{name:8s} median step {medians[name]:.3f} s"
        if name != "ranking":
            line += f"  overhead {results['overhead_vs_ranking_only'][name]:+.1%}"
        print(line)
    print(f"TS term alone (forward+backward on the {batch}x{1 + k} scores): {term_alone * 1e3:.3f} ms")
    print(save("ibbr_loss", results))


if __name__ == "__main__":
    main()
