"""Speed of ``pairmeasures audit`` on PERSPECTRUM (907 queries, 8,370 documents), the systems of
benchmarks/audits.py there: ``bm25``, ``bm25>>dense``, ``bm25>>dense>>duogreedy(0.5)``, ``bm25>>dense>>mmr(0.5)``.

Cold: a new process with an empty cache folder (index, embeddings, runs all built). Measured in CPU seconds (the
child's user + system time, from ``getrusage``), so a busy machine does not hide a cost: its embedding CPU time is
the process CPU time spent inside ``Embedder._compute`` (model loading and encoding; the process wraps it with a timer
before it calls the command's ``main``) and the rest is the *non-embedding* CPU time (issue 25's target: <= 12 CPU-s).
The manifest's wall ``timings_s`` and its embedding counts are recorded beside it. Warm: the same command again, as a
new ``pairmeasures`` process over the filled cache (runs reused), timed from outside, with whether it imported torch.

``--vectors FILE``: start each cold audit's cache folder with a copy of this embedding cache (``embeddings.sqlite``
of an earlier audit of the same data): the index, runs, evaluations and plots are still built cold, but every vector
is found, so the non-embedding CPU time is measured without the noise of embedding (and an audit that needs no model
imports no torch).

``--base DIR``: also run the cold audit with the ``pairmeasures`` package of ``DIR`` (e.g. ``git archive`` of the
commit before a change), alternating with this checkout's, so both are measured in one run on the same machine
state; ``--rounds``: cold audits per side (the smallest CPU time counts). ``--base-vectors FILE``: the base's own
embedding cache for ``--vectors`` where the cache's file format changed between the two (a base before the second
format would set a cache of this one's format aside as another program's database).

``--profile``: one more cold audit of this checkout, sampled: the process's stack every 5 ms of its CPU time
(``ITIMER_PROF``, a few per cent of overhead, unlike cProfile's), written to results/audit_profile.txt as the
functions with the most CPU time below them (cumulative) and the pairmeasures functions with the most CPU time
spent in them or in the libraries they call (own: each sample counted to the innermost pairmeasures frame, or to
``imports`` while a module is being imported).

Writes results/audit_speed.json (and results/audit_profile.txt).

Usage: python benchmarks/audit_speed.py [--data DIR] [--base DIR] [--rounds 1] [--vectors FILE]
       [--base-vectors FILE] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from _common import RESULTS, data_option, save
from audits import SYSTEMS

#: Run in the cold process: time Embedder._compute (wall and process CPU), then run the command; written to argv[1].
CHILD = """
import json, sys, time
from pairmeasures.compute.embed import Embedder
from pairmeasures.apps.cli import main
spent = {"seconds": 0.0, "cpu_seconds": 0.0, "texts": 0}
compute = Embedder._compute
def timed(self, *args, **kwargs):
    start, cpu = time.perf_counter(), time.process_time()
    try:
        return compute(self, *args, **kwargs)
    finally:
        spent["seconds"] += time.perf_counter() - start
        spent["cpu_seconds"] += time.process_time() - cpu
        spent["texts"] += len(args[0])
Embedder._compute = timed
code = main(sys.argv[2:])
spent["torch_imported"] = "torch" in sys.modules
spent["package"] = sys.modules["pairmeasures"].__file__
open(sys.argv[1], "w").write(json.dumps(spent))
sys.exit(code)
"""

#: The warm process: the command, then whether torch, transformers or pyterrier_dr were imported.
WARM = """
import json, sys
from pairmeasures.apps.cli import main
code = main(sys.argv[2:])
open(sys.argv[1], "w").write(json.dumps({m: m in sys.modules for m in ("torch", "transformers", "pyterrier_dr")}))
sys.exit(code)
"""

#: The sampled cold audit (--profile): each stack, as a tuple of "file:line(function)", and how many samples it got.
PROFILED = """
import collections, json, signal, sys, time
stacks = collections.Counter()
def sample(signum, frame):
    stack = []
    while frame is not None:
        code = frame.f_code
        stack.append(f"{code.co_filename}:{code.co_firstlineno}({code.co_name})")
        frame = frame.f_back
    stacks[tuple(reversed(stack))] += 1
