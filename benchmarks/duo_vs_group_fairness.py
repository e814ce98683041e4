"""Does DUO from embeddings agree with rND / rKL from gold labels? (PAIR §6 reports 0.80 / 0.83.)

For PERSPECTRUM and ProCon, two systems rank the whole corpus for every query: BM25 (PISA) and
a dense ranker (all-MiniLM-L6-v2, cosine; pm.dense_retriever, pyterrier-dr). pt.Experiment then computes, per query, over the
query's own relevant documents in ranked order (rel=1):

- Duo, with polarity from axes fitted on the query's labelled documents (resource pca:DIR),
- rND and rKL, with the gold perspective labels (resource beir:DIR),
- as a ceiling, Duo with gold polarity (+1 / -1 from the labels, resource tsv:FILE),

and the Spearman correlation over queries is reported per system, over the queries where both
measures have something to measure (at least 3 retrieved relevant documents, both perspectives).

Usage: python benchmarks/duo_vs_group_fairness.py [--data DIR, default $PAIRMEASURES_DATA] [--depth 1000]
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from _common import data_option, save


def systems(folder: Path, depth: int, workdir: Path):
    """BM25 and dense retrieval over a BEIR folder (title + text), and its topics and qrels."""
    import pairmeasures as pm
    from pairmeasures.sideinfo.polarity import read_beir

    data = read_beir(folder)
    topics = pd.DataFrame({"qid": list(data.queries), "query": [q["text"] for q in data.queries.values()]})
    qrels = data.qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    return topics, qrels, {
        "BM25 (PISA)": pm.bm25(folder, num_results=depth, text="title+text", index_dir=workdir),
        "dense (all-MiniLM-L6-v2)": pm.dense_retriever(folder, num_results=depth, text="title+text", index_dir=workdir),
    }


def eligible_queries(run: pd.DataFrame, qrels: pd.DataFrame, labels: pd.DataFrame) -> set:
    """Queries where both measures have something to measure: at least 3 retrieved relevant documents
    and both perspectives among them (so the query also has an axis: its labelled documents span both)."""
    relevant = run.merge(qrels[qrels["label"] >= 1], on=["qid", "docno"])
    labelled = relevant.merge(labels.rename(columns={"query-id": "qid", "corpus-id": "docno"}), on=["qid", "docno"])
    stats = labelled.groupby("qid").agg(documents=("docno", "size"), groups=("group", "nunique"))
    return set(stats[(stats["documents"] >= 3) & (stats["groups"] == 2)].index)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--depth", type=int, default=1000)
    args = parser.parse_args()

    import pyterrier as pt
    from scipy.stats import spearmanr

    import pairmeasures as pm
    from pairmeasures.sideinfo.polarity import default_positive

    results = {}
    with tempfile.TemporaryDirectory() as workdir:
        for dataset in ("perspectrum", "procon"):
            folder = Path(args.data) / dataset
            topics, qrels, runs = systems(folder, args.depth, Path(workdir))
            duo = pm.Duo(rel=1, polarity=f"pca:{folder}", missing="skip")  # queries without an axis: skipped, counted
            gold_file = Path(workdir) / f"{dataset}-gold-polarity.tsv"
            labels = pd.read_csv(folder / "labels.tsv", sep="\t", dtype=str)
            positive = default_positive(labels["group"])
            labels.assign(polarity=np.where(labels["group"] == positive, 1.0, -1.0))[
                ["query-id", "corpus-id", "polarity"]].to_csv(gold_file, sep="\t", index=False)
            gold_duo = pm.Duo(rel=1, polarity=f"tsv:{gold_file}")
            rnd = pm.rND(rel=1, group=f"beir:{folder}")
            rkl = pm.rKL(rel=1, group=f"beir:{folder}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
                table = pt.Experiment(list(runs.values()), topics, qrels, eval_metrics=[duo, gold_duo, rnd, rkl],
                                      names=list(runs), perquery=True)
            wide = table.pivot_table(index=["name", "qid"], columns="measure", values="value").reset_index()
            for system, transformer in runs.items():
                usable = eligible_queries(transformer(topics), qrels, labels)
                rows = wide[wide["name"] == system]
                kept = rows[rows["qid"].isin(usable)]
                entry = {"queries": int(len(kept)), "queries_left_out": int(len(rows) - len(kept))}
                for label, measure in (("duo", duo), ("duo_gold_polarity", gold_duo)):
                    for other, name in ((rnd, "rnd"), (rkl, "rkl")):
                        rho = spearmanr(kept[str(measure)], kept[str(other)]).statistic
                        entry[f"spearman_{label}_{name}"] = round(float(rho), 3)
                entry.update({f"mean_{m}": round(float(kept[str(x)].mean()), 4)
                              for m, x in (("duo", duo), ("duo_gold_polarity", gold_duo), ("rnd", rnd), ("rkl", rkl))})
                results.setdefault(dataset, {})[system] = entry
                print(f"{dataset:12s} {system:26s} over {len(kept)} queries ({len(rows) - len(kept)} left out): "
                      f"Spearman(DUO, rND) = {entry['spearman_duo_rnd']:.3f}, (DUO, rKL) = {entry['spearman_duo_rkl']:.3f}; "
                      f"with gold polarity: {entry['spearman_duo_gold_polarity_rnd']:.3f}, "
                      f"{entry['spearman_duo_gold_polarity_rkl']:.3f}")
    print("saved", save("duo_vs_group_fairness", results))


if __name__ == "__main__":
    main()
