"""``pairmeasures train-ibbr`` as a user runs it: the command as a subprocess on a BEIR folder built here, the
model it writes loaded by pm.Embedder and by ``pairmeasures audit --model``; data mining and bad input."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pairmeasures._owned import MARKER

ROOT = Path(__file__).resolve().parents[1]
JOBS = ("nurse", "engineer", "teacher", "pilot", "doctor", "chef", "lawyer", "farmer")

pytest.importorskip("accelerate", reason="transformers' Trainer needs accelerate (the train extra)")


def beir_folder(root: Path) -> Path:
    """Eight queries, each with one relevant passage (female for even, male for odd queries), its other-gender
    twin and three neutral passages; one non-relevant judgment per query."""
    (root / "qrels").mkdir(parents=True)
    docs, queries, qrels = [], [], []
    for i, job in enumerate(JOBS):
        queries.append({"_id": f"q{i}", "text": f"how to become a {job}"})
        docs.append({"_id": f"m{i}", "title": "", "text": f"He became a {job} after his training; his father helped him."})
        docs.append({"_id": f"f{i}", "title": "", "text": f"She became a {job} after her training; her mother helped her."})
        docs += [{"_id": f"n{i}_{n}", "title": "", "text": f"A {job} story number {n} about the weather on a become day."}
                 for n in range(3)]
        qrels += [(f"q{i}", f"m{i}" if i % 2 else f"f{i}", 1), (f"q{i}", f"n{i}_0", 0)]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in qrels))
    return root


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return beir_folder(tmp_path_factory.mktemp("beir") / "jobs")


def pairmeasures(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True,
                          timeout=600, env=env)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def train(folder: Path, out: Path, *extra: str, check: bool = True) -> subprocess.CompletedProcess:
    return pairmeasures("train-ibbr", str(folder), "--out", str(out), "--max-steps", "2", "--batch-size", "4",
                        "--negatives", "2", "--no-progress", *extra, check=check)


def weights(model: Path) -> str:
    return hashlib.sha256((model / "model.safetensors").read_bytes()).hexdigest()


def test_triples_mine_bm25_negatives_and_label_groups_by_prf(folder, tmp_path):
    from pairmeasures.io.runfiles import read_query_ids
    from pairmeasures.train.data import load_triples, passage_groups

    held = tmp_path / "held.txt"
    held.write_text("# evaluation split\nq7\n\n")
    triples = load_triples(folder, negatives=2, held_out=read_query_ids(held))
    assert triples.query_ids == [f"q{i}" for i in range(7)]
    assert triples.positive_ids == [f"m{i}" if i % 2 else f"f{i}" for i in range(7)]
    assert triples.groups == [1 if i % 2 else -1 for i in range(7)]  # "his ... his" / "her ... her": ln 2 > 0
    for positive, mined in zip(triples.positive_ids, triples.negative_ids):
        assert len(mined) == 2 and positive not in mined
    assert triples.summary()["groups"] == {"male": 3, "female": 4, "neutral": 0}
    data = triples.dataset()
    assert data.column_names == ["query", "positive", "negative_1", "negative_2", "label"]
    # One "he" is neutral under IBBR's Eq. 1 (ln 1 = 0); term counts ('tc') call it male.
    assert passage_groups(["He came.", "She and she.", "Rain."]).tolist() == [0, -1, 0]
    assert passage_groups(["He came."], variant="tc").tolist() == [1]


def test_a_query_without_enough_negatives_is_skipped_with_a_count(folder, tmp_path):
    """As on Grep-BiasIR without its held-out file: BM25 finds nothing but the query's relevant passage for q8."""
    data = shutil.copytree(folder, tmp_path / "data")
    with (data / "corpus.jsonl").open("a") as corpus:
        corpus.write(json.dumps({"_id": "zx", "title": "", "text": "Zebra xylophone quartets."}) + "\n")
    with (data / "queries.jsonl").open("a") as queries:
        queries.write(json.dumps({"_id": "q8", "text": "zebra xylophone"}) + "\n")
    with (data / "qrels" / "test.tsv").open("a") as qrels:
        qrels.write("q8\tzx\t1\n")
    done = train(data, tmp_path / "model", "--max-steps", "1")
    assert "trained 1 steps on 8 data pairs of 8 queries (1 more skipped: fewer than --negatives 2 BM25 candidates " \
           "(of the top 100) not judged relevant)" in done.stdout
    assert "pairmeasures train-ibbr: InputWarning: 1 of 9 queries skipped: fewer than --negatives 2" in done.stderr
    skipped = json.loads((tmp_path / "model" / "training.json").read_text())["data"]["skipped_queries"]
    assert skipped["count"] == 1 and skipped["ids"] == ["q8"]


