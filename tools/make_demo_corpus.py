"""Make the embedded demo corpus ``pairmeasures/demo/debates/`` from the PERSPECTRUM mirror.

Usage: ``python tools/make_demo_corpus.py [SOURCE] [OUT]`` with SOURCE the mirror's ``perspectrum``
folder (default ``$PAIRMEASURES_DATA/perspectrum``) and OUT the folder to write (default
``pairmeasures/demo/debates``). Deterministic: re-running on the same mirror rewrites the same bytes.

Selection: claims whose first topic (``perspectrum-topics.tsv``) is one of the :data:`TOPICS` most
frequent first topics among eligible claims, where eligible means at least :data:`MIN_PER_STANCE`
perspectives of each stance, at most :data:`MAX_PERSPECTIVES` in all, and a text no other claim has;
:data:`PER_TOPIC` claims per topic, smallest numeric ids first. The corpus is the union of the chosen
claims' perspectives (each once); qrels and labels keep every (claim, perspective) pair of the source.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import sys
from pathlib import Path

TOPICS = 8
PER_TOPIC = 5
MIN_PER_STANCE = 4
MAX_PERSPECTIVES = 30
SOURCE_FILES = ("corpus.jsonl", "queries.jsonl", "labels.tsv", "qrels/test.tsv", "perspectrum-topics.tsv")


def _tsv(path: Path) -> list[list[str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split("\t") for line in lines[1:] if line]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _dump(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def make(source: Path) -> dict[str, str]:
    """The demo folder's files (relative path -> text) made from the PERSPECTRUM mirror ``source``."""
    queries = {q["_id"]: q for q in _jsonl(source / "queries.jsonl")}
    topics = {qid: json.loads(t) for qid, t in _tsv(source / "perspectrum-topics.tsv")}
    labels = _tsv(source / "labels.tsv")
    stances: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for qid, _, group in labels:
        stances[qid][group] += 1
    texts = collections.Counter(q["text"].casefold() for q in queries.values())
    eligible = sorted((qid for qid, q in queries.items()
                       if topics.get(qid) and texts[q["text"].casefold()] == 1
                       and min(stances[qid]["support"], stances[qid]["undermine"]) >= MIN_PER_STANCE
                       and sum(stances[qid].values()) <= MAX_PERSPECTIVES), key=int)
    by_topic: dict[str, list[str]] = collections.defaultdict(list)
    for qid in eligible:
        by_topic[topics[qid][0]].append(qid)
    chosen_topics = sorted(by_topic, key=lambda t: (-len(by_topic[t]), t))[:TOPICS]
    chosen = sorted((qid for t in chosen_topics for qid in by_topic[t][:PER_TOPIC]), key=int)
    topic_of = {qid: topics[qid][0] for qid in chosen}

    pairs = [(qid, pid, group) for qid, pid, group in labels if qid in topic_of]
    judged = {(qid, pid) for qid, pid, score in _tsv(source / "qrels" / "test.tsv") if qid in topic_of}
    if judged != {(qid, pid) for qid, pid, _ in pairs}:
        raise SystemExit(f"{source}: labels.tsv and qrels/test.tsv disagree for the chosen claims")
    pairs.sort(key=lambda p: (int(p[0]), int(p[1])))
    wanted = {pid for _, pid, _ in pairs}
    corpus = sorted((d for d in _jsonl(source / "corpus.jsonl") if d["_id"] in wanted), key=lambda d: int(d["_id"]))
    groups = collections.Counter(group for _, _, group in pairs)
    files = {
        "corpus.jsonl": _dump([{"_id": d["_id"], "title": d["title"], "text": d["text"]} for d in corpus]),
        "queries.jsonl": _dump([{"_id": qid, "text": queries[qid]["text"], "topic": topic_of[qid]} for qid in chosen]),
        "qrels/test.tsv": "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{p}\t1\n" for q, p, _ in pairs),
        "labels.tsv": "query-id\tcorpus-id\tgroup\n" + "".join(f"{q}\t{p}\t{g}\n" for q, p, g in pairs),
    }
    checksums = "\n".join(f"| `{name}` | `{hashlib.sha256((source / name).read_bytes()).hexdigest()[:16]}` |"
                          for name in SOURCE_FILES)
    topic_counts = ", ".join(f"{t} {PER_TOPIC}" for t in sorted(chosen_topics))
    files["README.md"] = f"""# Debates: the embedded demo corpus

A slice of **PERSPECTRUM** (Sihao Chen, Daniel Khashabi, Wenpeng Yin, Chris Callison-Burch and Dan Roth,
"Seeing Things from a Different Angle: Discovering Diverse Perspectives about Claims", NAACL 2019),
taken from `CogComp/perspectrum` @ `b42c27b85f20` (`data/dataset/`) through the project's converted
mirror (`shared/data/perspectrum`). Licence: **CC BY-SA 4.0**, as the source's; this slice is shared
under the same licence (https://creativecommons.org/licenses/by-sa/4.0/). Changes: selection only
(see below); texts are the mirror's cleaned texts, unchanged.

## Counts

- queries (claims): {len(chosen)}, {PER_TOPIC} per topic: {topic_counts}
- documents (perspectives): {len(corpus)}
- qrels / labels (claim, perspective) pairs: {len(pairs)} (support {groups["support"]}, undermine {groups["undermine"]})

## Files

- `queries.jsonl`: `_id`, `text` (the claim), `topic` (its first PERSPECTRUM topic)
- `corpus.jsonl`: `_id`, `title` (empty), `text` (the perspective)
- `qrels/test.tsv`: every perspective of a claim has relevance 1
- `labels.tsv`: the stance of the perspective toward that claim (`support` / `undermine`); a
  perspective attached to two claims may support one and undermine the other

## How it was made

`python tools/make_demo_corpus.py $PAIRMEASURES_DATA/perspectrum pairmeasures/demo/debates`
(deterministic; the tests re-run it against the mirror and compare bytes). Eligible claims have a
topic, at least {MIN_PER_STANCE} perspectives of each stance, at most {MAX_PERSPECTIVES} perspectives in all, and a text no
other claim has; the {TOPICS} most frequent first topics among them are kept, with the {PER_TOPIC} claims of
smallest id in each. Mirror files read (sha256, first 16 hex digits):

| file | sha256 |
|---|---|
{checksums}
"""
    return files


def main(argv: list[str]) -> None:
    data = os.environ.get("PAIRMEASURES_DATA")
    if len(argv) > 2 or (not argv and not data):
        raise SystemExit("usage: make_demo_corpus.py [SOURCE] [OUT]  (SOURCE defaults to $PAIRMEASURES_DATA/perspectrum)")
    source = Path(argv[0]) if argv else Path(data or "") / "perspectrum"
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "pairmeasures" / "demo" / "debates"
    for name, text in make(source).items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


if __name__ == "__main__":
    main(sys.argv[1:])
