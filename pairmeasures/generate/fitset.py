"""Generate a PAIR fit set (§3.1) with distractors (A.5) for any queries, into a BEIR-layout folder.

Per query: one *sides* call ("For each side of the issue, write an article from the perspective of
that side."), whose two perspective headers are read with the strict header pattern (their articles
are the first document of each side); then *article* calls ("Given the question above, write an
article from the perspective of the side below.") until each side has ``per_side`` documents. With
``distractors``: one question on the same topic that is not the query, and per document a two-turn
conversation ("Using as many words and phrases from the paragraph above as possible, try to answer:
...", then "Rewrite the above paragraph but remove any sentences that have to do with the idea: ...").

A reply that cannot be parsed is asked for again with another seed, ``attempts`` times in all; then the
query is reported and left out of the fit set. Each finished query is written atomically into
``OUT.parts/``, so an interrupted run continues where it stopped; the folder itself is written beside
``OUT`` and renamed into place at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, Optional, Union
from urllib.parse import urlsplit, urlunsplit

from .._atomic import Earlier, FolderClaim, FolderOutput, output_folder, write_atomically
from .._owned import MARKER, WorkFolder, claim_folder, remove_entries, remove_folder
from .client import ChatClient, Completion
from .prompts import Prompts, clean_article, load_prompts, parse_question, parse_sides
from .queries import read_queries

__all__ = ["generate_fitset", "read_distractors", "read_perspectives", "MANIFEST", "GROUPS", "OUTPUT"]

MANIFEST = "manifest.json"
FORMAT = "pairmeasures-generate-fitset"
#: What a fit set folder is, for the replace policy (:mod:`pairmeasures._atomic`); fit sets written before the
#: marker are recognised by their manifest.json of this format.
OUTPUT = FolderOutput("generate-fitset", "fit set", FORMAT, Earlier(MANIFEST, json_format=FORMAT))
#: ``OUT.parts/``: the settings and one record per query finished, with their temporary files while written.
PARTS = WorkFolder("pairmeasures generate-fitset", "parts folder", "--out",
                   (r"settings\.json", r"[0-9a-f]{24}\.json", r"\.(settings|[0-9a-f]{24})\.json\.[^/]+\.tmp"),
                   "move it aside or delete it yourself, then run again")
#: The labels of the two perspectives, in header order (``p1`` is the pole :class:`~pairmeasures.FitSet` orients to).
GROUPS = ("p1", "p2")


class _Unparseable(Exception):
    """A step whose replies could not be parsed in any attempt."""


def _seed(seed: int, query_id: str, step: str, attempt: int) -> int:
    """The sampling seed of one attempt of one step: distinct per step and attempt, the same on every run."""
    digest = hashlib.sha256(f"{seed}\0{query_id}\0{step}\0{attempt}".encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class _Query:
    """The calls of one query, counting requests and tokens."""

    def __init__(self, client: ChatClient, prompts: Prompts, query_id: str, seed: int, attempts: int):
        self.client, self.prompts, self.query_id, self.seed, self.attempts = client, prompts, query_id, seed, attempts
        self.calls = self.requests = self.prompt_tokens = self.completion_tokens = 0

    def ask(self, messages: list, step: str, attempt: int) -> Completion:
        reply = self.client.complete(messages, _seed(self.seed, self.query_id, step, attempt))
        self.calls += 1
        self.requests += not reply.cached
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        return reply

    def parsed(self, step: str, messages: Callable[[int], list], parse: Callable[[list], object]):
        """``parse`` of the replies to ``messages(attempt)`` (a list: one reply per turn), retried with a new seed."""
        problem, last = "", ""
        for attempt in range(self.attempts):
            conversation = messages(attempt)
            replies = self.converse(conversation, step, attempt)
            try:
                return parse(replies)
            except ValueError as exc:
                problem, last = str(exc), replies[-1]
        excerpt = " ".join(last.split())[:120]
        raise _Unparseable(f"{step}: {problem} in all {self.attempts} attempts (last reply: {excerpt!r})")

    def converse(self, turns: list, step: str, attempt: int) -> list:
        """Replies to a conversation of user ``turns`` (system message first, if any): each turn sees the replies before."""
        messages: list = []
        replies: list = []
        for turn in turns:
            messages.append(turn)
            if turn["role"] != "user":
                continue
            reply = self.ask(list(messages), f"{step}/{len(replies)}" if len(replies) else step, attempt).content
            replies.append(reply)
            messages.append({"role": "assistant", "content": reply})
        return replies


def _generate_query(client: ChatClient, prompts: Prompts, query_id: str, question: str, *, per_side: int,
                    distractors: bool, seed: int, attempts: int) -> dict:
    """One query's perspectives, documents and distractors, or its failure with the reason."""
    calls = _Query(client, prompts, query_id, seed, attempts)
    pattern = prompts.header_pattern
    record: dict = {"query_id": query_id, "question": question}
    try:
        statements, first = calls.parsed("sides", lambda _: prompts.messages("sides", question=question),
                                         lambda replies: parse_sides(replies[0], pattern))
        documents: dict = {group: [] for group in GROUPS}
        for group, statement, first_article in zip(GROUPS, statements, first):
            if first_article:
                documents[group].append(first_article)

            def article_messages(_: int, statement: str = statement) -> list:
                return prompts.messages("article", question=question, perspective=statement)

            while len(documents[group]) < per_side:
                documents[group].append(calls.parsed(f"article/{group}/{len(documents[group])}", article_messages,
                                                     lambda replies: clean_article(replies[0], pattern)))
            del documents[group][per_side:]
        record.update(status="ok", perspectives=dict(zip(GROUPS, statements)), documents=documents)
        if distractors:
            other = calls.parsed("distractor-question", lambda _: prompts.messages("distractor_question", question=question),
                                 lambda replies: parse_question(replies[0]))
            made: dict = {group: [] for group in GROUPS}
            for group, statement in zip(GROUPS, statements):
                for number, document in enumerate(documents[group]):
                    def turns(_, document=document, statement=statement):
                        rewrite = {"role": "user", "content": prompts.fill("distractor_rewrite", perspective=statement)}
                        return [*prompts.messages("distractor_answer", document=document, distractor_question=other), rewrite]
                    made[group].append(calls.parsed(f"distractor/{group}/{number}", turns,
                                                    lambda replies: clean_article(replies[-1], pattern)))
            record.update(distractor_question=other, distractors=made)
    except _Unparseable as exc:
        record = {"query_id": query_id, "question": question, "status": "failed", "reason": str(exc)}
    record.update(calls=calls.calls, requests=calls.requests, prompt_tokens=calls.prompt_tokens,
                  completion_tokens=calls.completion_tokens)
    return record


