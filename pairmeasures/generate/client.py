"""Chat completions from any OpenAI-compatible endpoint, through the ``openai`` client, with a response cache.

Retries on rate limits (429), server errors (5xx), timeouts and dropped connections are the ``openai``
client's own (``max_retries``: exponential backoff with jitter, honouring ``Retry-After``); any other
refusal (a wrong model name, a missing key) stops the run with one line naming endpoint and model.

The cache is one SQLite file beside the embedding cache (``PAIRMEASURES_CACHE_DIR``, else
``~/.cache/pairmeasures``): ``generations.sqlite``, keyed by the SHA-256 of (model name, messages,
sampling parameters, seed), so the same request to another endpoint serving the same model is free,
and a re-run of a generation costs no request. The API key is read from ``OPENAI_API_KEY`` by the
client and never stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Union

__all__ = ["ChatClient", "Completion", "GenerationError", "default_generation_cache"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    request TEXT NOT NULL,
    content TEXT NOT NULL,
    finish_reason TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    created REAL NOT NULL
)
"""


class GenerationError(RuntimeError):
    """The endpoint refused or could not be reached after the retries; the message names endpoint and model."""


def default_generation_cache() -> Path:
    """``generations.sqlite`` in pairmeasures' cache folder (where the embedding cache lives)."""
    from ..compute.cache import default_cache_path

    return default_cache_path().parent / "generations.sqlite"


@dataclass(frozen=True)
class Completion:
    """One reply: its text, why it stopped, its token counts, and whether it came from the cache."""

    content: str
    finish_reason: Optional[str]
    prompt_tokens: int
    completion_tokens: int
    cached: bool


class ChatClient:
    """Chat completions of ``model`` at ``endpoint`` with fixed sampling parameters, cached by request.

    ``cache``: a file, ``None`` for :func:`default_generation_cache`, or ``False`` for none. Thread-safe:
    counters (``requests`` made, ``cache_hits``) are shared by the threads of a run.
    """

    def __init__(self, endpoint: str, model: str, *, temperature: float = 0.7, top_p: float = 1.0,
                 max_tokens: int = 512, max_retries: int = 5, timeout: float = 120.0,
                 cache: Union[str, os.PathLike, None, bool] = None):
        try:
            from openai import OpenAI
        except ImportError:
            raise RuntimeError("generating fit sets needs the openai client: pip install 'pairmeasures[llm]'") from None

        self.endpoint, self.model = endpoint, model
        self.parameters = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens}
        # Local servers need no key; the client insists on one, so a placeholder stands in (never stored).
        self._client = OpenAI(base_url=endpoint, api_key=os.environ.get("OPENAI_API_KEY") or "none",
                              max_retries=max_retries, timeout=timeout)
        self.cache_path: Optional[Path] = None
        if cache is not False:
            self.cache_path = default_generation_cache() if cache is None or cache is True else Path(cache)
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as connection:
                connection.execute(_SCHEMA)
        self._lock = threading.Lock()
        self.requests = self.cache_hits = 0

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection to the cache file for one transaction (committed on success), closed afterwards; an SQLite
        error is a :class:`GenerationError` naming the file and what to do (:meth:`_cache_error`)."""
        try:
            connection = sqlite3.connect(str(self.cache_path), timeout=60)
        except sqlite3.Error as exc:
            raise self._cache_error(exc) from exc
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            with connection:
                yield connection
        except sqlite3.Error as exc:
            raise self._cache_error(exc) from exc
        finally:
            connection.close()

    def _cache_error(self, exc: sqlite3.Error) -> GenerationError:
        """What to say when the cache file cannot be used: damaged (or not a database) is for the user to move aside
        (it holds only replies already received), anything else (locked, a read-only folder) named as it is."""
        where = f"the reply cache {self.cache_path}"
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
            return GenerationError(f"{where} is damaged or is not an SQLite database (SQLite: {exc}): move it aside or "
                                   "delete it (it holds only replies already received, which are asked for again), or "
                                   "give another --cache, or --no-cache")
        return GenerationError(f"{where} cannot be used (SQLite: {exc}): check that its folder is writable and that no "
                               "other process holds it, or give another --cache, or --no-cache")

    def complete(self, messages: list, seed: int) -> Completion:
        """The reply to ``messages`` sampled with ``seed``: from the cache, else from the endpoint (then cached)."""
        request = {"model": self.model, "messages": messages, **self.parameters, "seed": seed}
        text = json.dumps(request, sort_keys=True, ensure_ascii=False)
        key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if self.cache_path is not None:
            with self._connect() as connection:
                row = connection.execute("SELECT content, finish_reason, prompt_tokens, completion_tokens FROM "
                                         "completions WHERE key = ?", (key,)).fetchone()
            if row is not None:
                with self._lock:
                    self.cache_hits += 1
                return Completion(row[0], row[1], row[2] or 0, row[3] or 0, cached=True)
        completion = self._request(request)
        with self._lock:
            self.requests += 1
        if self.cache_path is not None:
            with self._connect() as connection:
                connection.execute("INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?, ?, ?, ?)",
                                   (key, text, completion.content, completion.finish_reason, completion.prompt_tokens,
                                    completion.completion_tokens, time.time()))
        return completion

    def _request(self, request: dict) -> Completion:
        import openai

        where = f"{self.endpoint} (model {self.model!r})"
        try:
            response = self._client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            raise GenerationError(f"{where} answered HTTP {exc.status_code}: {_brief(exc)}"
                                  f"{'; set OPENAI_API_KEY' if exc.status_code == 401 else ''}") from None
        except openai.APITimeoutError:
            raise GenerationError(f"{where} did not answer within the timeout, retries included") from None
        except openai.APIConnectionError as exc:
            raise GenerationError(f"cannot reach {where}: {exc.__cause__ or exc}") from None
        if not response.choices:
            raise GenerationError(f"{where} returned no choices")
        choice = response.choices[0]
        usage = response.usage
        return Completion(choice.message.content or "", choice.finish_reason,
                          usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0, cached=False)


def _brief(exc: Exception) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return " ".join(str(message).split())[:300]
