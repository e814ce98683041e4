"""``pairmeasures cache``: what the embedding cache holds, or delete entries (asks first)."""

from __future__ import annotations

import argparse
import sys

from ..console import say

HELP = "show or clear the embedding cache"
DESCRIPTION = "Show what the embedding cache holds, or delete entries (asks first)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("info", "clear"))
    parser.add_argument("--model", default=None,
                        help="clear only this model, named exactly: the model name or directory given to the embedder "
                             "(e.g. all-MiniLM-L6-v2), its description as 'cache info' shows it, or its full key; "
                             "a name matching several models is an error listing them")
    parser.add_argument("--cache", default=None, help="cache file (default: ~/.cache/pairmeasures/embeddings.sqlite)")
    parser.add_argument("--yes", action="store_true", help="clear without asking")


def run(args: argparse.Namespace) -> int:
    from ...compute.cache import EmbeddingCache

    cache = EmbeddingCache(args.cache)
    if args.action == "info":
        print(cache.stats().report())
        return 0
    stats = cache.stats()
    chosen = stats.models if args.model is None else [_cached_model(stats.models, args.model, cache.path)]
    if not chosen:
        print(f"nothing to clear in {cache.path}")
        return 0
    entries = sum(m["entries"] for m in chosen)
    if not args.yes:
        if not sys.stdin.isatty():
            say("cache clear", f"would delete {entries:,} embeddings from {cache.path}; pass --yes to confirm")
            return 1
        if input(f"Delete {entries:,} cached embeddings from {cache.path}? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return 1
    removed = sum(cache.clear(m["model"]) for m in chosen) if args.model else cache.clear()
    print(f"deleted {removed:,} embeddings from {cache.path}")
    return 0


def _cached_model(models: list, wanted: str, path) -> dict:
    """The one cached model that ``wanted`` names exactly: its key, its description (the model name the
    Embedder was given), or else the name of entries written before normalisation left the cache key
    (their description without its ``(normalize=...)`` suffix)."""
    matches = [m for m in models if wanted in (m["model"], m["description"])] or \
        [m for m in models if wanted == m["description"].rsplit(" (normalize=", 1)[0]]
    if len(matches) != 1:
        present = "; ".join(f"{m['description']} [{m['model']}]" for m in models) or "none"
        problem = "matches several models" if matches else "names no model"
        raise ValueError(f"--model {wanted!r} {problem} in {path}; models present: {present}. Pass a model name, "
                         "its full description or its key, exactly")
    return matches[0]
