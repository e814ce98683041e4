"""The audit as a library: ``AuditRequest`` written to JSON and read back exactly, ``run_audit`` from Python, and
``pairmeasures audit --request FILE`` re-running a written audit to the same per-query values (a subprocess, as a
user runs it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_audit import DOCS, QUERIES, audit, write_run

from pairmeasures.audit import AuditRequest, RequestError, read_request


@pytest.fixture
def debates(tmp_path) -> tuple[Path, Path, Path]:
    """A tiny labelled BEIR folder and two run files over it (test_audit's)."""
    root = tmp_path / "debates"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n"
                                               for docs in DOCS.values() for d, _, t in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t, "theme": theme}) + "\n"
                                                for q, (t, theme) in QUERIES.items()))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{1 if i % 2 == 0 else 0}\n" for q, docs in DOCS.items() for i, (d, _, _) in enumerate(docs)))
    (root / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, docs in DOCS.items() for d, g, _ in docs))
    clustered = write_run(tmp_path / "clustered.run", {"q1": ["a1", "a3", "a2", "a4"], "q2": ["b1", "b3", "b2", "b4"],
                                                       "q3": ["c1", "c3", "c2", "c4"]})
    mixed = write_run(tmp_path / "mixed.run", {"q1": ["a1", "a2", "a3", "a4"], "q2": ["b2", "b1", "b4", "b3"],
                                               "q3": ["c2"]})
    return root, clustered, mixed


def test_a_request_round_trips_through_json_exactly():
    plain = AuditRequest()
    assert AuditRequest.from_json(plain.to_json()) == plain
    every = AuditRequest(dataset="pair/procon", systems=["bm25", "bm25>>dense>>duogreedy(0.25)"], names=["a", "b"],
                         measures=["nDCG@10", "rKL(ties='trec_eval')@5"], baseline="b", by="topic",
                         correction="bonferroni", resamples=123, seed=7, min_cell=3, data="/mirror", text="title+text",
                         num_results=50, k=5, model="some/model", positive="pro", queries="held-out.txt",
                         tradeoff=False, lambdas=[0, 0.3, 1], curves=False)
    again = AuditRequest.from_json(every.to_json())
    assert again == every and hash(again) == hash(every)
    assert again.systems == ("bm25", "bm25>>dense>>duogreedy(0.25)") and again.lambdas == (0.0, 0.3, 1.0)
    assert json.loads(every.to_json())["format"] == 1
    assert AuditRequest.from_json(every.to_json()) != plain


@pytest.mark.parametrize("values, key", [
    ({"systems": ["bm25"], "seeds": 3}, "'seeds'"),
    ({"systems": ["bm25"], "resamples": "many"}, "'resamples'"),
    ({"systems": "bm25"}, "'systems'"),
    ({"measures": ["nDCG@10"]}, "'systems'"),
    ({"systems": ["bm25"], "lambdas": [0.5, True]}, "'lambdas'"),
    ({"format": 99, "systems": ["bm25"]}, "'format'"),
])
def test_a_bad_request_names_its_key(values, key):
    with pytest.raises(RequestError, match=key) as caught:
        AuditRequest.from_json(json.dumps(values), "req.json")
    assert str(caught.value).startswith("req.json: ") and "\n" not in str(caught.value)


def test_a_manifest_without_a_request_is_named_with_its_command(tmp_path):
    old = tmp_path / "manifest.json"
    old.write_text(json.dumps({"command": ["pairmeasures", "audit", "--out", "x"], "versions": {}}))
    with pytest.raises(RequestError, match=r"manifest.json: this manifest has no key 'request'.*pairmeasures audit"):
        read_request(old)
    nested = tmp_path / "nested.json"
    nested.write_text(json.dumps({"command": [], "versions": {}, "request": {"systems": ["bm25"], "k": "ten"}}))
    with pytest.raises(RequestError, match=r"nested.json, key 'request': key 'k' must be a whole number"):
        read_request(nested)


