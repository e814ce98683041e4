"""``pairmeasures embed --engine ray`` on a private local Ray and on a simulated two-node cluster, all on 127.0.0.1.

Two thousand PERSPECTRUM perspectives are embedded by the local engine once (the reference); the Ray engine's
vectors must equal them (max abs difference <= 1e-5, fp32) and its dense index must retrieve the same top 10.
Faults are real: a pool actor and the driver are killed with SIGKILL mid-run, and the rerun must finish with
nothing lost and nothing embedded twice. Every Ray a test starts is shut down by it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # before ray is imported: Ray advertises 127.0.0.1

import numpy as np  # noqa: E402
import psutil  # noqa: E402
import pytest  # noqa: E402
from ray_survivors import describe, kill, of_the_run, private_tmpdir, ray_folders  # noqa: E402
from test_embed_command import CHECKOUT, small_corpus  # noqa: E402

from pairmeasures._owned import MARKER  # noqa: E402
from pairmeasures.compute.cache import EmbeddingCache, text_key  # noqa: E402
from pairmeasures.compute.shards import ShardError, ShardStore, default_shard_folder  # noqa: E402

PASSAGES = 1000
RAY_CLI = "import sys\nfrom pairmeasures.apps.cli import main\nsys.exit(main(sys.argv[1:]))"


@contextmanager
def cache_dir(folder: Path):
    previous = os.environ.get("PAIRMEASURES_CACHE_DIR")
    os.environ["PAIRMEASURES_CACHE_DIR"] = str(folder)
    try:
        yield folder
    finally:
        os.environ["PAIRMEASURES_CACHE_DIR"] = previous or ""
        if previous is None:
            del os.environ["PAIRMEASURES_CACHE_DIR"]


def texts_of(corpus: Path) -> list:
    return list(dict.fromkeys(json.loads(line)["text"] for line in (corpus / "corpus.jsonl").read_text().splitlines()))


def cached(cache: Path, model_key: str, texts: list) -> dict:
    connection = EmbeddingCache(cache / "embeddings.sqlite")
    try:
        return connection.get(model_key, [text_key(t) for t in texts])
    finally:
        connection.close()


def top10(cache: Path, corpus: Path, queries: list) -> list:
    from pairmeasures.pipelines.dense import dense_retriever

    with cache_dir(cache):
        run = dense_retriever(str(corpus), num_results=10).transform(
            __import__("pandas").DataFrame({"qid": [str(i) for i in range(len(queries))], "query": queries}))
    return [list(group.sort_values("rank")["docno"]) for _, group in run.groupby("qid")]


@pytest.fixture(scope="module")
def reference(tmp_path_factory, embedder):
    """The corpus, the model key and the local engine's vectors and dense top 10 (its cache folder)."""
    from pairmeasures.pipelines.corpus_embedding import embed_corpus

    folder = tmp_path_factory.mktemp("ray-embed")
    corpus = small_corpus(folder / "corpus", PASSAGES)
    with cache_dir(folder / "local"):
        result = embed_corpus(str(corpus))
    assert (result.texts, result.embedded, result.engine) == (PASSAGES, PASSAGES, "local")
    texts = texts_of(corpus)
    queries = [json.loads(line)["text"] for line in (corpus / "queries.jsonl").read_text().splitlines()]
    found = cached(folder / "local", embedder.key, texts)
    return {"corpus": corpus, "key": embedder.key, "texts": texts, "queries": queries,
            "vectors": np.stack([found[text_key(t)] for t in texts]), "top10": top10(folder / "local", corpus, queries)}


def same_as_reference(reference, cache: Path) -> None:
    found = cached(cache, reference["key"], reference["texts"])
    assert len(found) == len(reference["texts"]), "texts missing from the cache"
    vectors = np.stack([found[text_key(t)] for t in reference["texts"]])
    assert np.abs(vectors - reference["vectors"]).max() <= 1e-5


