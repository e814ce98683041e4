"""Polarity from real text: the default model, cached embeddings, fitted axes, the measure and pipeline paths."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pairmeasures as pm
from pairmeasures.analysis.polarity import validate_polarity
from pairmeasures.compute.cache import EmbeddingCache
from pairmeasures.compute.embed import Embedder, EmbeddingModelError
from pairmeasures.math import consistent_accuracy, fit_axes, perspective_accuracy, project
from pairmeasures.sideinfo.polarity import FitSet, PolarityError, PolarityModel, read_beir


def test_default_model_embeds_offline_deterministically(embedder):
    texts = ["Cars should be banned from city centres.", "Car bans hurt people who cannot walk far.", "Cars should be banned from city centres."]
    first = embedder.embed(texts)
    assert first.shape == (3, 384) and first.dtype == np.float32
    assert np.array_equal(first[0], first[2])
    fresh = Embedder(cache=False).embed(texts[:2])
    assert np.allclose(fresh, first[:2], atol=1e-6)
    assert np.linalg.norm(first, axis=1) == pytest.approx(1.0, abs=1e-4)  # the model normalises


def test_cache_is_keyed_by_model_and_reused(tmp_path, embedder):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    one = Embedder(cache=cache)
    one._model = embedder.load()  # share the loaded model, keep the private cache
    one.embed(["alpha text", "beta text"])
    assert one.computed == 2
    again = Embedder(cache=cache)
    again.embed(["beta text", "alpha text"])
    assert again.computed == 0 and again._model is None  # served from the cache: the model never loaded
    assert Embedder("sentence-transformers/all-MiniLM-L6-v2", cache=cache).key == one.key


class Unnormalised:
    """A stand-in model whose vectors are not of unit length (all-MiniLM-L6-v2 normalises its own)."""

    def encode(self, texts, **options):
        return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)


def test_normalised_and_raw_embedders_share_one_embedding_pass(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    normalised, raw = Embedder(cache=cache, normalize=True), Embedder(cache=cache)
    normalised._model = raw._model = Unnormalised()
    texts = ["a banana", "apple", "a banana"]
    unit = normalised.embed(texts)
    plain = raw.embed(texts)
    assert normalised.computed == 2 and raw.computed == 0  # each distinct text embedded once, for both
    assert plain[0].tolist() == [8.0, 4.0, 1.0]  # the cache holds the raw vector
    assert np.allclose(unit, plain / np.linalg.norm(plain, axis=1, keepdims=True))
    assert np.array_equal(unit[0], unit[2])


class Slow(Unnormalised):
    """A stand-in model taking long enough per batch for the progress bar to redraw."""

    def encode(self, texts, **options):
        time.sleep(0.15)
        return super().encode(texts, **options)


def test_progress_bar_quiet_for_short_work_and_whole_lines_off_a_terminal(tmp_path, capsys, monkeypatch):
    texts = [f"text number {i}" for i in range(200)]
    quiet = Embedder(cache=False)
    quiet._model = Unnormalised()
    quiet.embed(texts)
    assert capsys.readouterr().err == ""  # under two seconds: no bar by default, on a terminal or in a log
    monkeypatch.setenv("TQDM_MININTERVAL", "0")  # a line per batch (a log's default: one every 30 seconds)
    shown = Embedder(cache=False, progress=True, batch_size=64)
    shown._model = Slow()
    shown.embed(texts)
    err = capsys.readouterr().err
    assert "embedding with all-MiniLM-L6-v2" in err and "200/200" in err
    assert "64/200" in err and "128/200" in err  # updated per batch, not per 1,024 texts
    assert "\r" not in err and all(line.startswith("embedding with") for line in err.splitlines())  # stderr is no
    # terminal here: each state of the bar is a line of its own


def test_corrupt_entry_is_recomputed(tmp_path, embedder):
    import sqlite3

    cache = EmbeddingCache(tmp_path / "c.sqlite")
    model = Embedder(cache=cache)
    model._model = embedder.load()
    good = model.embed(["some argument"])
    connection = sqlite3.connect(tmp_path / "c.sqlite")
    connection.execute("UPDATE blocks SET vectors = zeroblob(length(vectors))")
    connection.commit()
    connection.close()
    repaired = model.embed(["some argument"])
    assert np.array_equal(good, repaired) and model.computed == 2 and cache.corrupt == 1


def test_empty_texts_and_missing_models_fail_clearly(embedder):
    with pytest.raises(ValueError, match="text 1 is empty"):
        embedder.embed(["fine", "   "])
    with pytest.raises(EmbeddingModelError, match="does not exist"):
        Embedder("./no/such/model", cache=False).load()
    with pytest.raises(EmbeddingModelError, match="offline.*offline default all-MiniLM-L6-v2"):
        Embedder("sentence-transformers/all-mpnet-base-v2", cache=False).load()


def toy_fit(labels=True):
    from pairmeasures.demo import load_toy

    documents = load_toy().documents.rename(columns={"group": "label"})
    return FitSet.from_frame(documents if labels else documents.drop(columns="label"), positive="pro")


def test_axes_fitted_per_query_orient_to_perspective_one(embedder):
    model = PolarityModel(fit=toy_fit(), embedder=embedder)
    fit = toy_fit()
    for qid, texts in fit.texts.items():
        scores = model.score([qid] * len(texts), texts)
        labels = np.array(fit.labels[qid])
        assert scores[labels == "pro"].mean() > 0 > scores[labels == "con"].mean()
    assert set(model._axes) == set(fit.texts)  # one fit per query, reused


def test_several_axes_give_vectors(embedder):
    model = PolarityModel(fit=toy_fit(labels=False), embedder=embedder, components=2)
    scores = model.score(["q1", "q1"], ["A new argument about cars.", "Another one about parking."])
    assert scores.shape == (2, 2)


def test_queries_that_cannot_be_fitted(embedder):
    model = PolarityModel(fit=toy_fit(), embedder=embedder, components=6)
    with pytest.raises(PolarityError, match="query 'q1' has 6 fit document\\(s\\); 6 axis\\(es\\) need at least 7"):
        model.score(["q1"], ["text"])
    with pytest.raises(PolarityError, match="query 'q9' has no fit documents"):
        PolarityModel(fit=toy_fit(), embedder=embedder).score(["q9"], ["text"])
    skipping = PolarityModel(fit=toy_fit(), embedder=embedder)
    scores = skipping.score(["q9", "q1"], ["text", "Cars pollute."], errors="skip")
    assert np.isnan(scores[0]) and np.isfinite(scores[1]) and list(skipping.skipped) == ["q9"]


def test_a_fit_set_without_variance_is_an_error_naming_the_query(embedder):
    fit = FitSet(texts={"q1": ["Cars pollute the air."] * 4}, labels={"q1": ["pro", "pro", "con", "con"]},
                 positive="pro")
    with pytest.raises(PolarityError, match="query 'q1': the fit documents do not vary"):
        PolarityModel(fit=fit, embedder=embedder).score(["q1"], ["Cars are useful."])


def test_distractor_direction_is_removed(embedder):
    distractors = {"legal": ["The court ruled on the statute.", "Lawyers filed a motion under the act."],
                   "casual": ["We had a great time at the beach.", "My friends and I watched a movie."]}
    model = PolarityModel(fit=toy_fit(), embedder=embedder, distractors=distractors)
    b = model._spurious
    assert np.linalg.norm(b) == pytest.approx(1.0)
    cleaned, _ = model._embed(["The statute was passed by parliament."])
    assert abs(cleaned @ b)[0] < 1e-9


def test_validation_matches_a_direct_computation(procon_subset, embedder):
    result = validate_polarity(procon_subset, embedder=embedder)
    data = read_beir(procon_subset)
    frame = data.fit_frame("text")
    scores, query, positive = [], [], []
    for qid, rows in frame.groupby("qid", sort=False):
        x = embedder.embed(rows["text"].tolist()).astype(np.float64)
        scores.append(project(x, fit_axes(x, 1))[:, 0])
        query += [qid] * len(rows)
        positive.append((rows["label"] == "pro").to_numpy())
    scores, positive = np.concatenate(scores), np.concatenate(positive)
    assert result["accuracy"] == pytest.approx(perspective_accuracy(scores, query, positive))
    assert result["consistent_accuracy"] == pytest.approx(consistent_accuracy(scores, query, positive))
    assert result["queries"] == 4 and result["documents"] == len(frame) and result["positive"] == "pro"
    assert 0.5 <= result["consistent_accuracy"] <= result["accuracy"] <= 1.0


def test_validation_of_chosen_queries_and_bootstrap_of_one_model(procon_subset, embedder):
    from pairmeasures.analysis.polarity import bootstrap_accuracies

    full = validate_polarity(procon_subset, embedder=embedder)
    chosen = [row["query_id"] for row in full["per_query"][:2]]
    part = validate_polarity(procon_subset, embedder=embedder, queries=chosen)
    assert [row["query_id"] for row in part["per_query"]] == chosen  # axes are per query: the same numbers
    assert [row["accuracy"] for row in part["per_query"]] == [row["accuracy"] for row in full["per_query"][:2]]
    with pytest.raises(ValueError, match="1 of the queries to validate are not in .*queries.jsonl, e.g. 'nope'"):
        validate_polarity(procon_subset, embedder=embedder, queries=[*chosen, "nope"])
    stats = bootstrap_accuracies([full], resamples=500, seed=2)
    for name in ("accuracy", "consistent_accuracy"):
        (row,) = stats[name]
        assert row["value"] == pytest.approx(full[name]) and row["low"] <= row["value"] <= row["high"]
        assert "difference" not in row
    same = bootstrap_accuracies([full, full], resamples=500, seed=2)["accuracy"][1]
    assert same["difference"] == same["difference_low"] == same["difference_high"] == 0


def test_validate_polarity_command_prints_json(procon_subset, embedder):
    expected = validate_polarity(procon_subset, embedder=embedder)  # fills the session's embedding cache
    command = [sys.executable, "-m", "pairmeasures", "validate-polarity", str(procon_subset), "--json"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert {"accuracy", "consistent_accuracy", "queries", "documents"} <= set(report)
    assert report["accuracy"] == pytest.approx(expected["accuracy"])
    assert report["queries"] == 4 and report["embedded_now"] == 0  # the command reads the cache the test filled
    folder_without_labels = procon_subset.parent / "nolabels"
    folder_without_labels.mkdir(exist_ok=True)
    for name in ("corpus.jsonl", "queries.jsonl"):
        (folder_without_labels / name).write_text((procon_subset / name).read_text())
    (folder_without_labels / "qrels").mkdir(exist_ok=True)
    (folder_without_labels / "qrels" / "test.tsv").write_text((procon_subset / "qrels" / "test.tsv").read_text())
    failed = subprocess.run(command[:4] + [str(folder_without_labels)], capture_output=True, text=True, timeout=600)
    assert failed.returncode == 2 and "has no labels.tsv" in failed.stderr and "Traceback" not in failed.stderr


def tiny_beir(folder, labels: dict) -> str:
    """A BEIR folder whose queries ``labels`` maps to the gold labels of their documents, one document each."""
    (folder / "qrels").mkdir(parents=True)
    docs = [(q, f"{q}-{i}", label) for q, names in labels.items() for i, label in enumerate(names)]
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": f"Query {q}?"}) + "\n" for q in labels))
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": f"Text of {d}."}) + "\n"
                                                 for _, d, _ in docs))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d, _ in docs))
    (folder / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in docs))
    return str(folder)


def validate_command(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pairmeasures", "validate-polarity", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def test_validate_polarity_names_the_positive_label_when_no_label_is_one(tmp_path):
    folder = tiny_beir(tmp_path / "three", {"q1": ["female", "male", "neutral"], "q2": ["both", "female"]})
    done = validate_command(folder)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert ("labels.tsv: no label stands for perspective 1: the labels are 'both', 'female', 'male', 'neutral', none "
            "of p1, pro, support, 1, positive, yes; name the positive label with --positive LABEL") in done.stderr
    done = validate_command(folder, "--positive", "Female")
    assert done.returncode == 2 and "the positive label 'Female' is not in" in done.stderr
    with pytest.raises(pm.sideinfo.SideInfoError, match=r"pca:.*no label stands for perspective 1.*\?positive=LABEL"):
        pm.sideinfo.resolve(f"pca:{folder}")
    assert pm.sideinfo.resolve(f"pca:{folder}?positive=female") is not None


def test_validate_polarity_with_nothing_to_measure_prints_null_and_fails(tmp_path):
    folder = tiny_beir(tmp_path / "one", {"q1": ["female", "female"], "q2": ["male"], "q3": ["male", "neutral"],
                                          "q4": ["female", "male", "neutral"]})
    done = validate_command(folder, "--positive", "female", "--json", "--per-query", tmp_path / "each.tsv")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    report = json.loads(done.stdout)  # valid JSON: null, never NaN
    assert report["accuracy"] is None and report["consistent_accuracy"] is None and report["queries"] == 0
    assert report["skipped_queries"] == {"one perspective only": 2, "two perspectives, neither the positive label": 1,
                                         "more than two perspectives": 1}
    assert done.stderr.strip().splitlines() == [
        f"pairmeasures validate-polarity: error: nothing to measure in {folder}: no query has documents of exactly two "
        "perspectives, one of them the positive label 'female' (2 have one perspective only; 1 has two perspectives, "
        "neither the positive label; 1 has more than two perspectives)"]
    assert not (tmp_path / "each.tsv").exists()
    plain = validate_command(folder, "--positive", "female")
    assert plain.returncode == 2 and plain.stdout == "" and "nothing to measure" in plain.stderr
    bootstrapped = validate_command(folder, "--positive", "female", "--json", "--bootstrap", "100")
    assert bootstrapped.returncode == 2 and "bootstrap" not in json.loads(bootstrapped.stdout)
    refused = validate_command(folder, "--positive", "female", "--bootstrap", "0")
    assert refused.returncode == 2 and "--bootstrap must be at least 1, got 0" in refused.stderr


def test_validate_polarity_writes_per_query_accuracies(procon_subset, embedder, tmp_path):
    expected = validate_polarity(procon_subset, embedder=embedder)  # fills the session's embedding cache
    target = tmp_path / "per-query.tsv"
    done = validate_command(procon_subset, "--per-query", target)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(target, sep="\t", dtype={"query_id": str})
    assert list(table.columns) == ["query_id", "accuracy", "consistent_accuracy", "documents", "positive", "other"]
    assert len(table) == 4 and table["documents"].sum() == expected["documents"]
    assert set(table["positive"]) == {"pro"} and set(table["other"]) == {"con"}
    weighted = (table["accuracy"] * table["documents"]).sum() / table["documents"].sum()
    assert weighted == pytest.approx(expected["accuracy"])
    assert table.set_index("query_id")["consistent_accuracy"].to_dict() == pytest.approx(
        {r["query_id"]: r["consistent_accuracy"] for r in expected["per_query"]})
    before = target.read_text()
    refused = validate_command(procon_subset, "--per-query", target)
    assert refused.returncode == 2 and f"--per-query {str(target)!r} exists; pass --force to replace it" in refused.stderr
    assert target.read_text() == before
    as_json = tmp_path / "per-query.json"
    assert validate_command(procon_subset, "--per-query", as_json, "--json").returncode == 0
    assert [r["query_id"] for r in json.loads(as_json.read_text())] == table["query_id"].tolist()
    assert validate_command(procon_subset, "--per-query", target, "--force").returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["per-query.json", "per-query.tsv"]  # no temporary files left


def test_validate_polarity_shows_progress_when_asked(procon_subset, tmp_path):
    command = [sys.executable, "-m", "pairmeasures", "validate-polarity", str(procon_subset), "--json", "--cache"]
    quiet = subprocess.run(command + [str(tmp_path / "a.sqlite"), "--no-progress"], capture_output=True, text=True,
                           timeout=600)
    shown = subprocess.run(command + [str(tmp_path / "b.sqlite"), "--progress"], capture_output=True, text=True,
                           timeout=600)
    assert quiet.returncode == shown.returncode == 0, quiet.stderr + shown.stderr
    embedded = json.loads(shown.stdout)["embedded_now"]
    assert embedded > 0 and json.loads(quiet.stdout)["embedded_now"] == embedded
    assert "embedding with" not in quiet.stderr
    assert "embedding with all-MiniLM-L6-v2: 100%" in shown.stderr and f"{embedded}/{embedded}" in shown.stderr


def test_cache_command(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    cache.put("m", [(b"k" * 32, np.zeros(3, np.float32))])
    base = [sys.executable, "-m", "pairmeasures", "cache"]
    info = subprocess.run(base + ["info", "--cache", str(tmp_path / "c.sqlite")], capture_output=True, text=True)
    assert "1 x 3-d" in info.stdout
    refused = subprocess.run(base + ["clear", "--cache", str(tmp_path / "c.sqlite")], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert len(EmbeddingCache(tmp_path / "c.sqlite").stats().models) == 1
    cleared = subprocess.run(base + ["clear", "--yes", "--cache", str(tmp_path / "c.sqlite")], capture_output=True, text=True)
    assert "deleted 1 embeddings" in cleared.stdout


@pytest.fixture(scope="module")
def bm25_procon(procon_subset, tmp_path_factory):
    """A plain retrieval pipeline over a text corpus: PISA BM25 on the ProCon subset."""
    from pyterrier_pisa import PisaIndex

    data = read_beir(procon_subset)
    index = PisaIndex(str(tmp_path_factory.mktemp("pisa") / "procon.pisa"), text_field="text")
    index.index({"docno": d, "text": data.document_text(d, "title+text")} for d in data.corpus)
    topics = pd.DataFrame({"qid": list(data.queries), "query": [q["text"] for q in data.queries.values()]})
    qrels = data.qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    texts = pd.DataFrame({"docno": list(data.corpus), "text": [r["text"] for r in data.corpus.values()]})
    return index.bm25(num_results=30), topics, qrels, texts


def test_duo_on_a_plain_retrieval_pipeline(bm25_procon, procon_subset, embedder):
    bm25, topics, qrels, texts = bm25_procon
    add_text = pt.apply.generic(lambda frame: frame.merge(texts, on="docno", how="left"))
    model = PolarityModel(fit=FitSet.from_beir(procon_subset), embedder=embedder)
    pipeline = bm25 >> add_text >> pm.PolarityScorer(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        table = pt.Experiment([pipeline], topics, qrels, eval_metrics=[ir_measures.nDCG @ 10, pm.Duo @ 10],
                              names=["BM25 >> polarity"], validate="error")
        via_resource = pt.Experiment([bm25], topics, qrels, names=["BM25"],
                                     eval_metrics=[pm.Duo(polarity=f"pca:{procon_subset}") @ 10])
    assert 0.0 < table["Duo@10"].iloc[0] < 1.0
    # The measure's resource path computes the same polarity inside the measure, from the same cache.
    assert via_resource.iloc[0, 1] == pytest.approx(table["Duo@10"].iloc[0])


def test_polarity_scorer_on_an_empty_frame_and_without_text(embedder):
    scorer = pm.PolarityScorer(PolarityModel(fit=toy_fit(), embedder=embedder))
    empty = scorer(pd.DataFrame(columns=["qid", "query", "docno", "score", "rank", "text"]))
    assert "polarity" in empty.columns and len(empty) == 0
    with pytest.raises(pt.validate.InputValidationError, match=r"missing_columns=\['text'\]"):
        scorer(pd.DataFrame({"qid": ["q1"], "query": ["x"], "docno": ["d"], "score": [1.0], "rank": [0]}))


def test_polarity_scorer_skips_queries_without_fit_documents(embedder):
    scorer = pm.PolarityScorer(PolarityModel(fit=toy_fit(), embedder=embedder), errors="skip")
    frame = pd.DataFrame({"qid": ["q1", "q7"], "query": ["a", "b"], "docno": ["d1", "d2"], "score": [2.0, 1.0],
                          "rank": [0, 0], "text": ["Cars pollute the air.", "Unrelated text."]})
    with pytest.warns(RuntimeWarning, match="1 queries got no polarity"):
        out = scorer(frame)
    assert np.isfinite(out["polarity"].iloc[0]) and np.isnan(out["polarity"].iloc[1])
    qrels = pd.DataFrame({"query_id": ["q1", "q7"], "doc_id": ["d1", "d2"], "relevance": [1, 1]})
    run = out.rename(columns={"qid": "query_id", "docno": "doc_id"})
    with pytest.raises(pm.RunInputError, match="no polarity for document 'd2' of query 'q7'"):
        ir_measures.calc_aggregate([pm.Duo(missing="error")], qrels, run)
    with pytest.warns(pm.DegenerateQueryWarning, match="2 of 2 queries"):
        ir_measures.calc_aggregate([pm.Duo(missing="skip")], qrels, run)


def test_eight_systems_over_one_corpus_embed_each_document_once(tmp_path, embedder):
    from pairmeasures.demo import load_toy

    toy = load_toy()
    counting = Embedder(cache=EmbeddingCache(tmp_path / "c.sqlite"))
    counting._model = embedder.load()
    scorer = pm.PolarityScorer(PolarityModel(fit=toy_fit(), embedder=counting))
    rng = np.random.default_rng(0)
    run = toy.runs["pro-first"]
    for system in range(8):  # eight systems, each returning a shuffled subset of the same corpus
        scorer(run.sample(frac=0.8, random_state=system).assign(score=lambda f: rng.random(len(f))))
    assert counting.computed == toy.documents["text"].nunique()


def test_resource_embeds_the_runs_own_text_when_present(procon_subset, embedder):
    data = read_beir(procon_subset)
    qid = next(iter(data.queries))
    docs = [d for d, r in data.corpus.items() if r["query_id"] == qid][:6]
    other_corpus = [f"Rewritten: {data.corpus[d]['text']}" for d in docs]  # same ids, different texts
    run = pd.DataFrame({"query_id": qid, "doc_id": docs, "score": np.arange(6, 0, -1.0), "text": other_corpus})
    qrels = pd.DataFrame({"query_id": [qid], "doc_id": [docs[0]], "relevance": [1]})
    measure = pm.Duo(polarity=f"pca:{procon_subset}")
    from_run_text = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    from_corpus = ir_measures.calc_aggregate([measure], qrels, run.drop(columns="text"))[measure]
    model = PolarityModel(fit=FitSet.from_beir(procon_subset), embedder=embedder)
    assert from_run_text == pytest.approx(pm.math.duo(model.score([qid] * 6, other_corpus)))
    assert from_corpus == pytest.approx(pm.math.duo(model.score([qid] * 6, [data.corpus[d]["text"] for d in docs])))


def test_pca_text_that_is_missing_falls_back_to_the_corpus_and_non_strings_are_errors(procon_subset, embedder):
    data = read_beir(procon_subset)
    qid = next(iter(data.queries))
    docs = [d for d, r in data.corpus.items() if r["query_id"] == qid][:6]
    texts = [data.corpus[d]["text"] for d in docs]
    qrels = pd.DataFrame({"query_id": [qid], "doc_id": [docs[0]], "relevance": [1]})
    measure = pm.Duo(polarity=f"pca:{procon_subset}")
    run = pd.DataFrame({"query_id": qid, "doc_id": docs, "score": np.arange(6, 0, -1.0), "text": texts})
    expected = ir_measures.calc_aggregate([measure], qrels, run)[measure]
    gaps = run.assign(text=[None, np.nan] + texts[2:])  # no text in the run: the corpus's text, never "nan"
    assert ir_measures.calc_aggregate([measure], qrels, gaps)[measure] == pytest.approx(expected)
    with pytest.raises(PolarityError, match=f"the text of document '{docs[1]}' of query '{qid}' is a bytes"):
        ir_measures.calc_aggregate([measure], qrels, run.assign(text=[texts[0], texts[1].encode()] + texts[2:]))
    unknown = pd.concat([run, pd.DataFrame({"query_id": [qid], "doc_id": ["nowhere"], "score": [0.5],
                                            "text": [None]})], ignore_index=True)
    with pytest.raises(pm.RunInputError, match=f"no polarity for document 'nowhere' of query '{qid}'"):
        ir_measures.calc_aggregate([pm.Duo(polarity=f"pca:{procon_subset}", missing="error")], qrels, unknown)
    skipping = pm.Duo(polarity=f"pca:{procon_subset}", missing="skip")
    assert ir_measures.calc_aggregate([skipping], qrels, unknown)[skipping] == pytest.approx(expected)


def test_polarity_scorer_refuses_text_that_is_not_a_string(embedder):
    scorer = pm.PolarityScorer(PolarityModel(fit=toy_fit(), embedder=embedder))
    frame = pd.DataFrame({"qid": ["q1", "q1"], "query": ["a", "a"], "docno": ["d1", "d2"], "score": [2.0, 1.0],
                          "rank": [0, 1], "text": ["Cars pollute the air.", None]})
    with pytest.raises(ValueError, match="'text' of document 'd2' of query 'q1' is missing, not a string"):
        scorer(frame)
    with pytest.raises(ValueError, match="'text' of document 'd2' of query 'q1' is a bytes"):
        scorer(frame.assign(text=["Cars pollute the air.", b"Parking"]))


def test_anchors_define_the_axis_without_labels(embedder):
    anchors = {"q1": ("Cars should be banned from city centres.", "Cars should be allowed in city centres.")}
    swapped = {"q1": anchors["q1"][::-1]}
    texts = toy_fit().texts["q1"]
    labels = np.array(toy_fit().labels["q1"])
    model = PolarityModel(fit=toy_fit(labels=False), embedder=embedder, anchors=anchors, anchor_within=1)
    scores = model.score(["q1"] * 6, texts)
    assert consistent_accuracy(scores, ["q1"] * 6, labels == "pro") == 1.0  # separates the two sides
    reverse = PolarityModel(fit=toy_fit(labels=False), embedder=embedder, anchors=swapped, anchor_within=1)
    assert np.allclose(reverse.score(["q1"] * 6, texts), -scores)  # statement 1 sets the positive pole
    principal = fit_axes(embedder.embed(texts).astype(np.float64), 1).components[0]
    assert abs(model.axes("q1").components[0] @ principal) == pytest.approx(1.0)  # inside the top-1 span
    unanchored = PolarityModel(fit=toy_fit(labels=False), embedder=embedder)
    assert np.allclose(unanchored.score(["q2"], ["Reactors run day and night."]),
                       model.score(["q2"], ["Reactors run day and night."]))  # queries without anchors: PCA
    with pytest.raises(ValueError, match="anchors define one axis"):
        PolarityModel(fit=toy_fit(), embedder=embedder, anchors=anchors, components=2)


def test_validation_with_negated_query_anchors(procon_subset, embedder):
    plain = validate_polarity(procon_subset, embedder=embedder, text="title")
    anchored = validate_polarity(procon_subset, embedder=embedder, text="title", anchors="negated-query", anchor_within=5)
    assert anchored["anchors"] == "negated-query" and anchored["queries"] == plain["queries"]
    assert anchored["consistent_accuracy"] != plain["consistent_accuracy"]
    with pytest.raises(ValueError, match="anchors must be one of"):
        validate_polarity(procon_subset, embedder=embedder, anchors="claims")


def test_polarity_scorer_fetches_text_from_a_dataset(embedder):
    from pairmeasures.demo import load_toy

    toy = load_toy()
    texts = toy.documents[["docno", "text"]]

    class Docstore:  # anything with PyTerrier's text_loader() protocol, e.g. an ir_datasets dataset
        def text_loader(self, fields, verbose=False):
            return pt.apply.generic(lambda frame: frame.merge(texts, on="docno", how="left"))

    run = toy.runs["pro-first"][["qid", "docno", "score", "rank"]].merge(toy.topics, on="qid")
    model = PolarityModel(fit=toy_fit(), embedder=embedder)
    fetched = pm.PolarityScorer(model, dataset=Docstore())(run)
    direct = pm.PolarityScorer(model)(run.merge(texts, on="docno"))
    assert np.allclose(fetched.sort_values("docno")["polarity"], direct.sort_values("docno")["polarity"])


def test_unknown_text_fields_are_refused(procon_subset):
    with pytest.raises(ValueError, match="text must be one of \\('text', 'title', 'title\\+text'\\), got 'body'"):
        FitSet.from_beir(procon_subset, text="body")
    with pytest.raises(ValueError, match="got 'body'"):
        pm.sideinfo.resolve(f"pca:{procon_subset}?text=body")


# --- damaged BEIR folders: one strict reader for FitSet.from_beir, pca:, beir: and validate-polarity --------

def damaged_copy(source, target, name, change):
    """A copy of the BEIR folder ``source`` in ``target`` with ``change(path)`` applied to its file ``name``."""
    import shutil

    shutil.copytree(source, target)
    change(target / name)
    return target


def gzip_file(path):
    import gzip

    path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()


def replace_line(number, text):
    def change(path):
        lines = path.read_text().splitlines()
        lines[number - 1] = text
        path.write_text("\n".join(lines) + "\n")
    return change


def test_gzip_copies_are_read_like_plain_files(procon_subset, tmp_path):
    folder = damaged_copy(procon_subset, tmp_path / "gz", "corpus.jsonl", gzip_file)
    gzip_file(folder / "labels.tsv")
    plain, packed = FitSet.from_beir(procon_subset), FitSet.from_beir(folder)
    assert packed.texts == plain.texts and packed.labels == plain.labels and len(packed.texts) == 4


def test_missing_or_empty_files_name_the_folder_and_file(procon_subset, tmp_path):
    folder = damaged_copy(procon_subset, tmp_path / "noqrels", "qrels/test.tsv", lambda p: p.unlink())
    with pytest.raises(FileNotFoundError, match=r"noqrels' is not a BEIR-layout folder: it has no qrels/test\.tsv"):
        FitSet.from_beir(folder)
    run = pd.DataFrame({"query_id": "q", "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    qrels = pd.DataFrame({"query_id": "q", "doc_id": ["a", "b"], "relevance": 1})
    with pytest.raises(pm.sideinfo.SideInfoError, match=r"pca:.*noqrels: .*it has no qrels/test\.tsv \(nor qrels/test\.tsv\.gz\)"):
        ir_measures.calc_aggregate([pm.Duo(polarity=f"pca:{folder}")], qrels, run)
    with pytest.raises(pm.sideinfo.SideInfoError, match=r"beir:.*noqrels: .*it has no qrels/test\.tsv"):
        ir_measures.calc_aggregate([pm.rKL(group=f"beir:{folder}")], qrels, run)
    empty = damaged_copy(procon_subset, tmp_path / "empty", "qrels/test.tsv", lambda p: p.write_text(""))
    with pytest.raises(ValueError, match=r"qrels/test\.tsv:1: expected the header 'query-id\\tcorpus-id\\tscore'.*empty file"):
        FitSet.from_beir(empty)


@pytest.mark.parametrize("name,line,text,message", [
    ("qrels/test.tsv", 3, "videogames\tnowhere\t1", r"qrels/test\.tsv:3: document 'nowhere' is not in the corpus"),
    ("qrels/test.tsv", 3, "nodebate\tvideogames_pro_1\t1", r"qrels/test\.tsv:3: query 'nodebate' is not among the queries"),
    ("qrels/test.tsv", 3, "videogames\tvideogames_pro_1\thigh", r"qrels/test\.tsv:3: score 'high' is not an integer"),
    ("labels.tsv", 4, "videogames\tvideogames_pro_2", r"labels\.tsv:4: expected 3 tab-separated fields"),
    ("labels.tsv", 4, "videogames\tvideogames_pro_2\t", r"labels\.tsv:4: empty group"),
    ("labels.tsv", 4, "videogames\tvideogames_pro_0\tpro", r"labels\.tsv:4: .*already paired on line 2"),
    ("corpus.jsonl", 2, '{"_id": "videogames_pro_1", "title": "t"}', r"corpus\.jsonl:2: record has no 'text' field"),
    ("corpus.jsonl", 2, '{"_id": "videogames_pro_1", "text": 7}', r"corpus\.jsonl:2: record 'videogames_pro_1': text must be text"),
    ("queries.jsonl", 2, '{"_id": "x", "text": "cut', r"queries\.jsonl:2: not a JSON object"),
])
def test_damaged_lines_are_named_by_file_and_line(procon_subset, tmp_path, name, line, text, message):
    folder = damaged_copy(procon_subset, tmp_path / "damaged", name, replace_line(line, text))
    with pytest.raises(ValueError, match=message):
        FitSet.from_beir(folder)
    with pytest.raises(ValueError, match=message):
        pm.sideinfo.resolve(f"pca:{folder}")
    with pytest.raises(ValueError, match=message):
        validate_polarity(folder)


def test_validate_polarity_command_names_the_damaged_line(procon_subset, tmp_path):
    folder = damaged_copy(procon_subset, tmp_path / "damaged", "qrels/test.tsv", replace_line(5, "videogames\tnowhere\t1"))
    done = subprocess.run([sys.executable, "-m", "pairmeasures", "validate-polarity", str(folder)],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "qrels/test.tsv:5: document 'nowhere' is not in the corpus" in done.stderr


def test_a_document_without_polarity_is_named_with_the_reason(tmp_path, embedder):
    """A pca: query whose axis cannot be fitted (one fit document) gives its documents no polarity; the
    error says why, as the Wiki-Balance sample's queries with one document do."""
    (tmp_path / "qrels").mkdir()
    texts = {"a": "Cars pollute the air.", "b": "Cars give people freedom.", "c": "Trains are cleaner.",
             "d": "Taxes should be lower."}
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in texts.items()))
    (tmp_path / "queries.jsonl").write_text('{"_id": "cars", "text": "Cars?"}\n{"_id": "tax", "text": "Taxes?"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\ncars\ta\t1\ncars\tb\t1\ncars\tc\t1\ntax\td\t1\n")
    run = pd.DataFrame({"query_id": ["cars"] * 3 + ["tax"], "doc_id": list("abcd"), "score": [3.0, 2, 1, 1]})
    qrels = pd.DataFrame({"query_id": ["cars", "tax"], "doc_id": ["a", "d"], "relevance": [1, 1]})
    with pytest.raises(pm.RunInputError, match=r"no polarity for document 'd' of query 'tax' in resource 'pca:.*' "
                                               r"\(query 'tax' has 1 fit document\(s\); 1 axis\(es\) need at least 2\); "
                                               r"1 of 4 considered documents lack one"):
        ir_measures.calc_aggregate([pm.Duo(polarity=f"pca:{tmp_path}", missing="error")], qrels, run)
