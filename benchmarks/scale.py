"""How an audit's cost grows with the corpus: MS MARCO-length synthetic corpora of 10k, 100k and 300k (or 1M)
passages, QS1's 1,765 queries with top-1000 BM25 runs, every stage timed in CPU seconds and peak memory.

Corpus: passages of ~57 words (MS MARCO passage's mean is 56-58), each joined from random PERSPECTRUM texts and,
one in four, a QS1 query's text (so the queries' words occur), written as a BEIR-layout folder with QS1's queries
(one random judged passage each) and ``female``/``male`` labels on two passages per query (so the gender term
list applies, as for the MS MARCO gender sets). Seeded: the same corpus every time.

Each stage runs in its own process (``--stage``), measured from outside with ``os.wait4``: CPU seconds (user +
system, the process and its threads) and peak RSS of that process; inside, the CPU seconds of the step alone
(imports aside). Stages, in order, with one cache folder per corpus:

- ``store``: the first open of the folder: ``corpus.jsonl`` read once into the on-disk document store;
- ``profile``: what an audit loads (queries, qrels, labels, the sha256 of the files), the store built;
- ``index``: PISA's BM25 index, built from the store's document stream (one thread);
- ``retrieve``: BM25 top 1000 for every query;
- ``annotate``: the audit's run annotation (every row's text looked up by id, gold labels);
- ``evaluate``: nDCG@10, RR@10, NFaiRR@10, TExFAIR@10, RaB@10 and ARaB@10 over the annotated run, as the audit
  evaluates them (``evaluation.per_query``: the run cut to the deepest rank the measures read, 10), NFaiRR's ideal
  over the collection as the MS MARCO gender audits take it (``background='collection'``; the default background,
  the run's retrieved documents, reads every row and is evaluated uncut);
- ``evaluate-whole``: the same without the cut (every measure over the whole run: the audit before the cut);
- ``audit``: ``pairmeasures audit --systems bm25`` end to end over the same cache (the store and index found, the
  run computed), the measures above, 1,000 bootstrap resamples, at ``--audit-depth`` (default 100: the audit's
  cut-off curves and plots cost per ranked row, not per corpus passage; 1000 is the full depth);
- ``resources-first``, ``resources-read``, ``resources``: measures whose side information names the folder, as
  ``pairmeasures eval`` evaluates them (no profile, no index): ``EXP(group='beir:DIR')@10`` (group exposure),
  ``TExFAIR(text='corpus:DIR')@10``, ``NFaiRR(background='collection', text='corpus:DIR')@10`` over a seeded run of
  every query (its judged passage, its two labelled ones and seven random ones) and
  ``Duo(polarity='pca:DIR?positive=female')@10`` over its first 20 queries. ``resources`` reads the folder as the
  package does (the store the ``store`` stage built, texts fetched by id); ``resources-read`` is the baseline, the
  same resources built as before, from ``read_beir``'s whole corpus in memory (``_whole_corpus.py``), in the same
  run; ``resources-first`` is ``resources`` run first, on the size's new cache folder (it embeds the polarity
  texts, which the other two then find cached, so that they compare reading, not embedding). The values of ``resources`` and
  ``resources-read`` must be equal, else the run stops.

Growth exponents are least-squares slopes of log(cost) on log(passages), and each stage is extrapolated to MS
MARCO's 8,841,823 passages as ``a * N**b`` fitted on the measured sizes. Embedding is not in the sweep (its cost is
per measured text, not per corpus text): ``--embed N`` times the audit's Embedder on N passages and records its
rate per CPU-second.

Writes results/scale.json and results/scale.md.

Usage: python benchmarks/scale.py [--sizes 10000 100000 300000] [--stages ...] [--add] [--work DIR] [--embed 256]
[--data DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import RESULTS, data_option, save

from pairmeasures._owned import WorkFolder, claim_folder, remove_folder

MSMARCO_PASSAGES = 8_841_823
WORDS = 57
MEASURES = ["nDCG@10", "RR@10", "NFaiRR@10", "TExFAIR@10", "RaB@10", "ARaB@10"]
STAGES = ["store", "profile", "index", "retrieve", "annotate", "evaluate", "evaluate-whole", "audit", "resources-first",
          "resources-read", "resources"]
#: The stages that evaluate measures naming the folder as a resource (``resource_stage``).
RESOURCE_STAGES = ("resources-first", "resources-read", "resources")
#: Queries whose Duo@10 the resource stages evaluate with ``pca:DIR`` (their fit and ranked texts are embedded).
POLARITY_QUERIES = 20


def write_corpus(data: Path, folder: Path, size: int, seed: int = 0) -> int:
    """The synthetic BEIR folder of ``size`` passages (see the module docstring); returns the number of queries."""
    rng = random.Random(seed)
    pieces = [json.loads(line)["text"] for line in (data / "perspectrum" / "corpus.jsonl").open(encoding="utf-8")]
    rows = [line.rstrip("\n").split("\t") for line in (data / "msmarco-gender" / "qs1_queries.tsv").open(encoding="utf-8")]
    queries = dict(rows[1:])
    questions = list(queries.values())
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for number in range(size):
            words: list = []
            if number % 4 == 0:
                words += rng.choice(questions).split()
            while len(words) < WORDS:
                words += rng.choice(pieces).split()
            out.write(json.dumps({"_id": f"p{number}", "title": "", "text": " ".join(words[:WORDS + rng.randint(-8, 8)])})
                      + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as out:
        for qid, text in queries.items():
            out.write(json.dumps({"_id": qid, "text": text}) + "\n")
    with (folder / "qrels" / "test.tsv").open("w") as qrels, (folder / "labels.tsv").open("w") as labels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        labels.write("query-id\tcorpus-id\tgroup\n")
        for qid in queries:
            qrels.write(f"{qid}\tp{rng.randrange(size)}\t1\n")
            first, second = rng.sample(range(size), 2)
            labels.write(f"{qid}\tp{first}\tfemale\n{qid}\tp{second}\tmale\n")
    return len(queries)


def resource_run(folder: Path, passages: int, seed: int = 0) -> tuple:
    """``(qrels, run)`` of the resource stages: per query its judged passage, its two labelled passages and seven
    random ones (seeded), scored at random."""
    import numpy as np
    import pandas as pd

    qrels = pd.read_csv(folder / "qrels" / "test.tsv", sep="\t", dtype=str)
    labels = pd.read_csv(folder / "labels.tsv", sep="\t", dtype=str)
    rng = np.random.default_rng(seed)
    queries = qrels["query-id"].unique()
    extra = pd.DataFrame({"query-id": np.repeat(queries, 7),
                          "corpus-id": [f"p{n}" for n in rng.integers(0, passages, 7 * len(queries))]})
    pairs = pd.concat([qrels[["query-id", "corpus-id"]], labels[["query-id", "corpus-id"]], extra]).drop_duplicates()
    run = pd.DataFrame({"query_id": pairs["query-id"].to_numpy(), "doc_id": pairs["corpus-id"].to_numpy(),
                        "score": rng.random(len(pairs))})
    qrels = pd.DataFrame({"query_id": qrels["query-id"], "doc_id": qrels["corpus-id"],
                          "relevance": qrels["score"].astype(int)})
    return qrels, run


def resource_stage(name: str, folder: Path, passages: int) -> dict:
    """The measures of the resource stages (module docstring), through the package's resources or, for
    ``resources-read``, through those built from ``read_beir`` (``wholebeir:``...)."""
    import warnings

    import ir_measures

    from pairmeasures.measures.parsing import parse_measures

    qrels, run = resource_run(folder, passages)
    start = time.process_time()
    prefix = ""
    if name == "resources-read":
        from _whole_corpus import register_whole_corpus_schemes

        register_whole_corpus_schemes()
        prefix = "whole"
    names = [f"EXP(group='{prefix}beir:{folder}')@10", f"TExFAIR(text='{prefix}corpus:{folder}')@10",
             f"NFaiRR(background='collection',text='{prefix}corpus:{folder}')@10"]
    polarity = f"Duo(polarity='{prefix}pca:{folder}?positive=female')@10"
    few = set(run["query_id"].unique()[:POLARITY_QUERIES])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate queries and documents without labels: the same in both
        values = ir_measures.calc_aggregate(parse_measures(names), qrels, run)
        values.update(ir_measures.calc_aggregate(parse_measures([polarity]), qrels[qrels["query_id"].isin(few)],
                                                 run[run["query_id"].isin(few)]))
    spent = time.process_time() - start
    return {"step_cpu_s": spent, "rows": len(run), "polarity_queries": len(few),
            "values": {str(m).replace(f"{prefix}beir:", "beir:").replace(f"{prefix}corpus:", "corpus:")
                       .replace(f"{prefix}pca:", "pca:").replace(str(folder), "DIR"): float(v) for m, v in values.items()}}


#: A size's folder under --work (``n<size>``): the corpus, its cache, the run, the audit and the stages' reports,
#: all written there by this script, which alone may delete them (pairmeasures' deletion policy, ``_owned``).
SIZE_FOLDER = WorkFolder("benchmarks/scale.py", "size folder", "--work",
                         (r"corpus", r"cache", r"audit", r"run\.pkl", r"[a-z-]+\.json"),
                         "pass --work a new or empty folder, or one benchmarks/scale.py made")


def fresh(place: Path) -> None:
    """``place`` as a new, empty size folder: an earlier one of this script is emptied first; a folder holding
    anything it did not write is refused, untouched (one line naming it)."""
    left = remove_folder(place, SIZE_FOLDER) if place.exists() else []
    if left:
        raise SystemExit(f"scale.py: --work: {place} holds {left[0]!r}, which this script did not write: it is left "
                         "as it is; pass --work a new or empty folder")
    claim_folder(place, SIZE_FOLDER)


def stage(name: str, folder: Path, work: Path, audit_depth: int = 100, passages: int = 0) -> dict:
    """Run one stage in this process; what it measured."""
    from pairmeasures.datasets.corpus import open_corpus
    from pairmeasures.datasets.profile import load_profile

    if name in RESOURCE_STAGES:
        return resource_stage(name, folder, passages)
    run_file = work / "run.pkl"
    if name == "audit":
        from pairmeasures.apps.cli import main

        out = work / "audit"  # an earlier audit of this size is replaced by the audit's own --force rule
        start = time.process_time()
        main(["audit", "--dataset", str(folder), "--systems", "bm25", "--num-results", str(audit_depth), "--out", str(out),
              "--measures", *MEASURES, "--resamples", "1000", "--format", "json", "--force"])
        manifest = json.loads((out / "manifest.json").read_text())
        return {"step_cpu_s": time.process_time() - start, "timings_s": manifest.get("timings_s")}
    start = time.process_time()
    if name == "store":
        count = open_corpus(folder).docs_count()
        return {"step_cpu_s": time.process_time() - start, "documents": count}
    profile = load_profile(folder)
    loaded = time.process_time() - start
    if name == "profile":
        return {"step_cpu_s": loaded, "queries": len(profile.queries)}
    if name == "index":
        from pairmeasures.pipelines.retrieval import pisa_index

        start = time.process_time()
        pisa_index(profile.corpus)
        return {"step_cpu_s": time.process_time() - start}
    if name == "retrieve":
        import pandas as pd

        from pairmeasures.pipelines.retrieval import bm25

        retriever = bm25(profile.corpus, num_results=1000)
        topics = pd.DataFrame({"qid": list(profile.queries), "query": list(profile.queries.values())})
        start = time.process_time()
        run = retriever.transform(topics)
        spent = time.process_time() - start
        run[["qid", "docno", "score", "rank"]].to_pickle(run_file)
        return {"step_cpu_s": spent, "rows": len(run), "queries_ranked": int(run["qid"].nunique())}
    import pandas as pd

    from pairmeasures.audit.runs import annotate

    run = pd.read_pickle(run_file)
    start = time.process_time()
    annotated = annotate(run, profile)
    spent = time.process_time() - start
    if name == "annotate":
        return {"step_cpu_s": spent, "rows": len(annotated)}
    import pairmeasures.audit.curves as curves
    from pairmeasures.audit.evaluation import per_query
    from pairmeasures.measures.parsing import parse_measures

    if name == "evaluate-whole":  # the baseline: no measure declares a depth, so nothing is cut
        curves.reads_depth = lambda measure: None
    names = [f"NFaiRR(background='collection',text='corpus:{folder}')@10" if m == "NFaiRR@10" else m for m in MEASURES]
    measures = dict(zip(names, parse_measures(names)))
    start = time.process_time()
    table = per_query({"bm25": annotated}, profile.qrels, measures)
    return {"step_cpu_s": time.process_time() - start,
            "values": {m: float(v) for m, v in table.groupby("measure")["value"].mean().items()}}


def measured(name: str, folder: Path, work: Path, cache: Path, audit_depth: int, passages: int = 0) -> dict:
    """One stage in a fresh process: its own report, plus the process's CPU seconds and peak RSS (``os.wait4``)."""
    env = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1"}
    report = work / f"{name}.json"
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, __file__, "--stage", name, "--folder", str(folder), "--work", str(work),
                              "--audit-depth", str(audit_depth), "--passages", str(passages)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"stage {name} failed ({child.returncode}):\n{errors.decode(errors='replace')[-3000:]}")
    result = json.loads(report.read_text())
    peak = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return {**result, "process_cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": time.perf_counter() - started,
            "peak_rss_mib": peak / 2**20}


