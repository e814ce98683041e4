"""``pairmeasures generate-fitset``: :func:`pairmeasures.generate.generate_fitset` from the command line."""

from __future__ import annotations

import argparse
import sys

HELP = "generate a PAIR fit set (articles from both sides, distractors) for any queries with an LLM"
DESCRIPTION = ("For each query, ask an OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Ollama) for articles from "
               "each side of the issue with the PAIR paper's prompts (section 3.1; distractors as in A.5), and write "
               "a BEIR-layout folder OUT (corpus.jsonl, queries.jsonl, qrels/test.tsv, labels.tsv with perspectives "
               "p1/p2, perspectives.tsv, distractors.jsonl, manifest.json) that FitSet.from_beir(OUT), "
               "Duo(polarity='pca:OUT') and 'validate-polarity GOLD --fit OUT' take. The API key comes from "
               "OPENAI_API_KEY (none needed for local servers) and is never written. Replies are cached "
               "(generations.sqlite in the pairmeasures cache folder): a re-run costs no request; an interrupted "
               "run continues where it stopped (OUT.parts/). Exit status 1 when some queries' replies could not be "
               "parsed (they are left out and listed in the manifest), 2 on bad input or a refusing endpoint.")
#: The extra this command needs, and the modules it imports whatever its options (checked before any work).
EXTRA = "llm"
NEEDS = ("openai",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queries", required=True, metavar="DATASET_ID|FILE",
                        help="a dataset id (pair/procon, ...), a BEIR-layout folder, a queries.jsonl, or a TSV file of "
                             "query id<TAB>text lines")
    parser.add_argument("--data", default=None, metavar="DIR", help="mirror folder of dataset ids (default: $PAIRMEASURES_DATA)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the folder to write (must not exist, or an earlier generated fit set with --force)")
    parser.add_argument("--endpoint", required=True, metavar="URL",
                        help="base URL of the OpenAI-compatible API, e.g. https://api.openai.com/v1 or http://localhost:8000/v1")
    parser.add_argument("--model", required=True, metavar="NAME", help="model name the endpoint serves (also the cache key)")
    parser.add_argument("--per-side", type=int, default=4, metavar="N", help="documents per perspective (default 4, as the paper)")
    parser.add_argument("--distractors", action="store_true",
                        help="also generate one distractor per document (appendix A.5; three more calls per document)")
    parser.add_argument("--concurrency", type=int, default=4, metavar="N", help="queries generated at once (default 4)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed; each call's seed derives from it (default 0)")
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (default 0.7)")
    parser.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling (default 1.0)")
    parser.add_argument("--max-tokens", type=int, default=512, metavar="N", help="longest reply in tokens (default 512)")
    parser.add_argument("--prompts", default=None, metavar="FILE",
                        help="a JSON prompts file replacing the packaged one (same keys; see docs/generate-fitset.md)")
    parser.add_argument("--attempts", type=int, default=3, metavar="N",
                        help="tries per step, each with a new seed, before a query whose replies cannot be parsed is "
                             "left out (default 3)")
    parser.add_argument("--retries", type=int, default=5, metavar="N",
                        help="retries of a request on rate limits, server errors and timeouts, with exponential backoff "
                             "(default 5)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="S", help="seconds per request (default 120)")
    parser.add_argument("--cache", default=None, metavar="FILE",
                        help="response cache file (default: generations.sqlite in $PAIRMEASURES_CACHE_DIR or ~/.cache/pairmeasures)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N queries")
    parser.add_argument("--force", action="store_true",
                        help="replace an earlier generated fit set OUT, and discard an interrupted run with other settings")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                        help="show a progress bar (default: on)")


def run(args: argparse.Namespace) -> int:
    from ...generate import generate_fitset
    from ..console import say

    try:
        manifest = generate_fitset(
            args.queries, args.out, endpoint=args.endpoint, model=args.model, per_side=args.per_side,
            distractors=args.distractors, concurrency=args.concurrency, seed=args.seed, force=args.force,
            prompts=args.prompts, temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens,
            attempts=args.attempts, max_retries=args.retries, timeout=args.timeout,
            cache=False if args.no_cache else args.cache, data=args.data, limit=args.limit, progress=args.progress,
            command=["pairmeasures", *sys.argv[1:]])
    except KeyboardInterrupt as exc:
        say("generate-fitset", f"interrupted: {exc}" if str(exc) else f"interrupted; finished queries are kept in "
            f"{args.out}.parts/: run the same command again to continue")
        return 130
    counts, this_run, tokens = manifest["counts"], manifest["this_run"], manifest["tokens"]
    print(f"{counts['generated']} of {counts['queries']} queries generated: {counts['documents']} documents, "
          f"{counts['distractors']} distractors; {this_run['requests']} requests this run, {this_run['cache_hits']} "
          f"cached replies, {this_run['resumed_queries']} queries resumed; {tokens['prompt']:,} prompt + "
          f"{tokens['completion']:,} completion tokens in {tokens['calls']} calls; {this_run['seconds']} s\n"
          f"fit set: {args.out}")
    failed = {q: r["reason"] for q, r in manifest["per_query"].items() if r["status"] != "ok"}
    for query_id, reason in failed.items():
        say("generate-fitset", f"query {query_id!r} left out: {reason}")
    return 1 if failed else 0

