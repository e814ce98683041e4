"""ir_datasets' own files that a pairmeasures dataset reads through ir_datasets (the MS MARCO gender sets: the
``msmarco-passage`` collection and qrels, :class:`IrdsFile`): which of them are missing (:func:`irds_missing`,
without importing ir_datasets), and, on first use, ir_datasets fetching them (:func:`ensure_irds_files`).

A set whose files are missing is read as ir_datasets reads it: ir_datasets downloads them into
``$IR_DATASETS_HOME/msmarco-passage/`` (its own downloader, checksums and mirrors), after one line on stderr that
says what is downloaded, how big, and where it goes. Only when that fails (no network, a DNS failure, a timeout, a
download whose checksum differs, a full disk...) is it a :class:`~._resources.DatasetUnavailableError`, whose first
line says what is missing, where, why the download failed and what to do, and whose next lines list each file's URL,
size, checksum and place; it is raised ``from`` ir_datasets' error.

A ``collection.tsv`` there that ir_datasets did not mark (``irds_version.txt`` saying ``v2``) is never handed to
ir_datasets, whose migration would delete it: that is an error naming it (:func:`irds_unmarked`).
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Optional

from ._resources import DatasetUnavailableError, ir_datasets_home

__all__ = ["IrdsFile", "ensure_irds_files", "irds_missing", "irds_on_first_use", "irds_summary", "irds_unmarked",
           "why_failed"]


@dataclass(frozen=True)
class IrdsFile:
    """One of ir_datasets' own files that a dataset reading its documents or qrels from ir_datasets needs
    (``documents_from``): ``path`` under ``$IR_DATASETS_HOME`` (``msmarco-passage/dev/qrels``), made from the
    download ``download`` of ``downloads.json`` (ir_datasets' facts: URL, size, md5, cache path) of the ir_datasets
    dataset ``dataset``, and ``kind`` (``docs``, ``qrels``: what ``ir_datasets export`` fetches it with, and the
    handler whose ``<kind>_path()`` makes ir_datasets fetch it). ``extracted``: the file is extracted from that
    download (an archive), whose presence then counts too; ``version``: ``(file, text)`` ir_datasets requires beside
    the extracted file, else it deletes the file to extract it again."""

    dataset: str
    kind: str
    path: str
    download: str
    extracted: bool = False
    version: Optional[tuple[str, str]] = None

    @property
    def group(self) -> str:
        """The ir_datasets folder of the file (``msmarco-passage``)."""
        return self.dataset.split("/")[0]


def _download_facts(group: str, key: str) -> dict:
    """ir_datasets' facts of one download (``url``, ``size_hint``, ``expected_md5``, ``cache_path``), read from its
    ``etc/downloads.json`` without importing it; {} where they cannot be read."""
    try:
        return dict(_downloads_json()[group][key])
    except (KeyError, TypeError):
        return {}


@lru_cache(maxsize=1)
def _downloads_json() -> dict:
    """ir_datasets' ``etc/downloads.json`` (read once); {} where it cannot be read."""
    import importlib.util
    import json

    try:
        spec = importlib.util.find_spec("ir_datasets")
        if spec is None or spec.origin is None:
            return {}
        return json.loads((Path(spec.origin).parent / "etc" / "downloads.json").read_text(encoding="utf-8"))
    except (ImportError, ValueError, OSError):
        return {}


def _downloaded(facts: dict) -> Optional[Path]:
    """Where ir_datasets also takes a large download from (``$IR_DATASETS_HOME/downloads/<md5>``), when it does."""
    small = int(os.environ.get("IR_DATASETS_SMALL_FILE_SIZE", "5000000"))
    if facts.get("expected_md5") and facts.get("size_hint", small) >= small and not facts.get("skip_local"):
        return ir_datasets_home() / "downloads" / facts["expected_md5"]
    return None


def irds_unmarked(files: tuple[IrdsFile, ...]) -> list[str]:
    """What is wrong, one sentence each, with each of ``files`` that is there without the version mark ir_datasets
    requires beside it (``collection.tsv`` without ``irds_version.txt`` saying ``v2``): ir_datasets would delete it
    at its first use."""
    notes = []
    for file in files:
        folder = ir_datasets_home() / file.group
        target = folder / file.path
        if file.version is None or not target.is_file():
            continue
        marker, text = file.version
        try:
            marked = (folder / marker).read_text(encoding="utf-8").strip() == text
        except OSError:
            marked = False
        if not marked:
            notes.append(f"{target} is there, but {folder / marker} does not say {text!r}: ir_datasets would delete it "
                         "and extract it again")
    return notes


def irds_missing(files: tuple[IrdsFile, ...]) -> list[tuple[IrdsFile, dict]]:
    """``(file, its download's facts)`` for each of ``files`` that ir_datasets would have to download: neither it
    (marked, where it needs a mark: :func:`irds_unmarked`) nor, for an extracted file, its archive is under
    ``$IR_DATASETS_HOME``. Nothing is downloaded, and ir_datasets is not imported."""
    missing = []
    for file in files:
        folder = ir_datasets_home() / file.group
        facts = _download_facts(file.group, file.download)
        present = (folder / file.path).is_file() and not irds_unmarked((file,))
        if file.extracted and not present:
            archives = [folder / facts["cache_path"]] if facts.get("cache_path") else []
            archives += [p for p in [_downloaded(facts)] if p is not None]
            present = any(archive.is_file() for archive in archives)
        elif not present:
            downloaded = _downloaded(facts)
            present = downloaded is not None and downloaded.is_file()
        if not present:
            missing.append((file, facts))
    return missing


def _size(facts: dict) -> str:
    size = facts.get("size_hint")
    if not size:
        return "size unknown"
    return f"{size / 1e9:.2f} GB" if size >= 1e9 else f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"


def _name(file: IrdsFile, facts: dict) -> str:
    return facts.get("url", "").rsplit("/", 1)[-1] or file.path


def _listing(missing: list[tuple[IrdsFile, dict]], group: str) -> str:
    """``the collection (collectionandqueries.tar.gz, 1.06 GB) and the qrels (qrels.dev.tsv, 1.2 MB)``."""
    return " and ".join(f"the {'collection' if file.kind == 'docs' else file.kind} ({_name(file, facts)}, "
                        f"{_size(facts)})" for file, facts in missing if file.group == group)


def _groups(missing: list[tuple[IrdsFile, dict]]) -> list[str]:
    return list(dict.fromkeys(file.group for file, _ in missing))


def irds_summary(missing: list[tuple[IrdsFile, dict]]) -> str:
    """``ir_datasets' msmarco-passage lacks the collection (collectionandqueries.tar.gz, 1.06 GB) and the qrels
    (qrels.dev.tsv, 1.2 MB) in /home/me/.ir_datasets/msmarco-passage/``: what ``missing`` lacks, and where."""
    home = ir_datasets_home()
    return "; ".join(f"ir_datasets' {group} lacks {_listing(missing, group)} in {home / group}/"
                     for group in _groups(missing))


def irds_on_first_use(missing: list[tuple[IrdsFile, dict]]) -> str:
    """``ir_datasets msmarco-passage, downloaded on first use: the collection (collectionandqueries.tar.gz, 1.06 GB)
    and the qrels (qrels.dev.tsv, 1.2 MB)``: what ``pairmeasures datasets`` says of a set whose files are missing."""
    return "; ".join(f"ir_datasets {group}, downloaded on first use: {_listing(missing, group)}"
                     for group in _groups(missing))


def ensure_irds_files(dataset_id: str, files: tuple[IrdsFile, ...]) -> None:
    """Make sure ``files`` are under ``$IR_DATASETS_HOME`` before ``dataset_id`` reads them through ir_datasets:
    those missing are fetched by ir_datasets now (one line on stderr first: what, how big, where), as its first read
    would; a DatasetUnavailableError (``from`` ir_datasets' error) when that fails, naming the files, where they go,
    why it failed and how to fetch them elsewhere. A file ir_datasets would delete (:func:`irds_unmarked`) is an
    error before ir_datasets is asked for anything."""
    unmarked = irds_unmarked(files)
    if unmarked:
        raise DatasetUnavailableError(
            f"{dataset_id} is not available here: {'; '.join(unmarked)}, so pairmeasures does not hand it to "
            "ir_datasets: move it away (ir_datasets then fetches and extracts its own collection, the passages' "
            "encoding fixed, at the next use), or, if it is ir_datasets' encoding-fixed collection.tsv, write v2 "
            "into that irds_version.txt (docs/msmarco.md).")
    missing = irds_missing(files)
    if not missing:
        return
    home = ir_datasets_home()
    print(f"pairmeasures: {dataset_id}: downloading "
          + "; ".join(f"ir_datasets' {group} files, {_listing(missing, group)}, into {home / group}/"
                      for group in _groups(missing))
          + " (once: later uses read them there)", file=sys.stderr, flush=True)
    try:
        with _failed_tries_unsaid():
            for file, _ in missing:
                _fetch(file)
    except Exception as exc:  # anything but Ctrl-C, SIGTERM and sys.exit: the download did not happen
        raise DatasetUnavailableError(_unavailable(dataset_id, irds_missing(files) or missing, why_failed(exc))) from exc


def _fetch(file: IrdsFile) -> None:
    """Have ir_datasets fetch ``file`` as its first read would: its handler's ``docs_path()`` or ``qrels_path()``
    (the collection: downloaded, then extracted)."""
    import ir_datasets

    handler = getattr(ir_datasets.load(file.dataset), f"{file.kind}_handler")()
    getattr(handler, f"{file.kind}_path")()


@contextmanager
def _failed_tries_unsaid() -> Iterator[None]:
    """ir_datasets' log lines about failed tries (``download error: ... Retrying``, ``Download failed: ...``) left
    out while it fetches: a download that ends up failing is said once, in the error (:func:`why_failed`)."""
    import logging

    logger = logging.getLogger("ir_datasets")  # every logger of ir_datasets' has this name

    def keep(record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("download error:", "Download failed:"))

    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


def why_failed(error: BaseException) -> str:
    """Why fetching failed, in one phrase: the error's kind and the first line of its innermost reason (requests
    wraps urllib3's error, which wraps the socket's; ir_datasets gathers one error per mirror), e.g. ``ConnectionError:
    Failed to resolve 'msmarco.z22.web.core.windows.net' ([Errno -3] Temporary failure in name resolution)``."""
    if isinstance(error, RuntimeError) and len(error.args) == 2 and isinstance(error.args[1], list) and \
            error.args[1] and isinstance(error.args[1][0], tuple) and isinstance(error.args[1][0][-1], BaseException):
        error = error.args[1][0][-1]  # ir_datasets' "All download sources failed", [(mirror, error), ...]: the first
    reason, seen = error, {id(error)}
    while True:
        inner = getattr(reason, "reason", None)
        if not isinstance(inner, BaseException) and reason.args and isinstance(reason.args[0], BaseException):
            inner = reason.args[0]
        if not isinstance(inner, BaseException) or id(inner) in seen:
            break
        reason = inner
        seen.add(id(reason))
    texts = [arg for arg in reason.args if isinstance(arg, str)]
    text = str(reason) if isinstance(reason, OSError) and reason.errno is not None or not texts else texts[-1]
    text = next((line.strip() for line in text.splitlines() if line.strip()), "")
    text = re.sub(r"^(<[^<>]*>|\w+\([^()]*\)):\s*", "", text)  # urllib3 names its connection object first
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _unavailable(dataset_id: str, missing: list[tuple[IrdsFile, dict]], why: str) -> str:
    """The message of a download that failed: a first line that says it all, then each file's URL and place."""
    home = ir_datasets_home()
    lines = [f"{dataset_id} is not available here: {irds_summary(missing)} ($IR_DATASETS_HOME), and downloading them "
             f"failed ({why}); run it again with network access, or fetch them elsewhere and put them there "
             "(below; docs/msmarco.md).",
             "Fetch them where there is network and put them there:"]
    for file, facts in missing:
        target = home / file.group / (facts.get("cache_path") or file.path)
        checksum = f", md5 {facts['expected_md5']}" if facts.get("expected_md5") else ""
        lines.append(f"  {facts.get('url', file.path)} ({_size(facts)}{checksum})\n    -> {target}"
                     + (f" (ir_datasets extracts {file.path} from it)" if file.extracted else ""))
    exports = " and ".join(dict.fromkeys(f"'ir_datasets export {file.dataset} {file.kind} > /dev/null'"
                                         for file, _ in missing))
    lines.append(f"or, on a machine with network access, let ir_datasets fetch them ({exports}) and copy its "
                 f"$IR_DATASETS_HOME/{missing[0][0].group}/ here (docs/msmarco.md).")
    return "\n".join(lines)