signal.signal(signal.SIGPROF, sample)
cpu = time.process_time()
signal.setitimer(signal.ITIMER_PROF, 0.005, 0.005)
from pairmeasures.apps.cli import main
try:
    code = main(sys.argv[2:])
finally:
    signal.setitimer(signal.ITIMER_PROF, 0, 0)
    json.dump({"cpu_s": time.process_time() - cpu, "stacks": [[list(k), v] for k, v in stacks.items()]},
              open(sys.argv[1], "w"))
sys.exit(code)
"""

ROOT = Path(__file__).resolve().parent.parent


def run(command: list, env: dict, cwd: Path) -> float:
    """Run ``command`` in ``cwd``; its CPU seconds (user + system, its children included). Never in a checkout:
    ``python -c`` puts its working folder first on the path, before ``PYTHONPATH``, so a child started in this
    checkout would import this checkout's package whatever ``--base`` names."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"the audit failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cold(source: Path, audit: list, scratch: Path, tag: str, vectors: Optional[Path] = None) -> dict:
    """One cold audit with the package under ``source``, in its own empty cache folder (holding a copy of the
    embedding cache ``vectors`` when given)."""
    env = dict(os.environ, PAIRMEASURES_CACHE_DIR=str(scratch / f"cache-{tag}"), PYTHONPATH=str(source))
    if vectors is not None:
        (scratch / f"cache-{tag}").mkdir()
        shutil.copyfile(vectors, scratch / f"cache-{tag}" / "embeddings.sqlite")
    spent_file = scratch / f"embedding-{tag}.json"
    start = time.perf_counter()
    cpu = run([sys.executable, "-c", CHILD, str(spent_file), *audit, "--out", str(scratch / f"cold-{tag}")], env,
              scratch)
    wall = time.perf_counter() - start
    spent = json.loads(spent_file.read_text())
    manifest = json.loads((scratch / f"cold-{tag}" / "manifest.json").read_text())
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "embedding_wall_s": round(spent["seconds"], 1),
            "embedding_cpu_s": round(spent["cpu_seconds"], 1),
            "non_embedding_cpu_s": round(cpu - spent["cpu_seconds"], 1), "texts_embedded": spent["texts"],
            "torch_imported": spent.get("torch_imported"), "package": spent.get("package"),
            "timings_s": manifest.get("timings_s"),
            "embedded": manifest.get("embedded"), "env": env}


