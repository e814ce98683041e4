"""A command deletes or replaces only what it can prove it wrote (``pairmeasures._owned``), run as a user runs it:
``embed --engine ray --work DIR`` with a user's files in DIR, a folder an older pairmeasures wrote, a second run of
the same model, a second model's shards in the same folder, a cache path holding another file, and
``train-polarity --force`` with a user's file among the checkpoints. Every refusal is one line, status 2, and leaves
every file as it was."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_embed_command import CHECKOUT, small_corpus

from pairmeasures._owned import MARKER, WorkFolder, claim_folder, remove_entries, remove_folder
from pairmeasures.compute.cache import EmbeddingCache, text_key
from pairmeasures.compute.shards import SHARD_FOLDER, ShardStore, plan_shards

CLI = "import sys\nfrom pairmeasures.apps.cli import main\nsys.exit(main(sys.argv[1:]))"


def pairmeasures(*args: str, cache: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
                   "PYTHONPATH": os.pathsep.join(filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", CLI, *args], env=environment, capture_output=True, text=True,
                          timeout=timeout)


def contents(folder: Path) -> dict:
    """``{relative path: sha256}`` of every file under ``folder``."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def one_line(done: subprocess.CompletedProcess, command: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith(f"pairmeasures {command}: error: "), lines[0]
    return lines[0]


def users_folder(folder: Path) -> Path:
    """A folder as a user keeps one: notes, a dataset's files, an embedding cache, a subfolder."""
    small_corpus(folder, 3)
    (folder / "notes.txt").write_text("my notes\n")
    (folder / "embeddings.sqlite").write_bytes(b"SQLite format 3\0" + bytes(200))
    (folder / "results").mkdir()
    (folder / "results" / "run.tsv").write_text("q1\tQ0\td1\t1\t1.0\tx\n")
    return folder


# -- the policy module ------------------------------------------------------------------------------------------

KIND = WorkFolder("pairmeasures test", "work folder", "--work", (r"[0-9]+\.part",))


def test_a_new_folder_is_made_with_the_marker_and_an_empty_one_is_taken(tmp_path):
    made = claim_folder(tmp_path / "a" / "b", KIND)
    assert [p.name for p in made.iterdir()] == [MARKER] and json.loads((made / MARKER).read_text())["made"]
    (made / "1.part").write_text("x")
    assert claim_folder(made, KIND) == made  # its own entries only: taken again
    remove_entries(made, ["1.part"], KIND)
    assert remove_folder(made, KIND) == [] and not made.exists()
    (tmp_path / "empty").mkdir()
    claim_folder(tmp_path / "empty", KIND)
    assert remove_folder(tmp_path / "empty", KIND) == [] and (tmp_path / "empty").is_dir()  # not made: kept


def test_foreign_files_unmarked_folders_and_other_kinds_are_refused_untouched(tmp_path):
    folder = users_folder(tmp_path / "home")
    before = contents(folder)
    with pytest.raises(ValueError, match=r"holds 'corpus.jsonl' \(and 5 more\) but no \.pairmeasures-work"):
        claim_folder(folder, KIND)
    marked = claim_folder(tmp_path / "marked", KIND)
    (marked / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"holds 'notes.txt', which pairmeasures test did not write there"):
        claim_folder(marked, KIND)
    with pytest.raises(ValueError, match="not an entry pairmeasures test writes there; nothing is deleted"):
        remove_entries(marked, ["notes.txt"], KIND)
    with pytest.raises(ValueError, match="lacks its .pairmeasures-work: nothing in it is deleted"):
        remove_entries(folder, ["notes.txt"], KIND)
    assert remove_folder(marked, KIND) == ["notes.txt"] and (marked / "notes.txt").read_text() == "mine"
    with pytest.raises(ValueError, match="is a work folder of pairmeasures test, not a shard folder of pairmeasures"):
        claim_folder(tmp_path / "marked", SHARD_FOLDER)
    assert contents(folder) == before


# -- embed --work ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus(tmp_path_factory, data_dir):
    return small_corpus(tmp_path_factory.mktemp("owned") / "corpus", 30)


@pytest.fixture(scope="module")
def warm(tmp_path_factory, corpus, embedder):
    """A cache the local engine filled with every text of the corpus (its folder), and the vectors."""
    cache = tmp_path_factory.mktemp("warm")
    done = pairmeasures("embed", str(corpus), "--no-index", cache=cache)
    assert done.returncode == 0, done.stderr[-3000:]
    texts = list(dict.fromkeys(json.loads(line)["text"] for line in (corpus / "corpus.jsonl").read_text().splitlines()))
    found = EmbeddingCache(cache / "embeddings.sqlite").get(embedder.key, [text_key(t) for t in texts])
    return cache, texts, np.stack([found[text_key(t)] for t in texts])