def start_cli(cache: Path, *args: str, **env: str) -> subprocess.Popen:
    """``pairmeasures embed ARGS --json`` in a session of its own, with a TMPDIR of its own (``env`` may name one)
    where its local Ray's session folder goes: :func:`finish` checks that nothing of the run outlives it."""
    env.setdefault("TMPDIR", private_tmpdir())
    environment = {**os.environ, **env, "PAIRMEASURES_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1",
                   "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
                   "PYTHONPATH": os.pathsep.join(filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")]))}
    since = time.time()
    process = subprocess.Popen([sys.executable, "-c", RAY_CLI, "embed", *args, "--json"], env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    process.run_tmpdir, process.run_since = env["TMPDIR"], since
    return process


def finish(process: subprocess.Popen, timeout: float = 600) -> dict:
    """The run's JSON report, once it has ended with status 0 and left no process (of its session, or of Ray's in
    any session: :func:`ray_survivors.of_the_run`) and no local Ray folder behind."""
    temporary = process.run_tmpdir
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        left = of_the_run(process.pid, temporary, process.run_since)
        described = [describe(p) for p in left]
        kill(left)
        stop_group(process)
        folders = ray_folders(temporary)
        shutil.rmtree(temporary, ignore_errors=True)
    assert not described, f"processes outlived the run: {described}"
    assert not folders, f"the run's local Ray left its folder: {folders}"
    assert process.returncode == 0, err[-3000:]
    assert out.count("\n") == 1, f"stdout is not one JSON line: {out[-3000:]!r}"
    return json.loads(out)


def stop_group(process: subprocess.Popen) -> None:
    """Kill what is left of the process group the test started (the driver's Ray, if it outlived it)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    for stream in (process.stdout, process.stderr):  # a killed run's pipes: closed here, not by the collector later
        if stream is not None:
            stream.close()


def pool_actors(process: subprocess.Popen) -> list:
    """The pool's actor processes under the driver ``process`` (Ray titles them after the map operator)."""
    try:
        children = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for child in children:
        try:
            if "ShardEmbedder" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:
            pass
    return found


def wait_for(condition, process: subprocess.Popen, what: str, timeout: float = 300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        assert process.poll() is None, f"the run ended before {what}: {process.stderr.read()[-3000:]}"
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_ray_engine_equals_local_with_an_actor_killed_and_reruns_embed_nothing(reference, tmp_path):
    cache = tmp_path / "ray"
    process = start_cli(cache, str(reference["corpus"]), "--engine", "ray", "--workers", "2", "--shard-size", "100")
    shards = default_shard_folder(reference["key"]).name
    victim = wait_for(lambda: pool_actors(process) and (cache / "embeddings.sqlite").is_file()
                      and len(cached(cache, reference["key"], reference["texts"])) > 0 and pool_actors(process),
                      process, "the first shard merged")[0]
    victim.kill()  # SIGKILL, mid-run: Ray Data restarts the actor and runs its shard again
    assert process.poll() is None and len(cached(cache, reference["key"], reference["texts"])) < PASSAGES
    report = finish(process)
    assert (report["texts"], report["embedded"], report["cached"], report["engine"]) == (PASSAGES, PASSAGES, 0, "ray")
    assert report["workers"] == 2
    same_as_reference(reference, cache)
    assert [p.name for p in (cache / "shards" / shards).iterdir()] == [MARKER], "shards left behind after merging"
    assert top10(cache, reference["corpus"], reference["queries"]) == reference["top10"]
    again = finish(start_cli(cache, str(reference["corpus"]), "--engine", "ray"))
    assert (again["embedded"], again["cached"], again["workers"]) == (0, PASSAGES, 0)  # no Ray started


def ended(processes: list, timeout: float) -> list:
    """The processes still running (zombies count as ended) after waiting up to ``timeout`` seconds for them."""
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for process in processes:
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    alive.append(process)
            except psutil.Error:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def in_session(session: int) -> list:
    """The processes of the session ``session`` (the run's: started with start_new_session)."""
    found = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == session and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (OSError, psutil.Error):
            pass
    return found


def test_killing_the_driver_then_rerunning_loses_nothing_and_embeds_nothing_twice(reference, tmp_path):
    cache = tmp_path / "killed"
    arguments = (str(reference["corpus"]), "--engine", "ray", "--workers", "2", "--shard-size", "50", "--no-index")
    temporary = tempfile.mkdtemp(prefix="pmt-")  # the run's TMPDIR (short: Ray's socket paths live in it)
    process = start_cli(cache, *arguments, TMPDIR=temporary)
    try:
        wait_for(lambda: (cache / "embeddings.sqlite").is_file()
                 and len(cached(cache, reference["key"], reference["texts"])) >= 100, process, "two shards merged")
        ray_processes = psutil.Process(process.pid).children(recursive=True)
        assert any("raywatch" in " ".join(p.cmdline()) for p in ray_processes), "no watchdog"
        assert any("Agent" in " ".join(p.cmdline()) for p in ray_processes), "no Ray agents to outlive it"
        os.kill(process.pid, signal.SIGKILL)  # the driver alone, mid-run, as `kill -9 PID` does
        process.wait()
        # nothing it started outlives it, with no help: Ray's processes (its agents too), the watchdog, the folder
        alive = ended(ray_processes, timeout=120)
        assert not alive, f"outlived the killed driver: {[(p.pid, p.name()) for p in alive]}"
        assert not in_session(process.pid), "processes of the killed run are left"
        assert not os.listdir(temporary), f"the killed run's Ray left {os.listdir(temporary)} in its TMPDIR"
    finally:
        stop_group(process)  # (nothing is left to kill, unless the test failed)
        shutil.rmtree(temporary, ignore_errors=True)
    store = ShardStore(cache / "shards" / default_shard_folder(reference["key"]).name, reference["key"])
    left = 0
    for shard in store.finished():  # finished by a worker, not yet merged: the rerun merges them, never redoes them
        try:
            left += len(store.read(shard)[0])
        except ShardError:
            pass
    done = len(cached(cache, reference["key"], reference["texts"])) + left
    assert 100 <= done < PASSAGES
    # the rerun starts its own local Ray: a dead cluster's address left in the environment is never joined
    report = finish(start_cli(cache, *arguments, RAY_ADDRESS="127.0.0.1:9"))
    assert (report["embedded"], report["cached"]) == (PASSAGES - done, done)
    same_as_reference(reference, cache)


def test_two_models_sharing_a_work_folder_never_mix_their_shards(reference, tmp_path):
    """Another model's finished shards of the same texts (other vectors) lie in --work: the run embeds its own on
    Ray, equal to the local engine's, and leaves the other model's shards as they were, unmerged."""
    import hashlib

    from pairmeasures.compute.shards import plan_shards

    work, other_key = tmp_path / "work", hashlib.sha256(b"another model").hexdigest()
    other = ShardStore(work, other_key).claim()
    keys = [text_key(t) for t in reference["texts"]]
    for shard in plan_shards(keys, reference["texts"], 250, other_key):  # the shards this run plans, but another model's
        other.write(shard.id, shard.keys, np.ones((len(shard.keys), reference["vectors"].shape[1]), np.float32))
    theirs = {p.name: p.read_bytes() for p in work.iterdir() if p.name != MARKER}
    cache = tmp_path / "cache"
    report = finish(start_cli(cache, str(reference["corpus"]), "--engine", "ray", "--workers", "2", "--shard-size",
                              "250", "--work", str(work), "--no-index"))
    assert (report["embedded"], report["cached"]) == (PASSAGES, 0)  # nothing of the other model's was taken
    same_as_reference(reference, cache)
    assert {p.name: p.read_bytes() for p in work.iterdir() if p.name != MARKER} == theirs


def test_tokenizing_actors_feeding_the_model_actor_embed_like_the_local_engine(reference, tmp_path):
    """The GPU pool's two stages (CPU actors tokenize, a model actor runs the forward passes), here on CPUs."""
    cache = tmp_path / "tokenizers"
    report = finish(start_cli(cache, str(reference["corpus"]), "--engine", "ray", "--workers", "1", "--tokenizers",
                              "1", "--shard-size", "250", "--no-index"))
    assert (report["embedded"], report["workers"]) == (PASSAGES, 1)
    same_as_reference(reference, cache)


def test_a_two_node_cluster_embeds_like_the_local_engine(reference, tmp_path, monkeypatch):
    from ray.cluster_utils import Cluster

    temporary = tempfile.mkdtemp(prefix="pm-ray-")  # short: Ray's socket paths live under it
    # the cluster's "current cluster" file goes there too, never to /tmp/ray where a later ray.init would find it
    monkeypatch.setenv("RAY_TMPDIR", temporary)
    os.makedirs(os.path.join(temporary, "ray"))
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "include_dashboard": False, "node_ip_address": "127.0.0.1", "temp_dir": temporary})
    try:
        cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
        assert cluster.address.startswith("127.0.0.1:")
        cache = tmp_path / "cluster"
        report = finish(start_cli(cache, str(reference["corpus"]), "--engine", "ray", "--address", cluster.address,
                                  "--shard-size", "200", "--no-index"))
        assert (report["embedded"], report["workers"]) == (PASSAGES, 2)
        same_as_reference(reference, cache)
    finally:
        cluster.shutdown()
        shutil.rmtree(temporary, ignore_errors=True)


def test_the_bar_moves_as_the_actor_embeds_not_only_when_its_shard_is_merged(tmp_path):
    """One actor, one shard of 600 texts: merged once, at the end. The log (stderr redirected to a file, as a batch job
    keeps it) still gets several intermediate counts while the shard is embedded, as the actor reports its batches.
    The texts are passages of some 150 words (ten perspectives each), so that embedding them takes several of the
    driver's one-second reads on any machine (600 single perspectives took one second on CI's: one count seen)."""
    import re

    corpus = small_corpus(tmp_path / "corpus", 600)
    documents = [json.loads(line) for line in (corpus / "corpus.jsonl").read_text().splitlines()]
    perspectives = [d["text"] for d in documents[:600]]
    for number, document in enumerate(documents[:600]):  # each a distinct passage: ten perspectives from its own on
        document["text"] = " ".join(perspectives[(number + k) % 600] for k in range(10))
    documents[600]["text"] = documents[0]["text"]  # small_corpus's duplicate of the first text stays one
    (corpus / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents))
    log = tmp_path / "embed.log"
    environment = {**os.environ, "PAIRMEASURES_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1",
                   "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "TQDM_DELAY": "0", "TQDM_MININTERVAL": "0.2",
                   "PYTHONPATH": os.pathsep.join(filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")]))}
    state = re.compile(r"embedding on Ray:\s+\d+%\|[^|]*\| (\d+)/600 \[")
    seen: set = set()
    with log.open("w") as stderr:
        process = subprocess.Popen([sys.executable, "-c", RAY_CLI, "embed", str(corpus), "--engine", "ray", "--workers",
                                    "1", "--shard-size", "600", "--batch-size", "16", "--no-index", "--json"],
                                   env=environment, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                   start_new_session=True)
        try:
            while process.poll() is None:
                seen |= {int(n) for n in state.findall(log.read_text()) if 0 < int(n) < 600}
                time.sleep(0.2)
            out = process.communicate(timeout=600)[0]
        finally:
            stop_group(process)
    text = log.read_text()
    assert process.returncode == 0, text[-3000:]
    assert json.loads(out)["embedded"] == 600
    assert "\r" not in text and re.search(r"embedding on Ray: 100%.* 600/600 ", text), text[-3000:]
    assert len(seen) >= 3, f"only {sorted(seen)} arrived before the end:\n{text[-3000:]}"
