"""``pairmeasures seme material`` as a user runs it: the command as a subprocess on the embedded demo corpus and
on a real benchmark, the material JSON read back and checked against the Duo measure through ir_measures."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE_FIELDS = ("doc_id", "title", "snippet", "text")
CONDITIONS = ["most_positive", "most_negative", "least", "system"]


def material(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pairmeasures", "seme", "material", *args], capture_output=True,
                          text=True, timeout=600, env=env)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def refused(*args: str) -> str:
    """The one-line error of a command that must fail on bad input (no traceback)."""
    done = material(*args, check=False)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("pairmeasures seme material: error:")]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, dict, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("material") / "demo.json"
    done = material("--out", str(out), "--queries", "12", "--seed", "3")
    return out, json.loads(out.read_text(encoding="utf-8")), done


def check_pages(document: dict, k: int, labels: set) -> None:
    """Every field a study page needs is present, typed and non-empty; the orderings show the same documents."""
    assert document["format"] == "pairmeasures-seme-material" and document["version"] == 1
    datetime.fromisoformat(document["created"])
    assert document["conditions"] == CONDITIONS and document["k"] == k
    assert document["dataset"] and document["system"] and document["manifest"]["versions"]["pairmeasures"]
    assert document["queries"]
    for query in document["queries"]:
        assert query["query_id"] and query["query"].strip()
        sides = query["perspectives"]
        assert set(sides) == {"positive", "negative"}
        assert {sides["positive"]["label"], sides["negative"]["label"]} == labels
        assert sides["positive"]["statement"].strip() and sides["negative"]["statement"].strip()
        assert sides["positive"]["statement"] != sides["negative"]["statement"]
        assert list(query["orderings"]) == CONDITIONS
        shown = None
        for ordering in query["orderings"].values():
            assert math.isfinite(ordering["mu_duo"]) and -1 <= ordering["mu_duo"] <= 1
            assert 0 <= ordering["duo"] <= 1 and abs(abs(ordering["mu_duo"]) - ordering["duo"]) < 1e-12
            documents = ordering["documents"]
            assert 3 <= len(documents) <= k
            for doc in documents:
                for name in PAGE_FIELDS:
                    assert isinstance(doc[name], str) and doc[name].strip(), (name, doc)
                assert "\n" not in doc["title"] and len(doc["snippet"]) <= 220
                assert math.isfinite(doc["polarity"])
                assert doc["label"] is None or doc["label"] in labels
            ids = sorted(d["doc_id"] for d in documents)
            assert len(set(ids)) == len(ids)
            assert shown is None or ids == shown, "every ordering shows the same documents"
            shown = ids


def check_extremes(document: dict) -> int:
    """The orderings really are the most and least biased: most_positive has the largest signed DUO of the
    conditions and most_negative the smallest, least has none; the signs follow the documents' polarity. Returns
    how many queries lean both ways."""
    both = 0
    for query in document["queries"]:
        mu = {name: ordering["mu_duo"] for name, ordering in query["orderings"].items()}
        assert mu["most_positive"] == max(mu.values()) and mu["most_negative"] == min(mu.values()), mu
        assert mu["least"] == 0 and query["orderings"]["least"]["duo"] == 0
        assert mu["most_positive"] >= 0 >= mu["most_negative"]
        polarity = [d["polarity"] for d in query["orderings"]["system"]["documents"]]
        positives = sum(p > 0 for p in polarity)
        if positives > len(polarity) / 2:  # sorted from the top down, every prefix has a positive majority
            assert mu["most_positive"] > 0.5, (query["query_id"], mu)
        else:  # sorted from the bottom up, no prefix has one
            assert mu["most_negative"] < -0.5, (query["query_id"], mu)
        both += mu["most_positive"] > 0 > mu["most_negative"]
        one_sided = document["manifest"]["queries"]["one_sided"]
        assert (query["query_id"] in one_sided) == (not mu["most_positive"] > 0 > mu["most_negative"])
    return both


def recomputed(document: dict) -> dict:
    """``{(query, condition): (Duo(signed=True)@k, Duo@k)}`` of the material's own orderings through ir_measures."""
    import ir_measures
    import pandas as pd

    import pairmeasures as pm

    k = document["k"]
    rows = [(f"{q['query_id']}|{name}", d["doc_id"], float(len(o["documents"]) - rank), d["polarity"])
            for q in document["queries"] for name, o in q["orderings"].items() for rank, d in enumerate(o["documents"])]
    run = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "polarity"])
    qrels = pd.DataFrame({"query_id": run["query_id"], "doc_id": run["doc_id"], "relevance": 1})
    signed, plain = pm.Duo(signed=True) @ k, pm.Duo @ k
    values: dict = {}
    for metric in ir_measures.iter_calc([signed, plain], qrels, run):
        values.setdefault(tuple(metric.query_id.split("|")), {})[metric.measure] = metric.value
    return {key: (v[signed], v[plain]) for key, v in values.items()}


