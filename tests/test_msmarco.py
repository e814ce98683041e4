"""The MS MARCO gender audits end to end, offline: a miniature ``msmarco-passage`` (ir_datasets' own file layout,
a few hundred passages that carry the query words and gender terms, dev and TREC DL 2019 qrels) in a private
ir_datasets home, FRR-shaped published runs in a private mirror, and ``pairmeasures audit`` as a subprocess with
``bm25``, the published ``run:`` systems, a re-ranker and the papers' measures. Nothing downloads: the tests of
downloads (the published runs; ir_datasets' msmarco-passage on a set's first use) serve the public files from a
stand-in network."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QS1, QS2, DL19 = ("pair/msmarco-passage/dev/gender-qs1", "pair/msmarco-passage/dev/gender-qs2",
                  "pair/msmarco-passage/trec-dl-2019/gender")
FEMALE, MALE = ["she", "her", "mother", "woman", "daughter"], ["he", "his", "father", "man", "son"]
NEUTRAL = ["river", "table", "garden", "engine", "market", "cloud", "paper", "window"]
RUNS = ("BM25", "RM3", "knrm", "conv_knrm", "match_pyramid", "tk", "bert_L2", "bert_L4", "advbert_L2", "advbert_L4")
DEPTH = 20


def read_queries(path: Path, skip_header: bool = True) -> dict:
    lines = path.read_text(encoding="utf-8").splitlines()[1 if skip_header else 0:]
    return {line.split("\t")[0].strip(): line.split("\t")[1].strip() for line in lines if line.strip()}


def passage_text(query: str, index: int) -> str:
    """The query's words and gender terms: one-sided female, one-sided male, balanced, or none (in turn)."""
    extra = [FEMALE[:2], MALE[:2], [FEMALE[2], MALE[2]], []][index % 4]
    return " ".join([*query.lower().split(), *extra, NEUTRAL[index % len(NEUTRAL)]])


def write_run(path: Path, ranked: dict, tag: str) -> None:
    path.write_text("".join(f"{q} Q0 {d} {r} {DEPTH - r + 0.5:.6f} {tag}\n"
                            for q, docs in ranked.items() for r, d in enumerate(docs, start=1)))


@pytest.fixture(scope="module")
def miniature(tmp_path_factory, data_dir):
    """A private ir_datasets home with a miniature msmarco-passage, and a mirror: the shared msmarco-gender folder
    and the ten published runs of QS2 and of TREC DL 2019 (top 20 of the miniature's passages, FRR's format)."""
    root = tmp_path_factory.mktemp("msmarco")
    home, mirror = root / "ir_datasets", root / "mirror"
    passages_dir = home / "msmarco-passage"
    for folder in (passages_dir / "dev", passages_dir / "trec-dl-2019", mirror):
        folder.mkdir(parents=True)
    (mirror / "msmarco-gender").symlink_to(data_dir / "msmarco-gender")
    qs2 = read_queries(data_dir / "msmarco-gender" / "qs2_queries.tsv")
    dl19 = read_queries(data_dir / "msmarco-gender" / "trecdeep19_passage.fair.FULL_ANNOTATION.tsv")
    own, texts = {}, {}
    for index, (query, text) in enumerate({**qs2, **dl19}.items()):
        own[query] = str(1000 + index)
        texts[own[query]] = passage_text(text, index)
    for index in range(60):  # passages no query asks for
        texts[str(5000 + index)] = " ".join([NEUTRAL[index % 8], NEUTRAL[(index + 3) % 8], *([MALE[3]] * (index % 3))])
    (passages_dir / "collection.tsv").write_text("".join(f"{d}\t{t}\n" for d, t in texts.items()))
    (passages_dir / "irds_version.txt").write_text("v2")
    (passages_dir / "dev" / "qrels").write_text("".join(f"{q} 0 {own[q]} 1\n" for q in qs2))
    ids, filler = sorted(texts), [str(5000 + index) for index in range(60)]
    (passages_dir / "trec-dl-2019" / "qrels").write_text("".join(  # graded: 3 and 2 relevant, 1 related, 0 not
        f"{q} 0 {own[q]} 3\n{q} 0 {filler[i]} 2\n{q} 0 {filler[i + 1]} 1\n{q} 0 {filler[i + 2]} 0\n"
        for i, q in enumerate(dl19)))
    runs = {}
    for queries, folder in ((qs2, "msmarco-gender-runs-qs2"), (dl19, "msmarco-gender-runs-dl19")):
        (mirror / folder).mkdir()
        for name in RUNS:
            rng = random.Random(f"{folder}/{name}")
            ranked = {}
            for query in queries:
                others = rng.sample([d for d in ids if d != own[query]], DEPTH - 1)
                others.insert(rng.randrange(DEPTH), own[query])
                ranked[query] = others
            write_run(mirror / folder / f"{name}.run", ranked, name)
            runs[folder, name] = ranked
    return {"home": home, "mirror": mirror, "texts": texts, "own": own, "runs": runs, "qs2": qs2, "dl19": dl19,
            "cache": root / "cache"}


