"""IBBR's Table 1 on Grep-BiasIR: ranking and fairness before and after training with λ = 0, L_PD and L_TS.

Two steps, each a command (the training step runs anywhere train-ibbr runs: CUDA when present, else CPU):

    PYTHONPATH=. python benchmarks/ibbr_grep_biasir.py train --data DIR --negatives-run BM25.trec --work WORK \
        [--seeds 0 1 2] [--jobs 6] [--base MODEL]
    PYTHONPATH=. python benchmarks/ibbr_grep_biasir.py evaluate --data DIR --work WORK

``train`` runs ``pairmeasures train-ibbr`` once per variant and seed on the training queries (everything but the
fixed held-out split ``benchmarks/data/ibbr_grep_biasir_held_out.txt``; its header says how it was drawn), with
the gold gender labels of the positives and K = 3 negatives mined from a BM25 run of the corpus. It then ranks the
held-out queries with each model and with the untrained base (bi-encoder dot products of title + text, as the
audit's ``dense`` stage scores them): ``rerank`` re-orders the BM25 run's candidates (the paper's setting),
``dense`` retrieves the top 100 of the whole corpus. Runs and training records go to WORK.

``evaluate`` audits every run on the held-out queries with ``pairmeasures audit --queries`` (Recall@10, MRR@10,
nDCG@10, RaB@5, RaB@10 and |ΔA-PRF| from the gold labels, with bootstrap intervals) and writes the table, averaged
over seeds with a paired bootstrap of each variant's difference to the base, to results/ibbr_grep_biasir.{json,md}.
"""

# make benchmarks: skip (it trains 30 models; run its two steps by hand, as above)
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import RESULTS, save

HERE = Path(__file__).resolve().parent
HELD_OUT = HERE / "data" / "ibbr_grep_biasir_held_out.txt"
TEXT = "title+text"
#: Variant name -> train-ibbr options (λ = 0 is the ranking loss alone).
VARIANTS = {
    "lambda0": ["--fairness", "none"],
    "pd-1": ["--fairness", "pd", "--lambda", "1"],
    "pd-10": ["--fairness", "pd", "--lambda", "10"],
    "pd-auto": ["--fairness", "pd", "--lambda", "auto"],
    "ts-1": ["--fairness", "ts", "--lambda", "1"],
    "ts-auto": ["--fairness", "ts", "--lambda", "auto"],
}
RECIPE = ["--labels", "group", "--text", TEXT, "--negatives", "3", "--batch-size", "32", "--lr", "3e-5", "--no-progress"]
MEASURES = ["R@10", "RR@10", "nDCG@10", "RaB@5", "RaB@10"]
KINDS = ("rerank", "dense")
_TRAIN_IBBR = ("import argparse, sys; from pairmeasures.apps.commands import train_ibbr; parser = argparse.ArgumentParser(); "
               "train_ibbr.add_arguments(parser); sys.exit(train_ibbr.run(parser.parse_args()))")


def _held_out() -> list[str]:
    from pairmeasures.io.runfiles import read_query_ids

    return sorted(read_query_ids(HELD_OUT), key=int)


def _train_one(args, name: str, seed: int) -> dict:
    out = args.work / "models" / f"{name}-s{seed}"
    options = [str(args.data), "--out", str(out), "--force",
               "--held-out", str(HELD_OUT), "--negatives-run", str(args.negatives_run), "--seed", str(seed),
               "--epochs", str(args.epochs), *RECIPE, *VARIANTS[name]] + (["--base", str(args.base)] if args.base else [])
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "TOKENIZERS_PARALLELISM": "false"}
    started = time.perf_counter()
    # The train-ibbr command itself, without the rest of the CLI (whose help imports PyTerrier, which a bare GPU
    # machine may lack).
    done = subprocess.run([sys.executable, "-c", _TRAIN_IBBR, *options], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"{name} seed {seed} failed:\n{done.stderr[-3000:]}")
    print(f"trained {name} seed {seed} in {time.perf_counter() - started:.0f} s", flush=True)
    return {"name": name, "seed": seed, "model": out,
            "command": ["pairmeasures", "train-ibbr", *options]}