def test_demo_material_has_every_page_field(demo):
    out, document, done = demo
    assert f"wrote {out}" in done.stdout and "12 queries" in done.stdout
    warned = [line for line in done.stderr.splitlines() if "Warning" in line]  # one line each, no source line
    assert warned and all(line.startswith("pairmeasures seme material: ") for line in warned), done.stderr
    check_pages(document, 10, {"support", "undermine"})
    assert len(document["queries"]) == 12
    positive = document["queries"][0]["perspectives"]["positive"]
    assert positive["label"] == "support" and positive["statement"].rstrip(".") == document["queries"][0]["query"].rstrip(".")
    manifest = document["manifest"]
    assert manifest["polarity"]["positive"] == "support" and manifest["measures"]["mu_duo"] == "Duo(signed=True)@10"
    assert set(manifest["dataset"]["files_sha256"]) >= {"corpus.jsonl", "labels.tsv", "queries.jsonl"}
    assert manifest["queries"]["selected"] == 12 and manifest["queries"]["seed"] == 3
    # paths as the material's folder sees them: the embedded corpus by its place in the package, not this machine's
    assert document["dataset"] == manifest["dataset"]["source"] == "<pairmeasures>/demo/debates"
    assert manifest["paths"].startswith("relative to this folder") and not manifest["cwd"].startswith("/")
    assert (out.parent / manifest["cwd"]).resolve() == Path.cwd().resolve()


def test_demo_orderings_are_the_most_and_least_biased(demo):
    _, document, _ = demo
    assert check_extremes(document) >= 3  # most demo queries lean either way; some have too few of one side


def test_mu_duo_is_signed_duo_of_the_shown_documents(demo):
    _, document, _ = demo
    values = recomputed(document)
    for query in document["queries"]:
        for name, ordering in query["orderings"].items():
            mu, duo = values[(query["query_id"], name)]
            assert ordering["mu_duo"] == pytest.approx(mu, abs=1e-12) and ordering["duo"] == pytest.approx(duo, abs=1e-12)


def test_gold_labels_and_texts_come_from_the_corpus(demo):
    _, document, _ = demo
    corpus = ROOT / "pairmeasures" / "demo" / "debates"
    texts = {r["_id"]: r["text"] for r in map(json.loads, (corpus / "corpus.jsonl").read_text().splitlines())}
    gold = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in (corpus / "labels.tsv").read_text().splitlines()[1:]}
    for query in document["queries"]:
        for doc in query["orderings"]["system"]["documents"]:
            assert doc["text"] == texts[doc["doc_id"]]
            assert doc["label"] == gold.get((query["query_id"], doc["doc_id"]))


def test_material_is_deterministic_and_force_replaces_it(demo):
    out, document, _ = demo
    before = out.read_text(encoding="utf-8")
    assert "pass --force" in refused("--out", str(out), "--queries", "12", "--seed", "3")
    assert out.read_text(encoding="utf-8") == before, "a refused command leaves the file as it was"
    material("--out", str(out), "--queries", "12", "--seed", "3", "--force")
    again = json.loads(out.read_text(encoding="utf-8"))
    assert again["queries"] == document["queries"]
    assert [q["query_id"] for q in again["queries"]] == [q["query_id"] for q in document["queries"]]


def test_queries_by_id_and_k(tmp_path):
    out = tmp_path / "two.json"
    done = material("--out", str(out), "--queries", "2", "8", "-k", "5", "--system", "bm25")
    # the queries not asked for are not measured, so no warning about them (nor advice for pt.Experiment)
    assert "DegenerateQueryWarning" not in done.stderr and "pt.Experiment" not in done.stderr, done.stderr
    document = json.loads(out.read_text(encoding="utf-8"))
    assert [q["query_id"] for q in document["queries"]] == ["2", "8"]
    check_pages(document, 5, {"support", "undermine"})
    check_extremes(document)
    assert document["system"] == "bm25"