def test_triples_from_an_ir_datasets_id_with_docpairs(tmp_path):
    """An ir_datasets id with docpairs (MS MARCO's triples where a user has them): a small dataset registered here
    from local TSV files, read through ir_datasets' own docpairs, queries and docs store."""
    import ir_datasets
    from ir_datasets.formats import TsvDocPairs, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    from pairmeasures.train.data import load_triples

    docs = {"p1": "He says he is a pilot; his plane is his pride.", "p2": "She is a nurse and her shift is long.",
            "n1": "Rain falls on the city.", "n2": "A recipe for rice.", "n3": "Trains run on time.", "q": "Tea."}
    (tmp_path / "docs.tsv").write_text("".join(f"{d}\t{t}\n" for d, t in docs.items()))
    (tmp_path / "queries.tsv").write_text("1\twho flies planes\n2\twho cares for patients\n3\theld out\n")
    # (query, positive, negative) triples: query 1 has 3 negatives for p1, query 2 only 1 for p2, query 3 is held out
    (tmp_path / "pairs.tsv").write_text("1\tp1\tn1\n1\tp1\tn2\n1\tp1\tn1\n1\tp1\tn3\n2\tp2\tn1\n3\tp1\tn2\n3\tp1\tn3\n")
    name = f"pairmeasures-tests/docpairs-{tmp_path.name}"
    ir_datasets.registry.register(name, ir_datasets.Dataset(
        TsvDocs(LocalDownload(tmp_path / "docs.tsv"), namespace=name, lang="en"),
        TsvQueries(LocalDownload(tmp_path / "queries.tsv"), namespace=name, lang="en"),
        TsvDocPairs(LocalDownload(tmp_path / "pairs.tsv"))))

    triples = load_triples(name, negatives=2, held_out={"3"})
    assert triples.query_ids == ["1"] and triples.positive_ids == ["p1"]
    assert triples.negative_ids == [["n1", "n2"]]  # the first two distinct negatives, in file order
    assert triples.queries == ["who flies planes"] and triples.negatives == [[docs["n1"], docs["n2"]]]
    assert triples.groups == [1]  # "he" twice, "his" twice: IBBR's text labelling (ln 2 > 0)
    assert triples.source["incomplete_pairs"] == 1  # query 2's positive has one negative only
    assert load_triples(name, negatives=1, limit=1).query_ids == ["1"]
    with pytest.raises(ValueError, match="has 3 negatives|lower --negatives"):
        load_triples(name, negatives=4)
    with pytest.raises(ValueError, match="--labels group needs a BEIR-layout folder"):
        load_triples(name, negatives=2, labels="group")
    with pytest.raises(ValueError, match="neither a BEIR-layout folder nor an ir_datasets id"):
        load_triples("no-such-dataset/anywhere", negatives=2)


def test_negatives_mined_from_a_run_file_in_its_order(folder, tmp_path):
    """--negatives-run: each query's top non-relevant documents of the run, by score (ties: document id descending,
    as trec_eval), cut at --candidates; documents outside the corpus and queries without a ranking are errors."""
    from pairmeasures.train.data import load_triples

    run = tmp_path / "run.trec"
    lines = []
    for i in range(8):
        positive = f"m{i}" if i % 2 else f"f{i}"
        ranked = [(positive, 9.0), (f"n{i}_2", 5.0), (f"n{i}_0", 5.0), (f"n{i}_1", 4.0), (f"m{i}" if i % 2 == 0 else f"f{i}", 1.0)]
        lines += [f"q{i} Q0 {doc} {rank} {score} mine" for rank, (doc, score) in enumerate(ranked, 1)]
    run.write_text("\n".join(lines) + "\n")
    triples = load_triples(folder, negatives=2, negatives_run=run)
    assert triples.negative_ids == [[f"n{i}_2", f"n{i}_0"] for i in range(8)]
    assert "run file" in triples.source["negatives_from"]
    deeper = load_triples(folder, negatives=3, negatives_run=run, candidates=4)
    assert deeper.negative_ids[0] == ["n0_2", "n0_0", "n0_1"]
    with pytest.raises(ValueError, match="fewer than --negatives 4"):
        load_triples(folder, negatives=4, negatives_run=run, candidates=4)
    run.write_text("\n".join(lines[5:]) + "\nq1 Q0 elsewhere 9 0.5 mine\n")
    with pytest.raises(ValueError, match="1 document ids are not in .*corpus.jsonl, e.g. 'elsewhere'"):
        load_triples(folder, negatives=2, negatives_run=run)
    run.write_text("\n".join(lines[5:]) + "\n")
    with pytest.raises(ValueError, match="ranks nothing for query 'q0'"):
        load_triples(folder, negatives=2, negatives_run=run)