def _write_runs(model_path, label: str, args, folder, candidates) -> None:
    """The held-out queries ranked by ``model_path``: re-ranked BM25 candidates and dense top 100."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_path))
    doc_ids = list(folder.corpus)
    docs = model.encode([folder.document_text(d, TEXT) for d in doc_ids], batch_size=128, convert_to_numpy=True)
    queries = _held_out()
    vectors = model.encode([folder.queries[q]["text"] for q in queries], batch_size=128, convert_to_numpy=True)
    scores = vectors @ docs.T
    position = {d: i for i, d in enumerate(doc_ids)}
    runs = args.work / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:
        lines = []
        for row, query in enumerate(queries):
            if kind == "rerank":
                ranked = [(d, float(scores[row, position[d]])) for d in candidates.get(query, [])]
            else:
                top = np.argsort(-scores[row], kind="stable")[:100]
                ranked = [(doc_ids[i], float(scores[row, i])) for i in top]
            ranked.sort(key=lambda item: (-item[1], item[0]))
            lines += [f"{query} Q0 {d} {rank} {score!r} {label}" for rank, (d, score) in enumerate(ranked, 1)]
        (runs / f"{kind}-{label}.trec").write_text("\n".join(lines) + "\n")


def train(args) -> None:
    from pairmeasures.compute.embed import default_model_path
    from pairmeasures.io.beir import read_beir
    from pairmeasures.io.runfiles import read_run_file

    folder = read_beir(args.data)
    bm25 = read_run_file(str(args.negatives_run))
    candidates = {q: list(group["doc_id"]) for q, group in bm25.groupby("query_id")}
    jobs = [(name, seed) for seed in args.seeds for name in args.variants]
    started = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        trained = list(pool.map(lambda job: _train_one(args, *job), jobs))
    training_seconds = time.perf_counter() - started
    _write_runs(args.base or default_model_path(), "base", args, folder, candidates)
    records = args.work / "training"
    records.mkdir(parents=True, exist_ok=True)
    for item in trained:
        label = f"{item['name']}-s{item['seed']}"
        _write_runs(item["model"], label, args, folder, candidates)
        record = json.loads((item["model"] / "training.json").read_text())
        record["losses"].pop("history", None)
        record = {**{k: v for k, v in item.items() if k != "model"}, "training": record,
                  "batch": {"trainings": len(trained), "jobs": args.jobs, "seconds": round(training_seconds, 1)}}
        (records / f"{label}.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    print(f"{len(trained)} models in {training_seconds:.0f} s; runs in {args.work / 'runs'}")


def _audit(args, kind: str, labels: list[str]) -> Path:
    """``pairmeasures audit`` of the held-out queries over every run of ``kind`` (base first, the baseline)."""
    out = args.work / f"audit-{kind}"
    command = ["pairmeasures", "audit", "--dataset", str(args.data), "--queries", str(HELD_OUT), "--systems",
               *[f"run:{args.work / 'runs' / f'{kind}-{label}.trec'}" for label in labels], "--names", *labels,
               "--measures", *MEASURES, "--resamples", str(args.resamples), "--out", str(out), "--force"]
    subprocess.run([sys.executable, "-m", *command], check=True, capture_output=True, text=True)
    return out


def _prf_values(args, runs: dict, queries: list[str]):
    """Per run, the (queries, 2) per-query PRF_m and PRF_f (NaN where the query is in neither T_g) from gold labels."""
    import ir_measures
    import numpy as np

    import pairmeasures as pm
    from pairmeasures.io.runfiles import read_qrels_file, read_run_file

    qrels = read_qrels_file(str(args.data / "qrels" / "test.tsv"))
    qrels = qrels[qrels["query_id"].isin(set(queries))]
    group = f"beir:{args.data}"
    measures = [pm.PRF(labels="group", group=group, of=g, missing="skip") for g in ("male", "female")]
    row = {q: i for i, q in enumerate(queries)}
    values = {}
    with warnings.catch_warnings():  # queries in neither T_m nor T_f are counted below, per group
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        for label, path in runs.items():
            array = np.full((len(queries), 2), np.nan)
            for m in ir_measures.iter_calc(measures, qrels, read_run_file(str(path))):
                array[row[m.query_id], measures.index(m.measure)] = m.value
            values[label] = array
    return values


def _delta_a_prf(values, weights):
    """|ΔA-PRF| of each weighting of the queries (rows of ``weights``): |mean PRF_m over T_m - mean PRF_f over T_f|."""
    import numpy as np

    measured = ~np.isnan(values)
    sums = weights @ np.where(measured, values, 0.0)
    counts = weights @ measured.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    return np.abs(means[:, 0] - means[:, 1])


def _variant_table(args, kind: str, labels: list[str], variants: dict) -> list[dict]:
    """One row per variant (seeds averaged per query): mean, paired bootstrap CI of the difference to the base."""
    import numpy as np
    import pandas as pd

    from pairmeasures.analysis.bootstrap import paired_bootstrap

    queries = _held_out()
    per_query = pd.read_csv(_audit(args, kind, labels) / "per_query.csv", dtype={"qid": str})
    runs = {label: args.work / "runs" / f"{kind}-{label}.trec" for label in labels}
    prf = _prf_values(args, runs, queries)
    rng = np.random.default_rng(0)
    draws = rng.multinomial(len(queries), np.full(len(queries), 1 / len(queries)), size=args.resamples).astype(float)
    rows = []
    for variant, members in variants.items():
        row = {"variant": variant, "seeds": len(members)}
        for measure in MEASURES:
            table = per_query[per_query["measure"] == measure].pivot(index="system", columns="qid", values="value")
            table = table.reindex(columns=queries)
            both = np.vstack([table.loc[["base"]].to_numpy(), table.loc[members].to_numpy().mean(axis=0, keepdims=True)])
            result = paired_bootstrap(both, baseline=0, resamples=args.resamples, seed=0)
            row[measure] = float(result["mean"][1])
            if variant != "base":
                row[f"{measure} diff"] = [float(result["diff"][1]), float(result["diff_low"][1]),
                                          float(result["diff_high"][1])]
        observed = np.mean([_delta_a_prf(prf[m], np.ones((1, len(queries))))[0] for m in members])
        resampled = np.mean([_delta_a_prf(prf[m], draws) for m in members], axis=0)
        base_resampled = _delta_a_prf(prf["base"], draws)
        row["|ΔA-PRF|"] = float(observed)
        row["T_m, T_f"] = [int(n) for n in (~np.isnan(prf[members[0]])).sum(axis=0)]
        row["|ΔA-PRF| per seed"] = [float(_delta_a_prf(prf[m], np.ones((1, len(queries))))[0]) for m in members]
        if variant != "base":
            difference = resampled - base_resampled
            base_value = _delta_a_prf(prf["base"], np.ones((1, len(queries))))[0]
            row["|ΔA-PRF| diff"] = [float(observed - base_value), *map(float, np.nanpercentile(difference, [2.5, 97.5]))]
        rows.append(row)
    return rows


def _markdown(rows: list[dict]) -> str:
    header = "| variant | seeds | " + " | ".join(MEASURES) + " | \\|ΔA-PRF\\| |"
    lines = [header, "|" + "---|" * (len(MEASURES) + 3)]
    for row in rows:
        cells = []
        for measure in [*MEASURES, "|ΔA-PRF|"]:
            cell = f"{row[measure]:.3f}"
            if f"{measure} diff" in row:
                diff, low, high = row[f"{measure} diff"]
                cell += f" ({diff:+.3f} [{low:+.3f}, {high:+.3f}])"
            cells.append(cell)
        lines.append(f"| {row['variant']} | {row['seeds']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def evaluate(args) -> None:
    runs = sorted((json.loads(path.read_text()) for path in (args.work / "training").glob("*.json")),
                  key=lambda r: (list(VARIANTS).index(r["name"]), r["seed"]))
    trained = [f"{r['name']}-s{r['seed']}" for r in runs]
    variants = {"base": ["base"], **{name: [f"{name}-s{r['seed']}" for r in runs if r["name"] == name]
                                     for name in VARIANTS if any(r["name"] == name for r in runs)}}
    tables = {kind: _variant_table(args, kind, ["base", *trained], variants) for kind in KINDS}
    first = runs[0]
    recipe = {key: first["training"]["recipe"][key] for key in ("base", "negatives", "batch_size", "epochs",
                                                                 "learning_rate", "warmup_ratio", "weight_decay",
                                                                 "device")}
    record = {
        "held_out_file": str(HELD_OUT.relative_to(HERE.parent)), "held_out_queries": len(_held_out()),
        "training_queries": first["training"]["data"]["queries"], "data_pairs": first["training"]["data"]["pairs"],
        "recipe": recipe, "steps": first["training"]["losses"]["steps"], "variants": VARIANTS,
        "train_commands": {f"{r['name']}-s{r['seed']}": " ".join(r["command"]) for r in runs},
        "final_lambda": {f"{r['name']}-s{r['seed']}": r["training"]["losses"]["final_lambda"] for r in runs},
        "degenerate_batches": {f"{r['name']}-s{r['seed']}": r["training"]["losses"]["degenerate_batches"]
                               for r in runs},
        "training_seconds": {f"{r['name']}-s{r['seed']}": r["training"]["seconds"] for r in runs},
        "training_batches": sorted({json.dumps(r["batch"]) for r in runs}),
        "resamples": args.resamples, "tables": tables,
    }
    save("ibbr_grep_biasir", record)
    text = "\n\n".join(f"{kind}:\n\n{_markdown(rows)}" for kind, rows in tables.items())
    (RESULTS / "ibbr_grep_biasir.md").write_text(text + "\n")
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    training = steps.add_parser("train", help="train every variant and seed, then rank the held-out queries")
    training.add_argument("--data", type=Path, required=True, help="the grep-biasir folder of shared/data")
    training.add_argument("--negatives-run", type=Path, required=True, help="a BM25 run of every query (TREC)")
    training.add_argument("--work", type=Path, required=True)
    training.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    training.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    training.add_argument("--epochs", type=float, default=10.0)
    training.add_argument("--jobs", type=int, default=1, help="trainings at once")
    training.add_argument("--threads", type=int, default=2, help="CPU threads per training")
    training.add_argument("--base", type=Path, default=None, help="base model folder (default: offline MiniLM)")
    evaluation = steps.add_parser("evaluate", help="audit the runs on the held-out queries; write the table")
    evaluation.add_argument("--data", type=Path, required=True)
    evaluation.add_argument("--work", type=Path, required=True)
    evaluation.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    if args.step == "train":
        train(args)
    else:
        evaluate(args)


if __name__ == "__main__":
    main()