def test_request_reruns_a_written_audit_to_the_same_per_query_values(debates, tmp_path):
    folder, clustered, mixed = debates
    cache = tmp_path / "cache"
    first = tmp_path / "first"
    audit("--dataset", str(folder), "--systems", f"run:{clustered}", f"run:{mixed}", "--names", "clustered", "mixed",
          "--measures", "nDCG@10", "rKL@10", "Duo@10", "--seed", "3", "--resamples", "200", "--by", "theme",
          "--min-cell", "1", "--out", str(first), cache=cache)
    manifest = json.loads((first / "manifest.json").read_text())
    request = manifest["request"]
    assert request["systems"] == [f"run:{clustered}", f"run:{mixed}"] and request["seed"] == 3
    assert request["measures"] == ["nDCG@10", "rKL@10", "Duo@10"] and request["by"] == "theme"
    assert {"command", "versions", "dataset", "systems", "measures", "timings_s"} <= set(manifest)  # kept

    again = tmp_path / "again"  # from the manifest, in a fresh cache: computed again, not read back
    done = audit("--request", str(first / "manifest.json"), "--out", str(again), cache=tmp_path / "cache2")
    for name in ("per_query.csv", "summary.csv", "leaderboard.json", "by_theme.csv", "leaderboard.md"):
        assert (again / name).read_bytes() == (first / name).read_bytes(), name
    assert json.loads((again / "manifest.json").read_text())["request"] == request
    assert "clustered" in done.stdout

    alone = tmp_path / "request.json"  # the request alone, as a file of its own
    alone.write_text(AuditRequest.from_dict(request).to_json())
    third = tmp_path / "third"
    audit("--request", str(alone), "--out", str(third), cache=cache)
    assert (third / "per_query.csv").read_bytes() == (first / "per_query.csv").read_bytes()


def test_request_refuses_bad_files_and_options_beside_it_in_one_line(debates, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"systems": ["bm25"], "seed": "zero"}))
    done = audit("--request", str(bad), "--out", str(tmp_path / "out"), cache=tmp_path / "cache", check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr and not (tmp_path / "out").exists()
    assert f"--request {bad}: key 'seed' must be a whole number" in done.stderr
    assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1, done.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"systems": ["bm25"],')
    done = audit("--request", str(broken), "--out", str(tmp_path / "out"), cache=tmp_path / "cache", check=False)
    assert done.returncode == 2 and f"--request {broken}: not JSON (line 1" in done.stderr
    good = tmp_path / "good.json"
    good.write_text(AuditRequest(systems=("bm25",)).to_json())
    done = audit("--request", str(good), "--seed", "4", "-k", "3", "--out", str(tmp_path / "out"),
                 cache=tmp_path / "cache", check=False)
    assert done.returncode == 2 and "leave out --seed, -k" in done.stderr and "Traceback" not in done.stderr


def test_run_audit_from_python_gives_typed_parts_and_parses_each_measure_once(debates, tmp_path, monkeypatch):
    """The library entry, with the measures counted where ir_measures parses them: once each, the cut-off curves'
    50 cut-offs of each family included (they call the family's object with cutoff=k)."""
    import ir_measures

    from pairmeasures.audit import AuditResult, run_audit
    from pairmeasures.audit.result import Statistics, TieCount

    folder, clustered, mixed = debates
    monkeypatch.setenv("PAIRMEASURES_CACHE_DIR", str(tmp_path / "cache"))
    parsed = []
    real = ir_measures.parse_measure
    monkeypatch.setattr(ir_measures, "parse_measure", lambda text: parsed.append(text) or real(text))
    request = AuditRequest(dataset=str(folder), systems=(f"run:{clustered}", f"run:{mixed}"), names=("c", "m"),
                           measures=("nDCG@10", "rKL@10", "rND@10"), resamples=200)
    result = run_audit(request)
    assert isinstance(result, AuditResult) and isinstance(result.statistics, Statistics)
    assert sorted(parsed) == ["nDCG@10", "rKL@10", "rND@10"]  # not 3 + 2 x 50 for the curves
    assert result.curves is not None and set(result.curves["measure"]) == {"rKL", "rND"}
    assert set(result.curves["k"]) <= set(range(1, 51)) and len(result.curves) > 2
    assert isinstance(result.ties["c"], TieCount) and result.ties["c"].queries == 3
    assert list(result.leaderboard["system"]) == ["c", "m"]
    assert set(result.per_query["measure"]) == {"nDCG@10", "rKL@10", "rND@10"}
    assert result.request == request and AuditRequest.from_json(result.request.to_json()) == request
    assert result.tradeoff is None and result.axes is None and result.statistics.baseline == "c"
    assert "dataset" in result.provenance.manifest.timings
    assert os.environ["PAIRMEASURES_CACHE_DIR"] == str(tmp_path / "cache")