def test_real_benchmark(data_mirror, tmp_path):
    out = tmp_path / "procon.json"
    material("--dataset", "pair/procon", "--out", str(out), "--queries", "4", "-k", "6", "--system", "bm25")
    document = json.loads(out.read_text(encoding="utf-8"))
    check_pages(document, 6, {"pro", "con"})
    check_extremes(document)
    assert document["dataset"] == "pair/procon" and len(document["queries"]) + len(
        document["manifest"]["queries"]["excluded"]) == 4
    titles = [d["title"] for q in document["queries"] for d in q["orderings"]["system"]["documents"]]
    texts = [d["text"] for q in document["queries"] for d in q["orderings"]["system"]["documents"]]
    assert titles != texts, "ProCon documents have titles of their own"
    query = document["queries"][0]
    assert query["perspectives"]["negative"]["statement"].startswith("It is not true that")


def labelled_folder(root: Path, groups: tuple) -> Path:
    (root / "qrels").mkdir(parents=True)
    docs = [(f"q{q}", f"d{q}{i}", groups[i % len(groups)], f"Argument {i} about topic {q}, side {groups[i % len(groups)]}.")
            for q in range(2) for i in range(6)]
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for _, d, _, t in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{q}", "text": f"Topic {q} is good"}) + "\n"
                                                for q in range(2)))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d, _, _ in docs))
    (root / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g, _ in docs))
    return root


def test_bad_input_is_one_clear_error(tmp_path):
    out = str(tmp_path / "m.json")
    message = refused("--dataset", "pair/proconn", "--out", out)
    assert "'pair/proconn'" in message and "did you mean 'pair/procon'" in message
    assert "unknown stage 'frobnicate'" in refused("--system", "bm25>>frobnicate", "--out", out)
    assert "not two perspectives" in refused("--dataset", str(labelled_folder(tmp_path / "three", ("a", "b", "c"))),
                                             "--out", out)
    folder = labelled_folder(tmp_path / "unlabelled", ("pro", "con"))
    (folder / "labels.tsv").unlink()
    assert "no gold labels" in refused("--dataset", str(folder), "--out", out)
    assert "--positive 'maybe'" in refused("--positive", "maybe", "--out", out)
    assert "no query 'nope'" in refused("--queries", "nope", "--out", out)
    assert "-k must be" in refused("-k", "2", "--out", out)
    assert "its folder does not exist" in refused("--out", str(tmp_path / "missing" / "m.json"))
    assert "is a folder" in refused("--out", str(tmp_path))
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"mine": true}')
    assert "not an earlier material file" in refused("--out", str(foreign), "--force")
    assert foreign.read_text() == '{"mine": true}'
    assert not Path(out).exists()


def test_write_material_takes_material_only(tmp_path):
    from pairmeasures.apps.seme.material import write_material

    with pytest.raises(ValueError, match="build_material"):
        write_material({"queries": []}, tmp_path / "m.json")
    write_material({"format": "pairmeasures-seme-material", "queries": []}, tmp_path / "m.json")
    with pytest.raises(ValueError, match="--force"):
        write_material({"format": "pairmeasures-seme-material", "queries": []}, tmp_path / "m.json")


@pytest.mark.parametrize("seed", range(4))
def test_most_signed_order_matches_brute_force(seed):
    """The local search reaches the extreme signed DUO of every ordering, found by brute force, on small lists."""
    from pairmeasures.math.reorder import _signed_duo, most_signed_order, window_orders

    rng = np.random.default_rng(seed)
    for n in range(3, 7):
        for draw in range(6):
            scores = rng.integers(-3, 4, size=n).astype(float) if draw % 2 else rng.normal(size=n) + rng.normal()
            everything = _signed_duo(scores, np.array(list(itertools.permutations(range(n)))))
            for toward in (1, -1):
                found = toward * _signed_duo(scores, most_signed_order(scores, toward)[None, :])[0]
                assert found == pytest.approx((toward * everything).max(), abs=1e-9), (scores, toward)
            windows = window_orders(scores)
            assert windows.shape == (2 ** (n - 1), n) and len({tuple(w) for w in windows}) == 2 ** (n - 1)
            assert all(sorted(w) == list(range(n)) for w in windows)