@pytest.mark.parametrize("where", ["the folder itself", "its parent (a typo)"])
def test_embed_refuses_a_work_folder_of_a_users_files_and_leaves_them(tmp_path, corpus, warm, where):
    """The data loss of issue 31: every top-level file of --work that was not a shard was deleted, with exit 0, even
    with a warm cache (no Ray started)."""
    cache, _, _ = warm
    home = users_folder(tmp_path / "home")
    if where != "the folder itself":
        (home / "shards").mkdir()  # what the user meant: --work home/shards
    before = contents(home)
    line = one_line(pairmeasures("embed", str(corpus), "--engine", "ray", "--work", str(home), "--no-index",
                                 cache=cache), "embed")
    assert f"--work: shard folder {str(home)!r} holds 'corpus.jsonl'" in line and "but no .pairmeasures-work" in line
    assert "pass --work a new or empty folder" in line
    assert contents(home) == before


def test_embed_refuses_an_unmarked_folder_of_shards_and_one_holding_a_users_file(tmp_path, corpus, warm, embedder):
    cache, texts, vectors = warm
    work = tmp_path / "work"
    store = ShardStore(work, embedder.key).claim()
    for shard in plan_shards([text_key(t) for t in texts], texts, 10, embedder.key):
        store.write(shard.id, shard.keys, vectors[texts.index(shard.texts[0]):][:len(shard.keys)])
    (work / "notes.txt").write_text("mine")
    before = contents(work)
    line = one_line(pairmeasures("embed", str(corpus), "--engine", "ray", "--work", str(work), cache=cache), "embed")
    assert "holds 'notes.txt', which pairmeasures did not write there" in line and contents(work) == before
    (work / "notes.txt").unlink()
    (work / MARKER).unlink()  # as an older pairmeasures left it: shards, no marker
    before = contents(work)
    line = one_line(pairmeasures("embed", str(corpus), "--engine", "ray", "--work", str(work), cache=cache), "embed")
    assert "but no .pairmeasures-work" in line and contents(work) == before


def test_a_cache_path_holding_another_file_is_refused_not_replaced(tmp_path, corpus):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "embeddings.sqlite").write_text("my own notes, not a database\n" * 100)
    line = one_line(pairmeasures("embed", str(corpus), "--no-index", cache=cache), "embed")
    assert "embeddings.sqlite' is not an SQLite file" in line and "left untouched" in line
    assert (cache / "embeddings.sqlite").read_text() == "my own notes, not a database\n" * 100
    assert sorted(p.name for p in cache.iterdir()) == ["embeddings.sqlite"]


def test_shards_of_another_model_are_neither_merged_nor_deleted(tmp_path, corpus, warm, embedder):
    """Two models share --work: this model's finished shards (and a leftover of a killed write) are merged and
    cleaned as before; the other model's shards of the same texts, with other vectors, stay untouched and never
    reach this model's vectors, which equal a clean run's."""
    _, texts, vectors = warm
    keys = [text_key(t) for t in texts]
    work = tmp_path / "shared-work"
    other_key = hashlib.sha256(b"another model").hexdigest()
    other = ShardStore(work, other_key).claim()
    for shard in plan_shards(keys, texts, 7, other_key):
        other.write(shard.id, shard.keys, np.full((len(shard.keys), vectors.shape[1]), 0.5, np.float32))
    ours = ShardStore(work, embedder.key)
    for start, shard in zip(range(0, len(keys), 10), plan_shards(keys, texts, 10, embedder.key)):
        ours.write(shard.id, shard.keys, vectors[start:start + 10])
    leftover = work / f".{shard.id}.npy.killed.tmp"  # a write cut short
    leftover.write_bytes(b"half")
    theirs = {name: digest for name, digest in contents(work).items() if name.startswith(other_key[:16])}
    assert len(theirs) == 15
    cache = tmp_path / "cache"
    done = pairmeasures("embed", str(corpus), "--engine", "ray", "--work", str(work), "--json", "--no-index",
                        cache=cache)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert (report["embedded"], report["cached"], report["workers"]) == (0, len(texts), 0)  # merged: no Ray started
    found = EmbeddingCache(cache / "embeddings.sqlite").get(embedder.key, keys)
    assert np.array_equal(np.stack([found[k] for k in keys]), vectors)
    left = contents(work)
    assert {name: digest for name, digest in left.items() if name != MARKER} == theirs
    assert not leftover.exists()