def fit(sizes: list, values: list) -> dict:
    """Least-squares ``log v = log a + b log n``: the exponent ``b`` and ``v`` extrapolated to MS MARCO."""
    xs, ys = [math.log(n) for n in sizes], [math.log(max(v, 1e-9)) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - b * mx
    return {"exponent": round(b, 3), "at_msmarco": round(math.exp(a + b * math.log(MSMARCO_PASSAGES)), 1)}


def embedding_rate(data: Path, texts: int) -> dict:
    """The audit's Embedder on ``texts`` MS MARCO-length synthetic passages, in a fresh process with an empty cache."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "corpus"
        write_corpus(data, folder, texts, seed=1)
        code = ("import json, sys, time\nfrom pairmeasures.compute.embed import Embedder\n"
                f"texts = [json.loads(l)['text'] for l in open({str(folder / 'corpus.jsonl')!r})]\n"
                "embedder = Embedder(); embedder.embed(texts[:8])\n"
                "start = time.process_time(); wall = time.perf_counter(); embedder.embed(texts[8:])\n"
                "print(json.dumps({'cpu_s': time.process_time() - start, 'wall_s': time.perf_counter() - wall}))")
        env = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(Path(scratch) / "cache")}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        spent = json.loads(done.stdout.strip().splitlines()[-1])
    return {"texts": texts - 8, **{k: round(v, 2) for k, v in spent.items()},
            "texts_per_cpu_s": round((texts - 8) / spent["cpu_s"], 1)}


def grown(results: dict) -> dict:
    """``results`` with every row naming its ``passages`` and each stage's growth fitted over all its sizes."""
    for rows in results["stages"].values():
        for row, size in zip(rows, results["sizes"]):
            row.setdefault("passages", size)
        rows.sort(key=lambda r: r["passages"])
    results["sizes"] = sorted({r["passages"] for rows in results["stages"].values() for r in rows})
    results["growth"] = {name: {key: fit([r["passages"] for r in rows], [r[key] for r in rows])
                                for key in ("step_cpu_s", "process_cpu_s", "peak_rss_mib")}
                         for name, rows in results["stages"].items() if len({r["passages"] for r in rows}) > 1}
    return results


def markdown(results: dict) -> str:
    sizes = results["sizes"]
    lines = ["# Scale: cost of an audit's stages by corpus size", "",
             f"Measured {results['measured_on']} on {os.cpu_count()} CPUs (shared with other work: CPU seconds, not wall "
             f"time): synthetic MS MARCO-length corpora ({WORDS} words a passage), {results['queries']} QS1 queries, BM25 "
             f"top 1000 (the audit stage: top {results.get('audit_depth', 100)}); `benchmarks/scale.py`. Each cell: CPU "
             "seconds of the step (imports aside) / peak RSS of the stage's process in MiB; exponent: slope of log cost "
             "on log passages; last column: the fit extrapolated to MS MARCO's 8.8M passages.", "",
             "| stage | " + " | ".join(f"{n:,}" for n in sizes) + " | CPU exp. | RSS exp. | 8.8M: CPU-s / MiB |",
             "|---|" + "---|" * (len(sizes) + 3)]
    for name in STAGES:
        rows = {r["passages"]: r for r in results["stages"].get(name, [])}
        if not rows or name not in results["growth"]:
            continue
        cells = [f"{rows[n]['step_cpu_s']:.1f} / {rows[n]['peak_rss_mib']:.0f}" if n in rows else "–" for n in sizes]
        cpu, rss = results["growth"][name]["step_cpu_s"], results["growth"][name]["peak_rss_mib"]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {cpu['exponent']} | {rss['exponent']} | "
                     f"{cpu['at_msmarco']:.0f} / {rss['at_msmarco']:.0f} |")
    lines += ["", "–: not measured at that size (`--stages`: the 1M passages ran store, profile, index, retrieve and "
                  "the audit, in a second run beside the sweep, added with `--add`)."]
    if results["stages"].get("evaluate-whole"):
        lines += ["", "`evaluate` is the audit's evaluation (each run cut to the deepest rank its measures read, here 10; "
                      "NFaiRR's ideal over the collection, as the MS MARCO gender audits take it); `evaluate-whole`: the "
                      "same measures over the whole run, as the audit evaluated before the cut. Both peaks include "
                      "annotating the run (the `annotate` row)."]
    ranked = {r["passages"]: r["rows"] for r in results["stages"].get("retrieve", [])}
    if ranked:
        lines += ["", "Ranked rows (queries × depth, what annotate, evaluate and the audit's curves cost by): " + ", ".join(
            f"{rows:,} at {n:,} passages" for n, rows in sorted(ranked.items())) + " (a query whose words match fewer "
            "than 1,000 passages ranks fewer). `annotate` and `evaluate` cost per ranked row, not per passage: their "
            "exponents follow the rows' growth from 10k passages and overstate what more passages cost; at MS MARCO's "
            "size they stay near their 1M-row values."]
    read = {r["passages"]: r for r in results["stages"].get("resources-read", [])}
    lazy = {r["passages"]: r for r in results["stages"].get("resources", []) if r["passages"] in read}
    if lazy:
        sizes = sorted(lazy)
        dates = sorted({r.get("measured_on", results["measured_on"]) for r in lazy.values()})

        def per_100k(rows: dict) -> float:  # MiB of peak RSS per 100,000 more passages, smallest to largest size
            return (rows[sizes[-1]]["peak_rss_mib"] - rows[sizes[0]]["peak_rss_mib"]) / (sizes[-1] - sizes[0]) * 1e5

        lines += ["", f"`resources` (measured {', '.join(dates)}): EXP (`beir:DIR`), TExFAIR and NFaiRR over the "
                      f"collection (`corpus:DIR`) on every query, Duo (`pca:DIR`) on {POLARITY_QUERIES}, as `pairmeasures "
                      "eval` evaluates them, the folder read through its on-disk store; `resources-read`: the same "
                      "resources built from `read_beir` (the whole corpus in memory, once for `corpus:` and once for "
                      "`pca:`, as before), in the same run, with the same values; `resources-first`: `resources` with the "
                      "polarity texts not yet embedded (its peak is the model's). Peak RSS, store against read_beir: "
                      + ", ".join(f"{lazy[n]['peak_rss_mib']:.0f} vs {read[n]['peak_rss_mib']:.0f} MiB "
                                  f"({lazy[n]['peak_rss_mib'] / read[n]['peak_rss_mib']:.2f}×) at {n:,}" for n in sizes)
                      + f"; growth {per_100k(lazy):.1f} vs {per_100k(read):.0f} MiB per 100,000 passages (linear in the "
                        "corpus for read_beir: the power-law fit's 8.8M figure understates it); CPU seconds of the step: "
                      + ", ".join(f"{lazy[n]['step_cpu_s']:.1f} vs {read[n]['step_cpu_s']:.1f} at {n:,}" for n in sizes)
                      + "."]
    if results.get("embedding"):
        e = results["embedding"]
        lines += ["", f"Embedding (not in the sweep: its cost is per measured text): {e['texts_per_cpu_s']} MS "
                      f"MARCO-length texts per CPU-second ({e['texts']} texts, all-MiniLM-L6-v2 on CPU)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 300_000])
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=STAGES, help="the stages measured, run in the order above (default: all); 'store resources-first resources-read "
                             "resources' compares the resources naming the folder with read_beir's at each size")
    parser.add_argument("--add", action="store_true",
                        help="add these sizes to results/scale.json (e.g. --sizes 1000000 --add) and fit again")
    parser.add_argument("--work", type=Path, help="folder for the corpora and caches (default: a temporary one)")
    parser.add_argument("--embed", type=int, default=256, help="passages embedded to time the Embedder (0: skip)")
    parser.add_argument("--audit-depth", type=int, default=100,
                        help="--num-results of the end-to-end audit stage (default 100: its cut-off curves and plots cost per "
                             "ranked row, not per corpus passage; 1000 gives the full depth)")
    parser.add_argument("--data", **data_option())
    parser.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--passages", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.data:  # the stage processes are started without --data: they read it from the environment
        os.environ["PAIRMEASURES_DATA"] = str(Path(args.data).resolve())
    if args.stage:
        (args.work / f"{args.stage}.json").write_text(json.dumps(stage(args.stage, args.folder, args.work, args.audit_depth,
                                                                       args.passages)))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="pairmeasures-scale-"))
    results: dict = {"sizes": [], "audit_depth": args.audit_depth, "stages": {name: [] for name in STAGES},
                     "measured_on": time.strftime("%Y-%m-%d", time.gmtime())}
    if args.add:
        results = grown(json.loads((RESULTS / "scale.json").read_text())["results"])
        for name, rows in results["stages"].items():
            if name in args.stages:
                rows[:] = [r for r in rows if r["passages"] not in args.sizes]
        results["stages"].update({name: [] for name in STAGES if name not in results["stages"]})
    stages = [name for name in STAGES if name in args.stages]
    for size in args.sizes:
        place = work / f"n{size}"
        fresh(place)
        started = time.perf_counter()
        results["queries"] = write_corpus(Path(args.data), place / "corpus", size)
        corpus_mib = (place / "corpus" / "corpus.jsonl").stat().st_size / 2**20
        print(f"{size:,} passages ({corpus_mib:.0f} MiB) written in {time.perf_counter() - started:.0f} s", flush=True)
        for name in stages:
            row = measured(name, place / "corpus", place, place / "cache", args.audit_depth, size)
            row.update(passages=size, corpus_mib=round(corpus_mib, 1), measured_on=time.strftime("%Y-%m-%d", time.gmtime()))
            results["stages"][name].append(row)
            if name == "resources":
                same_values(results, size)
            print(f"  {name}: {row['step_cpu_s']:.1f} CPU-s step, {row['process_cpu_s']:.1f} CPU-s process, "
                  f"peak {row['peak_rss_mib']:.0f} MiB", flush=True)
            record(results)  # after every stage: an interrupted sweep keeps what it measured
        if args.work is None:
            remove_folder(place, SIZE_FOLDER)
    if args.embed:
        results["embedding"] = embedding_rate(Path(args.data), args.embed + 8)
    print(json.dumps(record(results)["growth"], indent=1))


def same_values(results: dict, size: int) -> None:
    """Stop the run unless the resources read through the store gave ``read_beir``'s values at ``size``."""
    rows = {name: next((r for r in results["stages"].get(name, []) if r.get("passages") == size), None)
            for name in ("resources-read", "resources")}
    if rows["resources-read"] is None:
        return
    old, new = rows["resources-read"]["values"], rows["resources"]["values"]
    same = old.keys() == new.keys() and all(old[m] == new[m] or (math.isnan(old[m]) and math.isnan(new[m])) for m in old)
    rows["resources"]["same_values_as_read"] = same
    if not same:
        record(results)
        raise SystemExit(f"at {size:,} passages the resources gave other values than read_beir's: {new} vs {old}")


def record(results: dict) -> dict:
    """Save ``results`` (results/scale.json, and results/scale.md once a stage has two sizes)."""
    results = grown(results)
    save("scale", results)
    if results["growth"]:
        (RESULTS / "scale.md").write_text(markdown(results))
    return results


if __name__ == "__main__":
    main()