def audit(miniature, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "IR_DATASETS_HOME": str(miniature["home"]), "PAIRMEASURES_DATA": str(miniature["mirror"]),
           "PAIRMEASURES_CACHE_DIR": str(miniature["cache"]), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pairmeasures", "audit", *args, "--resamples", "100"],
                          capture_output=True, text=True, timeout=900, env=env)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def neutrality(text: str) -> float:
    """ω as the NFaiRR reference code computes it: whitespace tokens, representative words, τ = 1, J = ½."""
    words = {}
    for line in (ROOT / "pairmeasures" / "sideinfo" / "data" / "gender_representative.tsv").read_text().splitlines()[1:]:
        if line and not line.startswith("#"):
            term, group = line.split("\t")
            words[term.lower()] = group
    counts = {"female": 0, "male": 0}
    for token in text.lower().split(" "):
        if token in words:
            counts[words[token]] += 1
    total = sum(counts.values())
    return 1.0 if total <= 1 else 1 - sum(abs(c / total - 0.5) for c in counts.values())


def reference_nfairr(ranked: dict, texts: dict) -> float:
    """Mean NFaiRR@10 with the whole collection as background (its ideal: ten passages of ω = 1)."""
    ideal = sorted((neutrality(t) for t in texts.values()), reverse=True)[:10]
    ifairr = sum(w / math.log2(r + 2) for r, w in enumerate(ideal))
    return sum(sum(neutrality(texts[d]) / math.log2(r + 2) for r, d in enumerate(docs[:10])) / ifairr
               for docs in ranked.values()) / len(ranked)


def test_qs2_audit_with_bm25_the_published_runs_and_a_re_ranker(miniature, tmp_path):
    import ir_measures

    out = tmp_path / "qs2"
    done = audit(miniature, "--dataset", QS2, "--systems", "published", "bm25", "bm25 >> dense", "--num-results",
                 str(DEPTH), "--out", str(out))
    assert "indexing msmarco-passage-text" in done.stderr  # the collection indexed from its stream, with a progress bar
    board = json.loads((out / "leaderboard.json").read_text())
    names = [f"published/{name}" for name in RUNS]
    assert list(board["systems"]) == [*names, "bm25", "bm25 >> dense"]
    measures = list(board["measures"])
    assert [m.split("(")[0].split("@")[0] for m in measures] == ["RR", "nDCG", "NFaiRR", "TExFAIR", "RaB", "ARaB"]
    assert not any(m.startswith("Duo") for m in measures)  # no polarity source named: nothing embedded for it
    nfairr = next(m for m in measures if m.startswith("NFaiRR"))
    for name in names:  # every published run measured on every QS2 query, as the reference code would
        assert board["measures"][nfairr]["measured"][name] == 215
    ranked = miniature["runs"]["msmarco-gender-runs-qs2", "BM25"]
    assert board["systems"]["published/BM25"][nfairr] == pytest.approx(reference_nfairr(ranked, miniature["texts"]))
    qrels = [ir_measures.Qrel(q, miniature["own"][q], 1) for q in miniature["qs2"]]
    run = [ir_measures.ScoredDoc(q, d, -r) for q, docs in ranked.items() for r, d in enumerate(docs)]
    expected = ir_measures.calc_aggregate([ir_measures.RR @ 10, ir_measures.nDCG @ 10], qrels, run)
    assert board["systems"]["published/BM25"]["RR@10"] == pytest.approx(expected[ir_measures.RR @ 10])
    assert board["systems"]["published/BM25"]["nDCG@10"] == pytest.approx(expected[ir_measures.nDCG @ 10])
    assert board["systems"]["bm25"]["RR@10"] > 0.9  # each query's own passage carries its words
    assert all(0.0 <= values[nfairr] <= 1.0 for values in board["systems"].values())
    manifest = json.loads((out / "manifest.json").read_text())
    bm25_file = miniature["mirror"] / "msmarco-gender-runs-qs2" / "BM25.run"
    digest = hashlib.sha256(bm25_file.read_bytes()).hexdigest()
    assert manifest["systems"]["published/BM25"]["identity"] == f"run:{digest}"

    again = audit(miniature, "--dataset", QS1, "--systems", "bm25", "--num-results", str(DEPTH), "--out",
                  str(tmp_path / "qs1"))
    assert "indexing" not in again.stderr  # QS1 and QS2 share the collection's index: built once
    assert len(list(miniature["cache"].rglob("msmarco-passage-text-*.pisa"))) == 1
    qs1 = json.loads((tmp_path / "qs1" / "leaderboard.json").read_text())
    assert qs1["systems"]["bm25"]["RR@10"] == pytest.approx(board["systems"]["bm25"]["RR@10"])  # judged: QS2's