def _public_endpoint(endpoint: str) -> str:
    """The endpoint without user name or password, for the manifest."""
    parts = urlsplit(endpoint)
    if parts.username or parts.password:
        parts = parts._replace(netloc=(parts.hostname or "") + (f":{parts.port}" if parts.port else ""))
    return urlunsplit(parts)


def _check_parts(parts: Path, settings: dict, force: bool) -> None:
    """Refuse what --force does not allow: to continue an interrupted run with other settings."""
    stored = parts / "settings.json"
    if stored.is_file() and json.loads(stored.read_text()) != settings:
        if not force:
            raise ValueError(f"{parts} holds an interrupted run with other settings (model, prompts, sampling, seed, "
                             "per-side or distractors): run it again as it was to continue it, or pass --force to start over")
        remove_entries(parts, [name for name in os.listdir(parts) if name != MARKER], PARTS)


def _part_path(parts: Path, query_id: str) -> Path:
    return parts / f"{hashlib.sha256(query_id.encode('utf-8')).hexdigest()[:24]}.json"


def generate_fitset(queries, out: Union[str, os.PathLike], *, endpoint: str, model: str, per_side: int = 4,
                    distractors: bool = False, concurrency: int = 4, seed: int = 0, force: bool = False,
                    prompts: Union[str, os.PathLike, None] = None, temperature: float = 0.7, top_p: float = 1.0,
                    max_tokens: int = 512, attempts: int = 3, max_retries: int = 5, timeout: float = 120.0,
                    cache: Union[str, os.PathLike, None, bool] = None, data: Optional[str] = None,
                    limit: Optional[int] = None, progress: bool = True, command: Optional[list] = None) -> dict:
    """Generate a fit set for ``queries`` into the BEIR-layout folder ``out`` and return its manifest (a dict).

    ``queries``: a dataset id (``pair/procon``; ``data`` a mirror folder), a BEIR folder, a ``queries.jsonl``
    or a TSV file (id, text), or a ``{query id: text}`` mapping. ``out`` gets ``corpus.jsonl``,
    ``queries.jsonl``, ``qrels/test.tsv``, ``labels.tsv`` (``p1``/``p2``), ``perspectives.tsv`` (each
    side's statement), ``distractors.jsonl`` (with ``distractors``) and ``manifest.json``; queries whose
    replies could not be parsed are left out and listed in the manifest with the reason.
    """
    for name, value in (("per_side", per_side), ("concurrency", concurrency), ("attempts", attempts)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    started = time.perf_counter()
    texts, source = read_queries(queries, data=data)
    if limit is not None:
        texts = dict(list(texts.items())[:limit])
    template = load_prompts(prompts)
    client = ChatClient(endpoint, model, temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                        max_retries=max_retries, timeout=timeout, cache=cache)
    out = Path(out).expanduser().absolute()
    parts = out.with_name(out.name + ".parts")
    settings = {"model": model, "prompts_sha256": template.sha256, "sampling": client.parameters, "seed": seed,
                "per_side": per_side, "distractors": distractors, "attempts": attempts}
    with output_folder(out, OUTPUT, force=force) as claim:  # locked and checked before any work
        claim_folder(parts, PARTS)  # refused, untouched, when it holds what this command did not write
        _check_parts(parts, settings, force)
        write_atomically(parts / "settings.json", json.dumps(settings, indent=2))

        records: dict = {}
        for query_id in texts:
            path = _part_path(parts, query_id)
            if path.is_file():
                record = json.loads(path.read_text(encoding="utf-8"))
                if record.get("question") == texts[query_id]:
                    records[query_id] = record
        resumed = len(records)
        pending = [q for q in texts if q not in records]
        from tqdm.auto import tqdm

        def generate_and_keep(query_id: str) -> dict:
            """One query, written into ``parts`` by the thread that made it (so it is kept even when the run is
            interrupted while the query is under way)."""
            record = _generate_query(client, template, query_id, texts[query_id], per_side=per_side,
                                     distractors=distractors, seed=seed, attempts=attempts)
            write_atomically(_part_path(parts, query_id), json.dumps(record, ensure_ascii=False))
            return record

        bar = tqdm(total=len(texts), initial=resumed, desc="generating fit set", unit="query", disable=not progress)
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = [pool.submit(generate_and_keep, q) for q in pending]
            try:
                for future in as_completed(futures):
                    record = future.result()
                    records[record["query_id"]] = record
                    bar.update(1)
            except BaseException:  # an endpoint refusing, or an interrupt: queries not started are not started
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            finally:
                bar.close()

        ordered = [records[q] for q in texts]
        manifest = _manifest(ordered, texts, source, template, client, settings, endpoint, resumed,
                             time.perf_counter() - started, command)
        _write_folder(claim, ordered, manifest, distractors)
        remove_folder(parts, PARTS)
        return manifest


def _manifest(records: list, texts: dict, source: str, template: Prompts, client: ChatClient, settings: dict,
              endpoint: str, resumed: int, seconds: float, command: Optional[list]) -> dict:
    import openai

    from .. import __version__

    failed = [r for r in records if r["status"] != "ok"]
    return {
        "format": FORMAT, "version": 1,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command,
        "queries_source": source,
        "endpoint": _public_endpoint(endpoint), "model": settings["model"],
        "prompts": {"source": template.source, "sha256": template.sha256},
        "sampling": settings["sampling"], "seed": settings["seed"], "per_side": settings["per_side"],
        "distractors": settings["distractors"], "attempts": settings["attempts"],
        "counts": {"queries": len(texts), "generated": len(records) - len(failed), "failed": len(failed),
                   "documents": sum(len(d) for r in records if r["status"] == "ok" for d in r["documents"].values()),
                   "distractors": sum(len(d) for r in records if r["status"] == "ok"
                                      for d in r.get("distractors", {}).values())},
        "this_run": {"requests": client.requests, "cache_hits": client.cache_hits, "resumed_queries": resumed,
                     "seconds": round(seconds, 1), "cache": str(client.cache_path) if client.cache_path else None},
        "tokens": {"calls": sum(r["calls"] for r in records), "prompt": sum(r["prompt_tokens"] for r in records),
                   "completion": sum(r["completion_tokens"] for r in records)},
        "per_query": {r["query_id"]: {"status": r["status"], **({"reason": r["reason"]} if r["status"] != "ok" else {}),
                                      "calls": r["calls"], "prompt_tokens": r["prompt_tokens"],
                                      "completion_tokens": r["completion_tokens"]} for r in records},
        "versions": {"pairmeasures": __version__, "openai": openai.__version__, "python": sys.version.split()[0]},
    }


def _jsonl(rows) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def _tsv(header: tuple, rows) -> str:
    def cell(value) -> str:
        return " ".join(str(value).split())  # a statement on one line, without tabs

    return "".join("\t".join(map(cell, row)) + "\n" for row in [header, *rows])


def _write_folder(out: FolderClaim, records: list, manifest: dict, distractors: bool) -> None:
    """The BEIR-layout folder, written beside the claimed ``out`` and renamed into place."""
    ok = [r for r in records if r["status"] == "ok"]
    corpus, qrels, labels, perspectives, extra = [], [], [], [], []
    for record in ok:
        query_id = record["query_id"]
        for group in GROUPS:
            perspectives.append((query_id, group, record["perspectives"][group]))
            for number, text in enumerate(record["documents"][group]):
                doc_id = f"{query_id}-{group}-{number}"
                corpus.append({"_id": doc_id, "text": text})
                qrels.append((query_id, doc_id, 1))
                labels.append((query_id, doc_id, group))
                if distractors:
                    extra.append({"_id": f"{doc_id}-distractor", "query_id": query_id, "imitates": group,
                                  "document": doc_id, "question": record["distractor_question"],
                                  "text": record["distractors"][group][number]})
    with out.written() as partial:
        (partial / "qrels").mkdir()
        files = {"corpus.jsonl": _jsonl(corpus),
                 "queries.jsonl": _jsonl({"_id": r["query_id"], "text": r["question"]} for r in ok),
                 "qrels/test.tsv": _tsv(("query-id", "corpus-id", "score"), qrels),
                 "labels.tsv": _tsv(("query-id", "corpus-id", "group"), labels),
                 "perspectives.tsv": _tsv(("query-id", "group", "statement"), perspectives),
                 MANIFEST: json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"}
        if distractors:
            files["distractors.jsonl"] = _jsonl(extra)
        for name, text in files.items():
            (partial / name).write_text(text, encoding="utf-8")


def read_distractors(folder: Union[str, os.PathLike]) -> dict:
    """``{"p1": [texts], "p2": [texts]}`` from a generated fit set's ``distractors.jsonl``, as
    :class:`~pairmeasures.PolarityModel` takes them (``distractors=``)."""
    from ..io.beir import existing, read_records

    path = existing(folder, "distractors.jsonl")
    grouped: dict = {group: [] for group in GROUPS}
    for record in read_records(path, required=("_id", "imitates", "text")).values():
        if record["imitates"] not in grouped:
            raise ValueError(f"{path}: distractor {record['_id']!r} imitates {record['imitates']!r}, not p1 or p2")
        grouped[record["imitates"]].append(record["text"])
    return grouped


def read_perspectives(folder: Union[str, os.PathLike]) -> dict:
    """``{query id: (statement of p1, statement of p2)}`` from a generated fit set's ``perspectives.tsv``,
    usable as :class:`~pairmeasures.PolarityModel` ``anchors``."""
    from ..io.beir import existing, iter_tsv

    statements: dict = {}
    for _, (query_id, group, statement) in iter_tsv(existing(folder, "perspectives.tsv"), ("query-id", "group", "statement")):
        statements.setdefault(query_id, {})[group] = statement
    return {q: (s["p1"], s["p2"]) for q, s in statements.items() if set(s) == set(GROUPS)}
