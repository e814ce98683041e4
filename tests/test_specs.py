"""System specs: parsing, canonical text, every error, and real builds run through pt.Experiment."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pairmeasures as pm
from pairmeasures.pipelines.specs import (
    STAGES,
    SpecError,
    Stage,
    SystemContext,
    build_system,
    canonical_spec,
    parse_spec,
)

TOPICS = {"uniforms": "school uniforms", "homework": "homework for students"}
SIDES = {"uniforms": ("uniforms are good for school discipline and equality", "uniforms are bad for expression"),
         "homework": ("homework helps students learn and practise", "homework harms students sleep and play")}


@pytest.fixture(scope="module")
def tiny_beir(tmp_path_factory):
    """Two queries with eight documents each (four per side), judged and labelled: a BEIR folder made here, so
    these builds run without the data mirror."""
    folder = tmp_path_factory.mktemp("tiny-beir")
    (folder / "qrels").mkdir()
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in TOPICS.items()))
    docs, qrels, labels = [], ["query-id\tcorpus-id\tscore"], ["query-id\tcorpus-id\tgroup"]
    for qid, (pro, con) in SIDES.items():
        for side, text in (("pro", pro), ("con", con)):
            for i in range(4):
                doc = f"{qid}_{side}_{i}"
                docs.append({"_id": doc, "title": "", "text": f"{text} {' '.join(['indeed'] * i)} {doc}"})
                qrels.append(f"{qid}\t{doc}\t{int(i < 2)}")
                labels.append(f"{qid}\t{doc}\t{side}")
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    (folder / "labels.tsv").write_text("\n".join(labels) + "\n")
    return folder


@pytest.fixture(scope="module")
def tiny(tiny_beir, tmp_path_factory):
    import pyterrier as pt

    from pairmeasures.io.beir import read_beir

    beir = read_beir(tiny_beir)
    topics = pt.new.queries(list(TOPICS.values()), qid=list(TOPICS))
    qrels = beir.qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    context = SystemContext(tiny_beir, index_dir=tmp_path_factory.mktemp("indexes"))
    return context, topics, qrels


def experiment(systems, topics, qrels, names, measures=None):
    import pyterrier as pt
    from ir_measures import nDCG

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        return pt.Experiment(systems, topics, qrels, names=names, perquery=True,
                             eval_metrics=measures or [nDCG @ 10, pm.Duo @ 10])


def orders(frame) -> dict:
    return {q: list(f.sort_values("rank")["docno"]) for q, f in frame.groupby("qid")}


# Parsing and canonical text

def test_parse_reads_names_arguments_and_options():
    stages = parse_spec(" bm25 >> dense>>duogreedy( 0.5 , mode = exact, k=20 )>>most(-1)>>run:a b.trec")
    assert [s.name for s in stages] == ["bm25", "dense", "duogreedy", "most", "run"]
    assert stages[2] == Stage("duogreedy", (0.5,), (("k", 20), ("mode", "exact")), stages[2].text)
    assert stages[3].args == (-1,) and stages[4].args == ("a b.trec",)
    assert parse_spec("pkg.mod:make")[0] == Stage("module", ("pkg.mod", "make"), (), "pkg.mod:make")
    assert canonical_spec(" BM25>>duogreedy(0.50, k=10) >> ce('models/x') ") == "bm25>>duogreedy(0.5,k=10)>>ce(models/x)"
    assert canonical_spec("bm25>>most(+1)") == "bm25>>most(1)"
    assert parse_spec("bm25>>mmr(0.5,k=123456789012345678901)")[1].options == (("k", 123456789012345678901),)


NAMES = st.sampled_from(["bm25", "dense", "duogreedy", "mmr", "most", "least", "ce"])
VALUES = st.one_of(st.integers(-1000, 1000), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
                   st.sampled_from(["exact", "greedy", "models/x"]))
SPACE = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def spec_texts(draw):
    """A syntactically valid spec written with random spacing, and the same spec written without any."""
    written, tight = [], []
    for _ in range(draw(st.integers(1, 4))):
        name = draw(NAMES)
        args = [repr(v) if isinstance(v, float) else str(v) for v in draw(st.lists(VALUES, max_size=2))]
        options = {key: repr(v) if isinstance(v, float) else str(v)
                   for key, v in draw(st.dictionaries(st.sampled_from(["k", "mode", "x"]), VALUES, max_size=2)).items()}
        items = args + [f"{key}={value}" for key, value in options.items()]
        pad = lambda: draw(SPACE)  # noqa: E731
        written.append(pad() + name + pad() + (("(" + ",".join(pad() + i + pad() for i in items) + ")") if items else "")
                       + pad())
        tight.append(name + (f"({','.join(items)})" if items else ""))
    return ">>".join(written), ">>".join(tight)


@settings(max_examples=200, deadline=None)
@given(spec_texts())
def test_canonical_spec_is_idempotent_and_whitespace_insensitive(texts):
    written, tight = texts
    canonical = canonical_spec(written)
    assert canonical == canonical_spec(tight) == canonical_spec(canonical)
    assert parse_spec(canonical) == [Stage(s.name, s.args, s.options, s.canonical()) for s in parse_spec(written)]
    assert not any(c.isspace() for c in canonical)


def test_stages_lists_every_stage_with_an_example():
    assert {key.split("(")[0].split(":")[0] for key in STAGES} >= {"bm25", "dense", "ce", "duogreedy", "mmr", "most",
                                                                   "least", "run", "module"}
    assert all("e.g. " in text for text in STAGES.values())
    for text in STAGES.values():  # the examples themselves parse
        example = text.split("e.g. ")[1].split(" or ")[0]
        assert parse_spec(example)


# Errors: each names the spec, the stage and what to write instead

@pytest.mark.parametrize("spec, words", [
    ("", ["non-empty", "bm25>>dense"]),
    ("bm25>>>>dense", ["empty stage"]),
    ("bm25>>duogreedy(0.5", ["'(' is not closed"]),
    ("bm25>>duogreedy0.5)", ["')' without its '('"]),
    ("bm25>>duogreedy(,)", ["empty argument", "duogreedy(0.5)"]),
    ("bm25>>duogreedy(k=3, 0.5)", ["positional argument follows a keyword"]),
    ("bm25>>12x", ["cannot read stage '12x'", "run:PATH"]),
    ("bm25>>dnse", ["unknown stage 'dnse'", "did you mean 'dense'", "mmr(LAMBDA"]),
    ("bm25>>duogreedy(0.5, kk=3)", ["'duogreedy(0.5, kk=3)'", "no option 'kk'", "k, mode", "duogreedy(0.5, k=10)"]),
    ("bm25>>mmr(0.5, mode=exact)", ["no option 'mode'", "mmr(0.5, k=10)"]),
    ("bm25>>duogreedy(1.5)", ["'duogreedy(1.5)'", "Lambda must be a number in [0, 1]", "duogreedy(0.5, k=10)"]),
    ("bm25>>mmr(-0.1)", ["'mmr(-0.1)'", "Lambda must be a number in [0, 1]", "mmr(0.5, k=10)"]),
    ("bm25>>mmr(nan)", ["Lambda must be a number in [0, 1]"]),
    ("bm25>>duogreedy(high)", ["Lambda must be a number", "got 'high'"]),
    ("bm25>>duogreedy(0.5, k=0)", ["k must be a positive integer", "got 0"]),
    ("bm25>>mmr(0.5, k=2.5)", ["k must be a positive integer", "got 2.5"]),
    ("bm25>>duogreedy(0.5, mode=fast)", ["mode must be 'greedy' or 'exact'"]),
    ("bm25>>duogreedy(0.5, mode=exact)", ["mode='exact' is defined for Lambda=0"]),
    ("bm25>>duogreedy()", ["takes 1 argument, got 0", "duogreedy(0.5, k=10)"]),
    ("bm25>>duogreedy(0.5, 3)", ["takes 1 argument, got 2"]),
    ("bm25>>most(0)", ["'most(0)'", "pole must be +1 or -1", "most(+1)"]),
    ("bm25>>least(1)", ["'least(1)'", "takes 0 arguments", "least"]),
    ("bm25(3)", ["'bm25(3)'", "takes 0 arguments"]),
    ("duogreedy(0.5)", ["re-ranks", "bm25>>duogreedy(0.5)"]),
    ("bm25>>dense>>bm25", ["'bm25' retrieves", "first stage"]),
    ("bm25>>run:x.trec", ["retrieves", "first stage"]),
    ("bm25>>ce(/no/such/model)", ["'ce(/no/such/model)'", "cross-encoder folder '/no/such/model' does not exist"]),
    ("bm25>>ce()", ["takes 1 argument, got 0", "ce(path/to/cross-encoder)"]),
    ("bm25>>dense(/no/such/model)", ["'dense(/no/such/model)'", "model folder '/no/such/model' does not exist",
                                     "or dense for --model"]),
    ("dense(/no/such/model)", ["model folder '/no/such/model' does not exist"]),
    ("bm25>>dense(a, b)", ["takes at most 1 argument, got 2"]),
    ("run:/no/such/run.trec", ["run file '/no/such/run.trec' does not exist"]),
    ("no_such_module_xyz:f", ["cannot import module 'no_such_module_xyz'", "PYTHONPATH"]),
    ("json:no_such_attribute", ["module 'json' has no attribute 'no_such_attribute'"]),
    ("json:dumps", ["json:dumps needs arguments", "zero-argument callable"]),
    ("json:__name__", ["is a str, not a pt.Transformer"]),
])
def test_every_bad_spec_says_what_to_fix(spec, words, tmp_path):
    with pytest.raises(SpecError) as info:
        build_system(spec, SystemContext(tmp_path / "never-read"))  # checked before anything loads
    message = str(info.value)
    assert all(word in message for word in words), message
    if spec:
        assert repr(spec) in message
    assert isinstance(info.value, ValueError)


def test_a_bad_run_file_line_is_named(tmp_path):
    run = tmp_path / "bad.trec"
    run.write_text("q1 Q0 d1 0 2.5 sys\nq1 Q0 d2 1 high sys\n")
    with pytest.raises(SpecError, match=r"run:.*bad\.trec.*bad\.trec:2: score 'high' is not a finite number"):
        build_system(f"run:{run}", SystemContext(tmp_path))
    run.write_text("q1 Q0 d1\n")
    with pytest.raises(SpecError, match=r"bad\.trec:1: expected 6 fields"):
        build_system(f"run:{run}", SystemContext(tmp_path))


# Real builds

def test_duogreedy_specs_through_pt_experiment(tiny):
    from ir_measures import nDCG

    context, topics, qrels = tiny
    bm25 = build_system("bm25", context)
    systems = [build_system(s, context) for s in ("bm25>>duogreedy(1)", "bm25>>duogreedy(0, mode=exact)",
                                                   "bm25>>duogreedy(0)", "bm25>>most(+1)", "bm25>>least")]
    first = bm25(topics)
    assert orders(systems[0](topics)) == orders(first)  # Lambda = 1 keeps BM25's ranking
    relevance = experiment([bm25, systems[0]], topics, qrels, ["bm25", "keep"], measures=[nDCG @ 10])
    assert (relevance.pivot_table(index="qid", columns="name", values="value").nunique(axis=1) == 1).all()
    table = experiment(systems, topics, qrels, ["keep", "exact", "greedy", "most", "least"])
    per_query = table.pivot_table(index=["measure", "name"], columns="qid", values="value")
    assert per_query.shape[1] == len(TOPICS)  # every query has enough documents to be measured
    duo = per_query.loc["Duo@10"]
    assert (duo.loc["exact"] == 0).all() and (duo.loc["least"] == 0).all() and (duo.loc["most"] == 1).all()
    assert (duo.loc["greedy"] < duo.loc["keep"]).all()
    out = systems[3](topics)
    assert out.groupby("qid")["polarity"].first().gt(0).all()  # most(+1): the top document on the + side


def test_bm25_dense_mmr_reorders_only_the_top_k(tiny):
    import pyterrier_dr
    from ir_measures import nDCG

    context, topics, qrels = tiny
    dense = build_system("bm25>>dense", context)(topics)
    mmr = build_system("bm25>>dense>>mmr(0.5, k=4)", context)(topics)
    assert "doc_vec" not in mmr.columns and {"text", "score", "rank"} <= set(mmr.columns)
    before, after = orders(dense), orders(mmr)
    k = 4
    assert dense.groupby("qid").size().gt(k).all()
    for qid in TOPICS:
        assert sorted(after[qid][:k]) == sorted(before[qid][:k]) and after[qid][k:] == before[qid][k:]
        head = dense[dense.qid == qid].sort_values("rank").iloc[:k]
        head = pm.bi_encoder().doc_encoder()(head)
        assert after[qid][:k] == list(pyterrier_dr.MmrScorer(Lambda=0.5)(head)["docno"])  # the same MMR rule
    assert any(after[q][:k] != before[q][:k] for q in TOPICS)  # it does reorder
    kept = build_system("bm25>>dense>>mmr(1, k=8)", context)(topics)
    assert orders(kept) == before
    retrieved = build_system("dense", context)(topics)  # dense retrieval: no text in its frame, mmr inserts it
    diverse = build_system("dense>>mmr(0, k=3)", context)(topics)
    assert {q: o[3:] for q, o in orders(diverse).items()} == {q: o[3:] for q, o in orders(retrieved).items()}
    assert "text" in diverse.columns and "doc_vec" not in diverse.columns
    table = experiment([build_system("bm25>>dense>>mmr(0.5)", context)], topics, qrels, ["mmr"],
                       measures=[nDCG @ 10])
    assert table["value"].notna().all()


def test_dense_with_a_model_folder_is_dense_with_that_model(tiny, tmp_path):
    """dense(PATH) names its model in the spec: the default model's folder gives exactly what plain dense gives,
    first stage and re-ranker alike, so two models can stand side by side in one audit."""
    from pairmeasures.compute.embed import default_model_path

    context, topics, _ = tiny
    folder = default_model_path()
    for plain, named in (("bm25>>dense", f"bm25>>dense({folder})"), ("dense", f"dense({folder})")):
        left, right = build_system(plain, context)(topics), build_system(named, context)(topics)
        assert orders(left) == orders(right)
        assert np.array_equal(left.sort_values(["qid", "rank"])["score"].to_numpy(),
                              right.sort_values(["qid", "rank"])["score"].to_numpy())
    assert canonical_spec(f"bm25 >> dense( {folder} )") == f"bm25>>dense({folder})"


def test_audit_run_cache_follows_the_model_folder_content(tmp_path):
    """A model retrained into the same folder must not reuse the runs of the old one: the cache key of dense(PATH)
    and ce(PATH) holds a fingerprint of the folder's files, not its path."""
    from pairmeasures.pipelines.specs import System

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"first weights")
    specs = (f"bm25>>dense({folder})", f"bm25>>ce({folder})", f"dense({folder})")
    before = {spec: System.parse(spec).identity() for spec in specs}
    (folder / "model.safetensors").write_bytes(b"other weights")
    after = {spec: System.parse(spec).identity() for spec in before}
    assert all(before[spec] != after[spec] for spec in before)
    assert System.parse("bm25 >> dense").identity() == "bm25>>dense"
    assert System.parse("json:dumps").identity() is None  # user code is never cached