def test_train_load_audit_resume_and_seed(folder, tmp_path):
    import pairmeasures as pm

    first = tmp_path / "first"
    done = train(folder, first, "--checkpoint-every", "1", "--fairness", "pd", "--lambda", "0.5")
    assert done.stdout.startswith("trained 2 steps on 8 data pairs") and len(done.stdout.splitlines()) == 2
    assert "pairmeasures train-ibbr: step 2/2: loss " in done.stderr  # the trainer's log, on stderr
    record = json.loads((first / "training.json").read_text())
    assert record["losses"]["steps"] == 2 and record["losses"]["degenerate_batches"] == 0
    assert record["recipe"]["fairness"] == "pd" and record["recipe"]["lambda"] == 0.5
    assert record["data"]["groups"] == {"male": 4, "female": 4, "neutral": 0}
    assert all(entry["step"] in (1, 2) for entry in record["losses"]["history"])
    assert sorted(p.name for p in (tmp_path / "first.checkpoints").iterdir()) == [MARKER, "checkpoint-1",
                                                                                 "checkpoint-2"]
    trained = weights(first)

    # The model is a sentence-transformers folder: pm.Embedder and the audit's dense stage load it.
    vectors = pm.Embedder(str(first), cache=False).embed(["She became a nurse.", "He became a pilot."])
    assert vectors.shape == (2, 384)
    audit = pairmeasures("audit", "--dataset", str(folder), "--systems", "bm25>>dense", "--model", str(first),
                         "--measures", "nDCG@5", "--resamples", "100", "--no-tradeoff", "--out", str(tmp_path / "audit"))
    assert (tmp_path / "audit" / "report.html").is_file(), audit.stdout

    # Refuses to overwrite; --resume with another recipe is refused naming both values; resuming from checkpoint 1
    # continues at step 2 and lands on the same weights, replacing the model of the same training without --force.
    refused = train(folder, first, check=False)
    assert refused.returncode == 2 and "exists: pass --force" in refused.stderr
    shutil.rmtree(tmp_path / "first.checkpoints" / "checkpoint-2")
    refused = train(folder, first, "--resume", "--fairness", "pd", "--lambda", "0.7", check=False)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1] == (
        f"pairmeasures train-ibbr: error: --resume: {tmp_path / 'first.checkpoints' / 'checkpoint-1'} was trained with "
        "--lambda 0.5 (this command: --lambda 0.7): give the checkpoint's values to continue it, or start over with "
        "--force instead of --resume (it discards these checkpoints)")
    train(folder, first, "--resume", "--fairness", "pd", "--lambda", "0.5")
    resumed = json.loads((first / "training.json").read_text())
    assert resumed["losses"]["steps"] == 2 and resumed["recipe"]["resumed_from"].endswith("checkpoint-1")
    assert resumed["run"] == record["run"]
    assert [entry["step"] for entry in resumed["losses"]["history"] if "loss" in entry] == [1, 2]
    assert weights(first) == trained

    # Same seed from scratch: the same weights again; another seed: others.
    train(folder, tmp_path / "again", "--fairness", "pd", "--lambda", "0.5")
    assert weights(tmp_path / "again") == trained


