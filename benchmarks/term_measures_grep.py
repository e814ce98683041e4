"""All term-based gender measures on Grep-BiasIR through pt.Experiment, BM25 vs a dense re-ranker.

Grep-BiasIR (117 gender-neutral queries, 702 documents in female / male / neutral variants) is
indexed with PISA (title + text, as the data README advises for term-based measures). Systems:
BM25 (top 100) and BM25 >> dense re-ranking with all-MiniLM-L6-v2 (cosine; pm.bi_encoder, a
pyterrier-dr bi-encoder). pt.Experiment
reports nDCG@10 next to TExFAIR (with and without RBDF), TED, AWRF (L1, JSD), FaiRR, NFaiRR
(background: the run, and the whole collection), RaB / ARaB (tf, bool) at 10, with the built-in
gender term list. Also reported, per system:

- the per-query Pearson correlation between TExFAIR and NFaiRR (the TExFAIR paper finds
  0.34-0.55 on MS MARCO, with the collection background);
- CRBO@10 (p = 0.9): each system rebuilt on the counterfactual corpus (every gendered term
  swapped), on the original queries and on the queries with the word "woman" appended.

Usage: python benchmarks/term_measures_grep.py [--data DIR, default $PAIRMEASURES_DATA]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import warnings
from pathlib import Path

import pandas as pd
from _common import data_option, save


def short_name(measure: str) -> str:
    """The measure's name without its text resource (the same for every column)."""
    name = re.sub(r"text='[^']*',?", "", measure)
    return name.replace("()", "").replace(",)", ")")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()

    import ir_measures
    import pyterrier as pt
    from pyterrier_pisa import PisaIndex
    from scipy.stats import pearsonr

    import pairmeasures as pm
    from pairmeasures.pipelines.counterfactual import counterfactual_rbo
    from pairmeasures.sideinfo.polarity import read_beir

    folder = Path(args.data) / "grep-biasir"
    data = read_beir(folder)
    corpus = [{"docno": d, "text": data.document_text(d, "title+text")} for d in data.corpus]
    topics = pd.DataFrame({"qid": list(data.queries), "query": [q["text"] for q in data.queries.values()]})
    qrels = data.qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    encoder = pm.bi_encoder()  # pyterrier-dr, on the embedding cache: each text is embedded once across runs

    with tempfile.TemporaryDirectory() as workdir:
        built = []

        def build(documents, dense: bool):
            documents = list(documents)
            index = PisaIndex(str(Path(workdir) / f"index-{len(built)}"), text_field="text")
            index.index(documents)
            built.append(index)
            bm25 = index.bm25(num_results=args.depth)
            if not dense:
                return bm25
            texts = {d["docno"]: d["text"] for d in documents}
            return bm25 >> pt.apply.generic(lambda frame: frame.assign(text=frame["docno"].map(texts))) >> encoder

        systems = {"BM25 (PISA)": build(corpus, False), "BM25 >> dense (all-MiniLM-L6-v2)": build(corpus, True)}
        text = f"corpus:{folder}?fields=title+text"
        measures = [
            ir_measures.nDCG @ 10, pm.TExFAIR(text=text) @ 10, pm.TExFAIR(text=text, rbdf=False) @ 10,
            pm.TED(text=text) @ 10, pm.AWRF(text=text) @ 10, pm.AWRF(text=text, distance="jsd") @ 10,
            pm.FaiRR(text=text) @ 10, pm.NFaiRR(text=text) @ 10, pm.NFaiRR(text=text, background="collection") @ 10,
            pm.RaB(text=text) @ 10, pm.RaB(text=text, variant="bool") @ 10, pm.ARaB(text=text) @ 10,
        ]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
            table = pt.Experiment(list(systems.values()), topics, qrels, eval_metrics=measures, names=list(systems))
            per_query = pt.Experiment(list(systems.values()), topics, qrels, eval_metrics=measures,
                                      names=list(systems), perquery=True)
        table = table[["name"] + [str(m) for m in measures]].rename(columns=short_name)
        wide = per_query.assign(measure=per_query["measure"].map(short_name))
        wide = wide.pivot_table(index=["name", "qid"], columns="measure", values="value").reset_index()

        results = {"queries": len(topics), "documents": len(corpus), "depth": args.depth,
                   "table": table.round(4).to_dict(orient="records"), "systems": {}}
        for name in systems:
            rows = wide[wide["name"] == name]
            entry = {}
            for background, nfairr in (("run", measures[7]), ("collection", measures[8])):
                r = pearsonr(rows[short_name(str(measures[1]))], rows[short_name(str(nfairr))])
                entry[f"pearson_texfair_nfairr_{background}_background"] = round(float(r.statistic), 3)
                entry[f"pearson_p_value_{background}_background"] = float(f"{r.pvalue:.3g}")
            dense = "dense" in name
            for label, queries in (("original_queries", topics),
                                   ("queries_plus_woman", topics.assign(query=topics["query"] + " woman"))):
                crbo = counterfactual_rbo(lambda documents, dense=dense: build(documents, dense), corpus, queries, p=0.9,
                                          depth=10)
                entry[f"crbo10_{label}"] = round(crbo.mean, 4)
            results["systems"][name] = entry

    from pairmeasures.apps.tables import render

    print(render(table.round(4), "markdown"))
    for name, entry in results["systems"].items():
        print(f"{name}: Pearson(TExFAIR, NFaiRR) per query = {entry['pearson_texfair_nfairr_run_background']:.3f} "
              f"(run background), {entry['pearson_texfair_nfairr_collection_background']:.3f} (collection); "
              f"CRBO@10 = {entry['crbo10_original_queries']:.4f} (original queries), "
              f"{entry['crbo10_queries_plus_woman']:.4f} (+ 'woman')")
    print("saved", save("term_measures_grep", results))


if __name__ == "__main__":
    main()