def test_run_file_spec_reproduces_the_file_and_takes_rerankers(tiny, tmp_path):
    import pyterrier as pt
    from ir_measures import nDCG

    context, topics, qrels = tiny
    first = build_system("bm25", context)(topics)
    path = tmp_path / "bm25.trec"
    pt.io.write_results(first, str(path), format="trec")
    again = build_system(f"run:{path}", context)(topics)
    assert orders(again) == orders(first)
    np.testing.assert_allclose(again.sort_values(["qid", "rank"])["score"], first.sort_values(["qid", "rank"])["score"],
                               rtol=1e-6)
    table = experiment([build_system(f"run:{path}", context), build_system("bm25", context)], topics, qrels,
                       ["run", "bm25"], measures=[nDCG @ 10])
    values = table.pivot_table(index="name", values="value")["value"]
    assert values["run"] == values["bm25"]
    dense = build_system(f"run:{path}>>dense", context)(topics)  # a run has no text: it is inserted
    assert orders(dense) == orders(build_system("bm25>>dense", context)(topics))


def test_module_attr_spec(tiny, tmp_path, monkeypatch):
    context, topics, qrels = tiny
    (tmp_path / "my_systems.py").write_text(
        "import pyterrier as pt\n"
        "def reversed_bm25():\n"
        "    return pt.apply.generic(lambda frame: pt.model.add_ranks(frame.assign(score=-frame['score'])))\n"
        "ALREADY = pt.apply.generic(lambda frame: frame)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = build_system("bm25", context)(topics)
    flipped = build_system("bm25>>my_systems:reversed_bm25", context)(topics)
    merged = first.merge(flipped, on=["qid", "docno"])
    np.testing.assert_array_equal(merged["score_y"], -merged["score_x"])
    top = merged[merged["rank_y"] == 0].set_index("qid")["score_x"]
    assert top.sort_index().equals(merged.groupby("qid")["score_x"].min().sort_index())  # BM25's last document now leads
    assert orders(build_system("bm25>>my_systems:ALREADY>>duogreedy(1)", context)(topics)) == orders(first)


def test_cross_encoder_spec(tiny, tmp_path):
    pytest.importorskip("sentence_transformers")
    from sentence_transformers import CrossEncoder
    from test_neural_stages import save_tiny_cross_encoder

    context, topics, qrels = tiny
    folder = save_tiny_cross_encoder(tmp_path / "ce")
    out = build_system(f"bm25>>ce({folder})", context)(topics)
    expected = CrossEncoder(str(folder), device="cpu").predict(list(zip(out["query"], out["text"])))
    np.testing.assert_allclose(out["score"], expected, rtol=1e-5)
    table = experiment([build_system(f"bm25>>ce({folder})>>duogreedy(0.5)", context)], topics, qrels, ["ce"])
    assert set(table["measure"]) == {"nDCG@10", "Duo@10"}


def test_specs_on_a_registered_beir_subset(procon_subset, tmp_path):
    import pyterrier as pt

    from pairmeasures.io.beir import read_beir

    beir = read_beir(procon_subset)
    topics = pt.new.queries([q["text"] for q in beir.queries.values()], qid=list(beir.queries))
    qrels = beir.qrels.rename(columns={"query_id": "qid", "doc_id": "docno", "relevance": "label"})
    context = SystemContext(procon_subset, text="title", num_results=20, index_dir=tmp_path)
    systems = [build_system(s, context) for s in ("bm25>>duogreedy(1)", "bm25>>duogreedy(0, mode=exact)")]
    table = experiment(systems, topics, qrels, ["bm25", "exact"]).pivot_table(index="name", columns="measure",
                                                                             values="value")
    assert table.loc["exact", "Duo@10"] == 0 < table.loc["bm25", "Duo@10"]
    assert table.loc["bm25", "nDCG@10"] > 0.3


# pm.TopKMMR itself

@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=5), st.sampled_from([0.0, 0.3, 0.5, 0.9]),
       st.integers(1, 14), st.integers(0, 2**32 - 1))