def test_trec_dl_2019_audit_with_graded_qrels_and_one_published_run(miniature, tmp_path):
    out = tmp_path / "dl19"
    audit(miniature, "--dataset", DL19, "--systems", "published/bm25", "run:" + str(
        miniature["mirror"] / "msmarco-gender-runs-dl19" / "tk.run"), "--names", "BM25 (paper)", "TK (paper)",
        "--out", str(out))
    board = json.loads((out / "leaderboard.json").read_text())
    assert list(board["systems"]) == ["BM25 (paper)", "TK (paper)"]
    assert "RR(rel=2)@10" in board["measures"]  # TREC DL: grade 1 is not relevant for MRR
    assert board["measures"]["nDCG@10"]["measured"]["BM25 (paper)"] == len(miniature["dl19"]) == 30
    ranked = miniature["runs"]["msmarco-gender-runs-dl19", "BM25"]
    expected = 0.0
    for i, (query, docs) in enumerate(ranked.items()):  # grade 2 or more: the own passage and one other
        relevant = {miniature["own"][query], str(5000 + i)}
        expected += next((1 / (r + 1) for r, d in enumerate(docs[:10]) if d in relevant), 0.0)
    assert board["systems"]["BM25 (paper)"]["RR(rel=2)@10"] == pytest.approx(expected / len(ranked))


def test_published_runs_are_refused_where_the_paper_has_none(miniature, tmp_path):
    done = audit(miniature, "--dataset", QS1, "--systems", "published", "bm25", "--out", str(tmp_path / "x"),
                 check=False)
    assert done.returncode != 0 and "published runs for" in done.stderr and QS2 in done.stderr
    assert not (tmp_path / "x").exists()
    done = audit(miniature, "--dataset", QS2, "--systems", "published/BM26", "--out", str(tmp_path / "y"), check=False)
    assert done.returncode != 0 and "no published run 'BM26'" in done.stderr and "published/bert_L2" in done.stderr


@contextlib.contextmanager
def stand_in_network(files: dict):
    """Serve ``files`` (url -> bytes) to ir_datasets' downloader; any other URL is unreachable."""
    from ir_datasets.util.download import RequestsDownload

    @contextlib.contextmanager
    def stream(self):
        if self.url not in files:
            raise ConnectionError(f"no network to reach {self.url}")
        yield io.BytesIO(files[self.url])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RequestsDownload, "stream", stream)
        yield


@pytest.mark.stand_in_network
def test_published_runs_download_once_checked_against_their_pins(tmp_path, data_dir, monkeypatch):
    from pairmeasures.datasets import DatasetUnavailableError
    from pairmeasures.datasets._catalogue import SPEC_BY_ID
    from pairmeasures.datasets.published_runs import published_runs

    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))  # an empty download cache, no mirror
    monkeypatch.delenv("PAIRMEASURES_DATA", raising=False)
    real = {name: gzip.decompress((data_dir / "msmarco-gender" / "runs" / f"{name}.run.gz").read_bytes())
            for name in ("BM25", "bert_L2")}
    files = {remote.url: real.get(remote.name[:-4], f"1 Q0 {remote.name} 1 1.0 x\n".encode())
             for remote in SPEC_BY_ID[QS2].published_runs.remote}
    assert all("/measurement/sample_trec_runs/msmarco_passage/" in url for url in files)
    tampered = {url: (b"2" + data if url.endswith("/BM25.run") else data) for url, data in files.items()}
    with stand_in_network(tampered), pytest.raises(DatasetUnavailableError, match="pinned by pairmeasures"):
        published_runs(QS2)
    with stand_in_network(files):
        runs = published_runs(QS2)
    assert list(runs) == list(RUNS) and runs["BM25"].read_bytes() == real["BM25"]
    assert runs["BM25"].parent == tmp_path / "home" / "pair" / "msmarco-gender-runs-qs2"
    with stand_in_network({}):  # kept: nothing is fetched again
        assert published_runs(QS2) == runs


def test_the_trec_dl_2019_set_and_the_papers_measures(data_dir):
    import pairmeasures as pm
    from pairmeasures.audit.plan import default_measures
    from pairmeasures.datasets.msmarco_gender import audit_measures

    queries = list(pm.datasets.load(DL19).queries_iter())
    assert len(queries) == 30 and queries[0] == pm.datasets.Query("1115776", "what is an aml surveillance analyst")
    assert len({q.query_id for q in queries}) == 30
    assert audit_measures(QS1) == audit_measures(QS2) != audit_measures(DL19)
    assert audit_measures("pair/procon") == []
    profile = pm.datasets.load_profile("pair/procon")
    assert "Duo@10" in default_measures(profile)  # other datasets keep theirs