def profile(audit: list, scratch: Path, vectors: Optional[Path], top: int = 30) -> str:
    """One cold audit of this checkout, sampled (:data:`PROFILED`): the report written to results/audit_profile.txt."""
    env = dict(os.environ, PAIRMEASURES_CACHE_DIR=str(scratch / "cache-profile"), PYTHONPATH=str(ROOT))
    if vectors is not None:
        (scratch / "cache-profile").mkdir()
        shutil.copyfile(vectors, scratch / "cache-profile" / "embeddings.sqlite")
    samples = scratch / "samples.json"
    cpu = run([sys.executable, "-c", PROFILED, str(samples), *audit, "--out", str(scratch / "profiled")], env, scratch)
    found = json.loads(samples.read_text())
    total = sum(count for _, count in found["stacks"])
    seconds = found["cpu_s"] / max(total, 1)

    def short(frame: str) -> str:  # pairmeasures/..., a library's package/..., the standard library's module
        for prefix in (str(ROOT) + "/", "/site-packages/"):
            if prefix in frame:
                return frame.split(prefix, 1)[1]
        return frame.split("/lib/python3.", 1)[1].split("/", 1)[-1] if "/lib/python3." in frame else frame

    cumulative: dict = {}
    own: dict = {}
    for stack, count in found["stacks"]:
        frames = [short(frame) for frame in stack]
        for frame in set(frames):
            cumulative[frame] = cumulative.get(frame, 0) + count
        importing = any(frame.endswith("(<module>)") for frame in frames[1:])
        ours = [frame for frame in frames if frame.startswith("pairmeasures/")]
        where = "imports" if importing else ours[-1] if ours else frames[-1] if frames else "?"
        own[where] = own.get(where, 0) + count
    lines = [f"pairmeasures audit, cold, {'every vector cached' if vectors else 'vectors computed'}: {cpu:.1f} CPU-s in "
             f"the process (getrusage), {found['cpu_s']:.1f} CPU-s sampled in {total} samples of 5 ms",
             "", f"top {top} by cumulative CPU-s (the function and everything below it)"]
    lines += [f"{count * seconds:7.2f}  {frame}" for frame, count in
              sorted(cumulative.items(), key=lambda item: -item[1])[:top]]
    lines += ["", f"top {top} by own CPU-s (the innermost pairmeasures function, the libraries it calls included)"]
    lines += [f"{count * seconds:7.2f}  {frame}" for frame, count in sorted(own.items(), key=lambda item: -item[1])[:top]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--base", help="a folder holding the pairmeasures package to compare with (cold runs only)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--vectors", type=Path, help="an embeddings.sqlite to start each cold cache with")
    parser.add_argument("--base-vectors", type=Path, default=None,
                        help="the embeddings.sqlite for --base's cold caches (default: --vectors), where the cache's "
                             "file format differs between the two")
    parser.add_argument("--profile", action="store_true", help="also sample one cold audit: results/audit_profile.txt")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        audit = ["audit", "--dataset", "pair/perspectrum", "--data", str(Path(args.data).resolve()),
                 "--systems", *SYSTEMS, "--format", "csv"]
        sides = {"new": ROOT} if args.base is None else {"base": Path(args.base).resolve(), "new": ROOT}
        rounds: dict = {side: [] for side in sides}
        vectors = {"new": args.vectors, "base": args.base_vectors or args.vectors}  # each side's cache to start from
        for number in range(args.rounds):
            for side, source in sides.items():
                rounds[side].append(cold(source, audit, scratch, f"{side}{number}", vectors[side]))
                print(side, {k: v for k, v in rounds[side][-1].items() if k not in ("env", "timings_s")}, flush=True)
        best = {side: min(found, key=lambda r: r["non_embedding_cpu_s"]) for side, found in rounds.items()}
        env = best["new"].pop("env")
        for found in rounds.values():
            for result in found:
                result.pop("env", None)
        flags = scratch / "warm.json"
        start = time.perf_counter()
        warm_cpu = run([sys.executable, "-c", WARM, str(flags), *audit, "--out", str(scratch / "warm")],
                       dict(env, PAIRMEASURES_CACHE_DIR=env["PAIRMEASURES_CACHE_DIR"]), scratch)
        warm = time.perf_counter() - start
        warm_manifest = json.loads((scratch / "warm" / "manifest.json").read_text())
        warm_imports = json.loads(flags.read_text())
        if args.profile:
            report = profile(audit, scratch, args.vectors)
            (RESULTS / "audit_profile.txt").write_text(report)
            print(report)
    results = {
        "dataset": "pair/perspectrum", "systems": SYSTEMS, "cpus": os.cpu_count(),
        "vectors_cached": args.vectors is not None,
        "cold": best["new"], "cold_rounds": rounds,
        "warm_s": round(warm, 2), "warm_cpu_s": round(warm_cpu, 2), "warm_imported": warm_imports,
        "warm_timings_s": warm_manifest.get("timings_s"), "warm_cache": warm_manifest.get("cache"),
    }
    if "base" in best:
        results["base_cold"] = best["base"]
        results["non_embedding_cpu_ratio_new_to_base"] = round(
            best["new"]["non_embedding_cpu_s"] / best["base"]["non_embedding_cpu_s"], 3)
    print(json.dumps(results, indent=1))
    print("saved", save("audit_speed", results))


if __name__ == "__main__":
    main()