def test_top_k_mmr_is_pyterrier_dr_mmr_on_each_top_k(lengths, Lambda, k, seed):
    import pandas as pd
    import pyterrier as pt
    import pyterrier_dr

    rng = np.random.default_rng(seed)
    rows = [{"qid": f"q{q}", "docno": f"d{q}-{i}", "score": float(n - i + rng.normal(scale=0.5)),
             "doc_vec": rng.normal(size=3).astype(np.float32), "extra": i}
            for q, n in enumerate(lengths) for i in range(n)]
    frame = pt.model.add_ranks(pd.DataFrame(rows)).sample(frac=1, random_state=seed % 1000)  # any row order
    out = pm.TopKMMR(Lambda, k)(frame)
    assert "doc_vec" not in out.columns and "extra" in out.columns
    for qid, group in frame.groupby("qid"):
        group = group.sort_values("rank")
        expected = list(pyterrier_dr.MmrScorer(Lambda=Lambda)(group.iloc[:k])["docno"]) + list(group["docno"][k:])
        assert orders(out)[qid] == expected
    kept = pm.TopKMMR(1.0, k)(frame)
    assert orders(kept) == orders(frame)
    assert (kept.groupby("qid")["score"].diff().dropna() < 0).all()  # scores follow the new ranks


def test_top_k_mmr_needs_document_vectors():
    import pandas as pd
    import pyterrier as pt

    frame = pd.DataFrame({"qid": ["1"], "docno": ["a"], "score": [1.0], "rank": [0]})
    with pytest.raises(pt.validate.InputValidationError, match="doc_encoder"):
        pm.TopKMMR(0.5, 3)(frame)
    with pytest.raises(ValueError, match="Lambda must be a number in"):
        pm.TopKMMR(2, 3)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        pm.TopKMMR(0.5, 0)
    assert pm.TopKMMR(0.5, 3)(frame.iloc[:0].assign(doc_vec=[])).empty


def test_canonical_spec_writes_equal_numbers_alike():
    assert canonical_spec("bm25>>duogreedy(0)") == canonical_spec("bm25>>duogreedy(0.0)") == "bm25>>duogreedy(0)"
    assert canonical_spec("bm25>>mmr(0.50, k=10.0)") == "bm25>>mmr(0.5,k=10)"


def test_a_run_files_ranks_order_its_tied_documents(tmp_path):
    """run:PATH shows documents of equal score in the file's rank order (else its line order)."""
    import pyterrier as pt

    run = tmp_path / "tied.trec"
    run.write_text("q1 Q0 d1 2 1.0 s\nq1 Q0 d2 3 1.0 s\nq1 Q0 d3 1 1.0 s\nq1 Q0 d4 4 0.5 s\n")
    out = build_system(f"run:{run}", SystemContext(tmp_path)).transform(pt.new.queries(["x"], qid=["q1"]))
    assert list(out.sort_values("rank")["docno"]) == ["d3", "d1", "d2", "d4"]
