"""Resources named by dataset id (``irds:ID``, ``pca:irds:ID``): the same values as the folder they are read
from, short measure names, one resource serving several kinds, and errors that name the dataset."""

from __future__ import annotations

import warnings

import ir_datasets
import ir_measures
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pairmeasures as pm
from pairmeasures.sideinfo.polarity import FitSet

pytestmark = pytest.mark.usefixtures("data_mirror")  # the registered datasets read the real data


def procon_run(queries: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Qrels and a shuffled run of every judged document of the first ``queries`` ProCon debates."""
    dataset = ir_datasets.load("pair/procon")
    keep = sorted({q.query_id for q in dataset.queries_iter()})[:queries]
    qrels = pd.DataFrame([(q.query_id, q.doc_id, q.relevance) for q in dataset.qrels_iter() if q.query_id in keep],
                         columns=["query_id", "doc_id", "relevance"])
    run = qrels.assign(score=np.random.default_rng(seed).random(len(qrels)))[["query_id", "doc_id", "score"]]
    return qrels, run


def test_group_labels_by_dataset_id_equal_the_folders_and_name_the_measure_portably(data_dir):
    qrels, run = procon_run(6)
    by_id = [pm.rKL(group="irds:pair/procon") @ 10, pm.rND(group="irds:pair/procon", protected="con") @ 10]
    by_folder = [pm.rKL(group=f"beir:{data_dir / 'procon'}") @ 10,
                 pm.rND(group=f"beir:{data_dir / 'procon'}", protected="con") @ 10]
    values = ir_measures.calc_aggregate(by_id + by_folder, qrels, run)
    assert [values[m] for m in by_id] == [values[m] for m in by_folder]
    assert 0 < values[by_id[0]] < 1
    assert str(by_id[0]) == "rKL(group='irds:pair/procon')@10"
    assert ir_measures.parse_measure(str(by_id[0])) == by_id[0]

    topics = pd.DataFrame({"qid": sorted(run["query_id"].unique()), "query": "q"})
    system = pt.Transformer.from_df(run.rename(columns={"query_id": "qid", "doc_id": "docno"}))
    table = pt.Experiment([system], topics, qrels.rename(columns={"query_id": "qid", "doc_id": "docno",
                                                                  "relevance": "label"}),
                          eval_metrics=[by_id[0], by_folder[0]], names=["random"])
    assert "rKL(group='irds:pair/procon')@10" in table.columns
    assert table[str(by_id[0])].iloc[0] == pytest.approx(table[str(by_folder[0])].iloc[0])


def test_polarity_fitted_on_a_dataset_by_id_equals_the_folders(data_dir, embedder):
    qrels, run = procon_run(2)
    by_id, by_folder = (pm.Duo(polarity=f"pca:{where}?text=title+text") @ 10
                        for where in ("irds:pair/procon", data_dir / "procon"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pm.DegenerateQueryWarning)
        values = ir_measures.calc_aggregate([by_id, by_folder], qrels, run)
    assert values[by_id] == pytest.approx(values[by_folder]) and 0 < values[by_id] < 1
    assert str(by_id) == "Duo(polarity='pca:irds:pair/procon?text=title+text')@10"


@pytest.mark.parametrize("text", ["text", "title", "title+text"])
def test_fit_set_from_a_dataset_equals_the_fit_set_from_its_folder(data_dir, text):
    expected = FitSet.from_beir(data_dir / "procon", text=text)
    assert FitSet.from_dataset("pair/procon", text=text) == expected
    assert FitSet.from_dataset(pt.get_dataset("irds:pair/procon"), text=text) == expected
    assert expected.positive == "pro"
    assert FitSet.from_dataset(ir_datasets.load("pair/procon"), positive="con").positive == "con"


def test_one_dataset_resource_serves_text_and_labels():
    source = pm.sideinfo.resolve("irds:pair/procon")
    assert source.provides == ("text", "labels")
    assert pm.sideinfo.resolve("irds:pair/procon") is source  # cached by name
    labels = source.for_kind("labels").lookup(np.array(["abortion", "abortion"]), np.array(["abortion_pro_0", "x"]), {})
    text = source.for_kind("text").lookup(np.array(["abortion"]), np.array(["abortion_pro_0"]), {})
    assert list(labels) == ["pro", None] and isinstance(text[0], str) and text[0]


def test_dataset_resources_are_cached_by_name_not_by_a_folder_of_that_name(tmp_path, monkeypatch):
    (tmp_path / "pair" / "procon").mkdir(parents=True)  # a folder named like the dataset id must not matter
    monkeypatch.chdir(tmp_path)
    for spec in ("irds:pair/procon", "pca:irds:pair/procon?model=M", "irds:pair/procon?fields=title+text"):
        assert pm.sideinfo.resource_key(spec) is None
    assert pm.sideinfo.resource_key("beir:pair/procon") is not None


def test_unknown_dataset_ids_list_the_registered_ones():
    qrels, run = procon_run(1)
    for measure in (pm.rKL(group="irds:pair/procn"), pm.Duo(polarity="pca:irds:pair/procn"),
                    pm.TExFAIR(text="irds:pair/procn")):
        with pytest.raises(pm.sideinfo.SideInfoError, match=r"has no dataset 'pair/procn'; pairmeasures registers "
                                                            r"pair/wiki-balance/synthetic, .*pair/procon, pair/grep-biasir"):
            ir_measures.calc_aggregate([measure], qrels, run)
    with pytest.raises(pm.sideinfo.SideInfoError, match="has no dataset 'pair/procn'"):
        FitSet.from_dataset("pair/procn")


def test_a_dataset_without_gold_labels_says_so():
    qrels, run = procon_run(1)
    qs1 = "pair/msmarco-passage/dev/gender-qs1"  # documents and qrels from MS MARCO, no labels
    with pytest.raises(pm.RunInputError, match=rf"resource 'irds:{qs1}' provides document text, but group= needs "
                                               rf"labels .*dataset '{qs1}' has no gold labels.*beir:DIR"):
        ir_measures.calc_aggregate([pm.rKL(group=f"irds:{qs1}")], qrels, run)
    with pytest.raises(pm.sideinfo.SideInfoError, match=rf"pca:irds:{qs1}: dataset '{qs1}' has no gold labels, so no "
                                                        r"fit documents: fit on a BEIR folder"):
        ir_measures.calc_aggregate([pm.Duo(polarity=f"pca:irds:{qs1}")], qrels, run)


def test_a_text_only_dataset_named_for_labels_or_polarity():
    if "pairmeasures-tests/procon-docs" not in ir_datasets.registry:
        procon = ir_datasets.load("pair/procon")
        ir_datasets.registry.register("pairmeasures-tests/procon-docs", ir_datasets.Dataset(procon.docs_handler()))
    qrels, run = procon_run(1)
    with pytest.raises(pm.RunInputError, match=r"provides document text, but group= needs labels .*dataset "
                                               r"'pairmeasures-tests/procon-docs' has no gold labels"):
        ir_measures.calc_aggregate([pm.rND(group="irds:pairmeasures-tests/procon-docs")], qrels, run)
    with pytest.raises(pm.RunInputError, match=r"provides document text, but polarity= needs scores .*pca:irds:DATASET"):
        ir_measures.calc_aggregate([pm.Duo(polarity="irds:pairmeasures-tests/procon-docs")], qrels, run)
    texts = [pm.TExFAIR(text="irds:pairmeasures-tests/procon-docs") @ 5, pm.TExFAIR(text="irds:pair/procon") @ 5]
    values = ir_measures.calc_aggregate(texts, qrels, run)
    assert values[texts[0]] == values[texts[1]]


def test_a_plugin_source_of_several_kinds(monkeypatch):
    class Both:
        provides = ("text", "labels")

        def __init__(self):
            self.asked: list = []

        def for_kind(self, kind):
            self.asked.append(kind)
            return pm.sideinfo.resolve("irds:pair/procon").for_kind(kind)

        def lookup(self, query_ids, doc_ids, columns):
            raise AssertionError("the measure looks up in the source for its kind")

    both = Both()
    monkeypatch.setitem(pm.sideinfo._SCHEMES, "both", lambda argument: both)
    qrels, run = procon_run(3)
    values = ir_measures.calc_aggregate([pm.rKL(group="both:x") @ 10, pm.rKL(group="irds:pair/procon") @ 10], qrels, run)
    assert values[pm.rKL(group="both:x") @ 10] == values[pm.rKL(group="irds:pair/procon") @ 10]
    assert set(both.asked) == {"labels"}