def test_training_json_names_its_files_relative_to_the_model(folder, tmp_path):
    """Typed with relative paths in a working folder: training.json names the data folder, the held-out file and the
    negatives run relative to the model, the checkpoint's record the data relative to itself; no absolute path of
    this machine is written. --absolute-paths writes them absolute."""
    work = tmp_path / "work"
    shutil.copytree(folder, work / "jobs")
    (work / "held.txt").write_text("q7\n")
    (work / "run.trec").write_text("".join(f"q{i} Q0 {d} {r} {9 - r} mine\n" for i in range(8)
                                           for r, d in enumerate([f"n{i}_0", f"n{i}_1", f"n{i}_2"], 1)))
    command = ("train-ibbr", "jobs", "--out", "model", "--max-steps", "1", "--batch-size", "4", "--negatives", "2",
               "--no-progress", "--held-out", "held.txt", "--negatives-run", "run.trec", "--checkpoint-every", "1")
    done = subprocess.run([sys.executable, "-m", "pairmeasures", *command], capture_output=True, text=True, timeout=600,
                          cwd=work, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2"})
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((work / "model" / "training.json").read_text())
    assert record["paths"].startswith("relative to this folder")
    assert (record["data"]["path"], record["data"]["negatives_run"]) == ("../jobs", "../run.trec")
    assert record["split"]["held_out_file"] == "../held.txt" and record["split"]["held_out_queries"] == ["q7"]
    checkpoint = work / "model.checkpoints" / "checkpoint-1" / "pairmeasures-checkpoint.json"
    assert json.loads(checkpoint.read_text())["training"]["data"]["source"] == "../../jobs"
    for path in (work / "model" / "training.json", checkpoint):
        assert str(tmp_path) not in path.read_text() and str(tmp_path.resolve()) not in path.read_text(), path

    absolute = subprocess.run([sys.executable, "-m", "pairmeasures", *command, "--force", "--absolute-paths"],
                              capture_output=True, text=True, timeout=600, cwd=work,
                              env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2"})
    assert absolute.returncode == 0, absolute.stderr[-3000:]
    record = json.loads((work / "model" / "training.json").read_text())
    here = work.resolve()
    assert record["paths"] == "absolute" and record["data"]["path"] == str(here / "jobs")
    assert record["split"]["held_out_file"] == str(here / "held.txt")
    assert json.loads(checkpoint.read_text())["training"]["data"]["source"] == str(here / "jobs")


def test_auto_lambda_learns_at_its_own_rate(folder, tmp_path):
    """--lambda auto: the log-variance s has its own learning rate (--lambda-lr) in AdamW, so λ = exp(-s) moves by
    about that much a step (Adam's steps are about the learning rate), not by the model's 2e-5."""
    import math

    steps = []
    for rate in ("0.05", "0.2"):
        out = tmp_path / f"auto-{rate}"
        train(folder, out, "--fairness", "ts", "--lambda", "auto", "--lambda-lr", rate, "--warmup-ratio", "0")
        record = json.loads((out / "training.json").read_text())
        assert record["recipe"]["lambda_lr"] == float(rate)
        steps.append(abs(math.log(record["losses"]["final_lambda"])))
    # two steps of Adam at the linearly decaying rate (1, then 1/2 of it): |s| about 1.5 x the rate
    assert 0.03 < steps[0] < 0.1 and 0.12 < steps[1] < 0.4
    default = json.loads((tmp_path / "auto-0.05" / "training.json").read_text())
    assert default["recipe"]["weight_decay"] == 0.01


@pytest.mark.parametrize("problem, args, message", [
    ("no qrels", (), "has no qrels folder"),
    ("no positive", (), "query 'q0' has no positive"),
    ("too many negatives", ("--negatives", "9"), "fewer than --negatives 9"),
    ("lambda without fairness", ("--fairness", "none", "--lambda", "1"), "--fairness none leaves out"),
    ("bad lambda", ("--lambda", "-1"), "--lambda must be a non-negative number or 'auto'"),
    ("lambda-lr without auto", ("--lambda", "1", "--lambda-lr", "0.1"), "give it with --lambda auto"),
    ("bad lambda-lr", ("--lambda", "auto", "--lambda-lr", "0"), "--lambda-lr must be positive"),
    ("resume without checkpoints", ("--resume",), "no checkpoint in"),
    ("unknown held-out id", ("--held-out", "HELD"), "held-out query ids are not in"),
    ("gold labels missing", ("--labels", "group"), "labels.tsv, which does not exist"),
])
def test_bad_input_is_one_line(folder, tmp_path, capsys, problem, args, message):
    from pairmeasures.apps.cli import main

    data = shutil.copytree(folder, tmp_path / "data")
    if problem == "no qrels":
        shutil.rmtree(data / "qrels")
    if problem == "no positive":
        (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\tn0_0\t0\nq1\tm1\t1\n")
    (tmp_path / "held.txt").write_text("q99\n")
    args = tuple(str(tmp_path / "held.txt") if a == "HELD" else a for a in args)
    out = tmp_path / "model"
    command = ["train-ibbr", str(data), "--out", str(out), "--negatives", "2", *args]
    if problem == "no positive":  # once as a subprocess: exit status 2, one line on stderr
        done = pairmeasures(*command, check=False)
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    else:
        assert main(command) == 2
        assert message in capsys.readouterr().err
    assert not out.exists()


def test_warm_up_reaches_the_trainer_under_transformers_4_and_5():
    """Transformers 5 takes the warm-up ratio as a float warmup_steps (warmup_ratio is deprecated), 4 as
    warmup_ratio; sentence-transformers' arguments accept what the installed version gets."""
    import warnings

    from sentence_transformers import SentenceTransformerTrainingArguments

    from pairmeasures.train._trainer import warmup_argument

    assert warmup_argument(0.1, "4.57.1") == {"warmup_ratio": 0.1}
    assert warmup_argument(0.1, "5.2.0") == {"warmup_steps": 0.1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation from the installed version
        arguments = SentenceTransformerTrainingArguments(output_dir="unused", report_to=[], **warmup_argument(0.25))
    assert arguments.get_warmup_steps(100) == 25