@pytest.mark.stand_in_network
def test_first_use_has_ir_datasets_download_msmarco_passage_then_reads_it_there(tmp_path, data_dir, data_mirror):
    """Without the files, the first read of a set has ir_datasets download them, as it would without pairmeasures,
    saying so first; here from a stand-in network serving a tiny ``collectionandqueries.tar.gz`` and
    ``qrels.dev.tsv`` (checked against their own md5 where ir_datasets pins the real files')."""
    import tarfile

    from test_failures import COLLECTION, DEV_QRELS, downloads_json, without_network

    home = tmp_path / "ir_datasets"
    base = home / "msmarco-passage"
    facts = downloads_json()
    first, second = list(read_queries(data_dir / "msmarco-gender" / "qs2_queries.tsv"))[:2]
    passages = {"7001": "she is a nurse", "7002": "he is an engineer", "7003": "a river runs through the garden"}
    collection = "".join(f"{d}\t{t}\n" for d, t in passages.items())
    archive = tmp_path / "collectionandqueries.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        member = tarfile.TarInfo("collection.tsv")
        member.size = len(collection.encode())
        tar.addfile(member, io.BytesIO(collection.encode()))
    qrels = tmp_path / "qrels.dev.tsv"  # "1" is a dev query of neither set: left out
    qrels.write_text(f"{first}\t0\t7001\t1\n{second}\t0\t7002\t1\n1\t0\t7003\t1\n")
    stand_in = {facts[key]["url"]: {"path": str(path), "md5": hashlib.md5(path.read_bytes()).hexdigest(),
                                    "pinned_md5": facts[key]["expected_md5"]}
                for key, path in (("collectionandqueries", archive), ("dev/qrels", qrels))}
    coming = "after download; documents and qrels: ir_datasets msmarco-passage, downloaded on first use: "

    def available() -> str:
        listed = without_network("datasets", "--format", "json", home=home, cwd=tmp_path)
        assert listed.returncode == 0 and "NETWORK" not in listed.stderr, listed.stderr
        return {row["dataset"]: row["available"] for row in json.loads(listed.stdout)}[QS2]

    assert available() == f"{coming}{COLLECTION} and {DEV_QRELS}"
    docs = without_network("datasets", "export", QS2, "docs", home=home, cwd=tmp_path, stand_in=stand_in)
    lines = docs.stderr.splitlines()
    assert docs.returncode == 0 and "NETWORK" not in docs.stderr, docs.stderr
    assert lines[0] == (f"pairmeasures: {QS2}: downloading ir_datasets' msmarco-passage files, {COLLECTION}, into "
                        f"{base}/ (once: later uses read them there)")
    assert [line for line in lines if line.startswith("SERVED")] == [f"SERVED {facts['collectionandqueries']['url']}"]
    assert docs.stdout == collection
    assert (base / "collectionandqueries.tar.gz").read_bytes() == archive.read_bytes()  # where ir_datasets wants it
    assert (base / "collection.tsv").read_text() == collection and (base / "irds_version.txt").read_text() == "v2"
    assert available() == f"{coming}{DEV_QRELS}"

    run = tmp_path / "run.txt"
    run.write_text(f"{first} Q0 7001 1 2.0 r\n{second} Q0 7003 1 2.0 r\n{second} Q0 7002 2 1.0 r\n")
    scored = without_network("eval", QS2, str(run), "nDCG@10", home=home, cwd=tmp_path, stand_in=stand_in)
    lines = scored.stderr.splitlines()
    assert scored.returncode == 0 and "NETWORK" not in scored.stderr, scored.stderr
    assert lines[0] == (f"pairmeasures: {QS2}: downloading ir_datasets' msmarco-passage files, {DEV_QRELS}, into "
                        f"{base}/ (once: later uses read them there)")
    assert [line for line in lines if line.startswith("SERVED")] == [f"SERVED {facts['dev/qrels']['url']}"]
    assert (base / "dev" / "qrels").read_bytes() == qrels.read_bytes()
    assert scored.stdout.split()[-1] == f"{(1 + 1 / math.log2(3)) / 2:.4f}", scored.stdout  # the two judged queries
    again = without_network("eval", QS2, str(run), "nDCG@10", home=home, cwd=tmp_path, stand_in={})
    assert (again.returncode, again.stdout) == (0, scored.stdout) and again.stderr == "", again.stderr  # read there
    assert available() == "yes; documents and qrels: ir_datasets msmarco-passage, here"
