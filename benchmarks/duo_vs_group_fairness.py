"""Does DUO from embeddings agree with rND / rKL from gold labels? (PAIR §6 reports 0.80 / 0.83.)

For PERSPECTRUM and ProCon, two systems rank the whole corpus for every query: BM25 (PISA) and
a dense ranker (all-MiniLM-L6-v2, cosine). pt.Experiment then computes, per query, over the
query's own relevant documents in ranked order (rel=1):

- Duo, with polarity from axes fitted on the query's labelled documents (resource pca:DIR),
- rND and rKL, with the gold perspective labels (resource beir:DIR),

and the Spearman correlation over queries is reported per system (queries where either
measure has nothing to measure are left out and counted).

Usage: python benchmarks/duo_vs_group_fairness.py [--data ../shared/data] [--depth 1000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from _common import save


def systems(folder: Path, depth: int, workdir: Path):
    """BM25 and dense result frames for every query of a BEIR folder."""
    import pyterrier as pt
    from pyterrier_pisa import PisaIndex

    from pairmeasures.sideinfo.embed import Embedder
    from pairmeasures.sideinfo.polarity import read_beir

    data = read_beir(folder)
    doc_ids = list(data.corpus)
    texts = [data.document_text(d, "title+text") for d in doc_ids]
    topics = pd.DataFrame({"qid": list(data.queries), "query": [q["text"] for q in data.queries.values()]})
    index = PisaIndex(str(workdir / f"{folder.name}.pisa"), text_field="text")
    if not index.built():
        index.index({"docno": d, "text": t} for d, t in zip(doc_ids, texts))
    bm25 = index.bm25(num_results=depth)(topics)[["qid", "docno", "score"]]

    embedder = Embedder()
    docs = embedder.embed(texts)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = embedder.embed(topics["query"].tolist())
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    scores = queries @ docs.T
    top = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
    dense = pd.DataFrame({"qid": np.repeat(topics["qid"].to_numpy(), top.shape[1]),
                          "docno": np.asarray(doc_ids, dtype=object)[top.ravel()],
                          "score": np.take_along_axis(scores, top, axis=1).ravel()})
    qrels = data.qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    return topics, qrels, {"BM25 (PISA)": pt.Transformer.from_df(bm25), "dense (all-MiniLM-L6-v2)": pt.Transformer.from_df(dense)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = os.environ.get("PAIRMEASURES_DATA_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--data", default=default_data)
    parser.add_argument("--depth", type=int, default=1000)
    args = parser.parse_args()

    import pyterrier as pt
    from scipy.stats import spearmanr

    import pairmeasures as pm

    results = {}
    with tempfile.TemporaryDirectory() as workdir:
        for dataset in ("perspectrum", "procon"):
            folder = Path(args.data) / dataset
            topics, qrels, runs = systems(folder, args.depth, Path(workdir))
            duo = pm.Duo(rel=1, polarity=f"pca:{folder}")
            rnd = pm.rND(rel=1, group=f"beir:{folder}")
            rkl = pm.rKL(rel=1, group=f"beir:{folder}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
                table = pt.Experiment(list(runs.values()), topics, qrels, eval_metrics=[duo, rnd, rkl],
                                      names=list(runs), perquery=True)
            wide = table.pivot_table(index=["name", "qid"], columns="measure", values="value").reset_index()
            for system in runs:
                rows = wide[wide["name"] == system]
                usable = rows[(rows[str(duo)] != 0.5) & (rows[str(rnd)] > 0) & (rows[str(rkl)] > 0)]
                rho_rnd = spearmanr(usable[str(duo)], usable[str(rnd)]).statistic
                rho_rkl = spearmanr(usable[str(duo)], usable[str(rkl)]).statistic
                results.setdefault(dataset, {})[system] = {
                    "spearman_duo_rnd": round(float(rho_rnd), 3), "spearman_duo_rkl": round(float(rho_rkl), 3),
                    "queries": int(len(usable)), "queries_left_out": int(len(rows) - len(usable)),
                    "mean_duo": round(float(rows[str(duo)].mean()), 4), "mean_rnd": round(float(rows[str(rnd)].mean()), 4),
                    "mean_rkl": round(float(rows[str(rkl)].mean()), 4),
                }
                print(f"{dataset:12s} {system:26s} Spearman(DUO, rND) = {rho_rnd:.3f}  Spearman(DUO, rKL) = {rho_rkl:.3f}"
                      f"  over {len(usable)} queries ({len(rows) - len(usable)} left out)")
    print("saved", save("duo_vs_group_fairness", results))


if __name__ == "__main__":
    main()