def test_a_second_run_of_the_same_model_on_the_same_folder_is_refused(tmp_path, corpus, warm, embedder):
    cache, _, _ = warm
    store = ShardStore(tmp_path / "work", embedder.key).claim()
    with store.locked():
        line = one_line(pairmeasures("embed", str(corpus), "--engine", "ray", "--work", str(store.folder),
                                     cache=cache), "embed")
    assert "is being written by another pairmeasures process (pid" in line and str(store.folder) in line


# -- train-polarity --force ------------------------------------------------------------------------------------

def test_train_polarity_force_refuses_checkpoints_holding_a_users_file(tmp_path):
    pytest.importorskip("accelerate", reason="transformers' Trainer needs accelerate (the train extra)")
    from test_train_polarity import claims_folder

    folder = claims_folder(tmp_path / "claims")
    checkpoints = tmp_path / "model.checkpoints"
    checkpoints.mkdir()
    (checkpoints / "notes.txt").write_text("mine")
    (checkpoints / "checkpoint-1").mkdir()
    arguments = ("train-polarity", str(folder), "--out", str(tmp_path / "model"), "--force", "--max-steps", "1",
                 "--batch-texts", "8", "--bootstrap", "20", "--no-progress")
    line = one_line(pairmeasures(*arguments, cache=tmp_path / "cache"), "train-polarity")
    assert f"checkpoint folder {str(checkpoints)!r} holds 'checkpoint-1' (and 1 more) but no {MARKER}" in line
    assert sorted(p.name for p in checkpoints.iterdir()) == ["checkpoint-1", "notes.txt"]
    (checkpoints / "notes.txt").unlink()  # the folder as train-polarity made it (its marker), then a user's file
    (checkpoints / MARKER).write_text(json.dumps({"marker": "pairmeasures-work-marker", "version": 1,
                                                  "written_by": "pairmeasures train-polarity",
                                                  "what": "checkpoint folder", "made": True}))
    (checkpoints / "notes.txt").write_text("mine")
    line = one_line(pairmeasures(*arguments, cache=tmp_path / "cache"), "train-polarity")
    assert "holds 'notes.txt', which pairmeasures train-polarity did not write there" in line
    assert sorted(p.name for p in checkpoints.iterdir()) == [MARKER, "checkpoint-1", "notes.txt"]


# -- caches: the parsed copies of a dataset ----------------------------------------------------------------------

def test_parsing_a_dataset_removes_only_its_own_older_parsed_copies(tmp_path, data_mirror):
    """An older parsed copy of pair/procon (its exact name, another key) is replaced; files that only begin like
    it (a user's, or the copy of a dataset whose id begins with 'procon') stay."""
    parsed = tmp_path / "home" / "pair" / ".parsed"
    parsed.mkdir(parents=True)
    older, mine, longer = (parsed / name for name in ("pair-procon-0123456789abcdef0123.pickle",
                                                       "pair-procon-notes.pickle",
                                                       "pair-procon-extra-0123456789abcdef0123.pickle"))
    for path in (older, mine, longer):
        path.write_bytes(b"not a pickle of this version")
    environment = {**os.environ, "IR_DATASETS_HOME": str(tmp_path / "home"), "PAIRMEASURES_DATA": str(data_mirror),
                   "PYTHONPATH": os.pathsep.join(filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "pairmeasures", "datasets", "export", "pair/procon", "qrels"],
                          env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    written = [p.name for p in parsed.glob("pair-procon-*.pickle") if p not in (mine, longer)]
    assert len(written) == 1 and not older.exists() and mine.exists() and longer.exists()


# -- generate-fitset's OUT.parts -------------------------------------------------------------------------------

def test_generate_fitset_refuses_a_parts_folder_holding_a_users_file(tmp_path):
    """Refused before any request (nothing listens at the endpoint), the folder as it was."""
    queries = tmp_path / "queries.tsv"
    queries.write_text("query-id\ttext\ngolf\tGolf is a sport\n", encoding="utf-8")
    parts = tmp_path / "fitset.parts"
    parts.mkdir()
    (parts / "settings.json").write_text("{}")
    (parts / "notes.txt").write_text("mine")
    before = contents(parts)
    line = one_line(pairmeasures("generate-fitset", "--queries", str(queries), "--out", str(tmp_path / "fitset"),
                                 "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--force",
                                 cache=tmp_path / "cache"), "generate-fitset")
    assert f"parts folder {str(parts)!r} holds 'notes.txt' (and 1 more) but no {MARKER}" in line
    assert contents(parts) == before and not (tmp_path / "fitset").exists()
