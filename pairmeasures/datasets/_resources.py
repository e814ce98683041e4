"""Where a dataset's files come from: a mirror folder, the download cache, or its public source.

A *resource* is one folder (``perspectrum/``) or file (``wiki-balance-categories.tsv``) of the
mirror layout (the layout of ``shared/data``). It is looked up, in order, in

1. the folder passed as ``data=`` (else the folder named by ``PAIRMEASURES_DATA``),
2. the download cache ``$IR_DATASETS_HOME/pair/`` (default ``~/.ir_datasets/pair/``), which has
   the same layout, so a cache copied to an offline machine works as a mirror there,

and otherwise downloaded from its public source (with ir_datasets' downloader: progress bar),
converted to the mirror layout and kept in the cache. A resource folder that exists but lacks
files is an error, never skipped silently.

Every downloaded file is checked against its SHA-256: the one pinned in :class:`RemoteFile` when
known, else the one recorded when it was first downloaded (trust on first use, in
``.sources/<resource>.sha256`` of the cache). Files the conversion writes are checked against the
SHA-256 pinned in :class:`Resource` where known. A mismatch is a :class:`DatasetError` naming the
file, and nothing of it enters the cache.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import quote

from .._owned import discard, move_entries, release_empty, scratch_folder
from ..io.memo import sha256_file

__all__ = ["BEIR_FILES", "DATA_ENV", "UNKNOWN", "DatasetError", "DatasetUnavailableError", "Location", "RemoteFile",
           "Resource", "cache_root", "find", "github_file", "huggingface_file", "ir_datasets_home", "locate"]

#: The environment variable naming a mirror folder laid out like ``shared/data``.
DATA_ENV = "PAIRMEASURES_DATA"


class DatasetError(ValueError):
    """A dataset cannot be loaded: a damaged or incomplete file (named with its line), or no source."""


class DatasetUnavailableError(DatasetError):
    """Neither a mirror nor the download cache has the files, and downloading them failed."""


@dataclass(frozen=True)
class RemoteFile:
    """A file of a public source, saved as ``name``. ``sha256``: its pinned checksum; None where it is
    not known, and then the checksum of the first download is recorded and required afterwards."""

    url: str
    name: str
    sha256: Optional[str]


def github_file(repo: str, commit: str, path: str, sha256: Optional[str], name: Optional[str] = None) -> RemoteFile:
    """A file of a GitHub repository at a fixed commit."""
    return RemoteFile(f"https://github.com/{repo}/raw/{commit}/{quote(path)}", name or path.rsplit("/", 1)[-1], sha256)


def huggingface_file(repo: str, revision: str, path: str, sha256: Optional[str], name: Optional[str] = None) -> RemoteFile:
    """A file of a Hugging Face dataset repository at a fixed revision (a commit, never a branch)."""
    return RemoteFile(f"https://huggingface.co/datasets/{repo}/resolve/{revision}/{quote(path)}", name or path, sha256)


#: The files of a BEIR folder.
BEIR_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")
#: No checksum of a public source file is known here (no network access when this was written): each
#: is recorded at its first download and required afterwards. The files converted from them are pinned
#: where the conversion of sources rebuilt from ``shared/data`` gives the bytes of ``shared/data``.
UNKNOWN = None


@dataclass(frozen=True)
class Resource:
    """One folder (``files`` lists what it must hold) or one file (``files`` empty) of the mirror layout.

    ``files``: required files relative to the folder; an entry ``"corpus.jsonl"`` is also met by
    ``corpus.jsonl.gz``; ``optional``: files read when present. ``convert(sources, target)`` turns
    the downloaded ``remote`` files (in the folder ``sources``) into ``target`` (the resource's
    folder or file). ``source`` names the public source in messages. ``converted_sha256``: pinned
    checksums of converted files, as ``(path in the folder, sha256)``, the path ``""`` for a file
    resource; a conversion that writes other bytes is rejected.
    """

    name: str
    files: tuple[str, ...]
    remote: tuple[RemoteFile, ...]
    convert: Callable[[Path, Path], None]
    source: str
    optional: tuple[str, ...] = ()
    converted_sha256: tuple[tuple[str, str], ...] = ()

    def missing(self, path: Path) -> list[str]:
        """Required files absent from ``path`` (a resource folder)."""
        return [f for f in self.files if not ((path / f).is_file() or (path / f"{f}.gz").is_file())]


@dataclass(frozen=True)
class Location:
    """Where a resource was found: ``path`` (folder or file) and ``origin`` (``data=``, the
    environment variable, or the download cache)."""

    resource: Resource
    path: Path
    origin: str

    def file(self, name: str) -> Path:
        """A file of the resource folder (its ``.gz`` copy when the plain one is absent)."""
        plain = self.path / name
        return plain if plain.is_file() else self.path / f"{name}.gz"


def ir_datasets_home() -> Path:
    """ir_datasets' folder, ``$IR_DATASETS_HOME`` (read now, so a changed variable takes effect)."""
    return Path(os.environ.get("IR_DATASETS_HOME") or Path.home() / ".ir_datasets").expanduser()


def cache_root() -> Path:
    """The download cache ``$IR_DATASETS_HOME/pair``, laid out like a mirror."""
    return ir_datasets_home() / "pair"


def mirror_roots(data: Optional[str | os.PathLike] = None) -> list[tuple[str, Path]]:
    """``(origin, folder)`` to search, in order: ``data`` (else ``$PAIRMEASURES_DATA``), then the cache."""
    roots = []
    if data is not None:
        roots.append(("data argument", _mirror_folder(Path(data).expanduser(), "the data folder")))
    elif os.environ.get(DATA_ENV):
        roots.append((DATA_ENV, _mirror_folder(Path(os.environ[DATA_ENV]).expanduser(), f"${DATA_ENV}")))
    roots.append(("download cache", cache_root()))
    return roots


def _mirror_folder(path: Path, named: str) -> Path:
    """``path`` if it is a folder; else a DatasetError: a mirror named but absent would fall through to downloads."""
    if not path.is_dir():
        what = "is a file, not a folder" if path.is_file() else "does not exist"
        raise DatasetError(f"{named} {str(path)!r} {what}: name a mirror folder laid out like shared/data (one "
                           f"subfolder per dataset; see docs/datasets.md)"
                           + (f", or unset {DATA_ENV}" if named.startswith("$") else ""))
    return path


def find(resource: Resource, data: Optional[str | os.PathLike] = None) -> Optional[Location]:
    """The first mirror holding ``resource``, or None. An incomplete resource folder is an error."""
    for origin, root in mirror_roots(data):
        path = root / resource.name
        if not path.exists():
            continue
        advice = ("delete it to download it again" if origin == "download cache" else
                  "complete it, or remove it to use the next source")
        if path.is_dir() != bool(resource.files):
            raise DatasetError(f"{path} ({origin}) should be {'a folder' if resource.files else 'a file'}; {advice}")
        missing = resource.missing(path) if resource.files else []
        if missing:
            raise DatasetError(f"{path} ({origin}) is incomplete: it needs {', '.join(missing)}; {advice}")
        return Location(resource, path, origin)
    return None


def locate(resource: Resource, data: Optional[str | os.PathLike] = None, dataset_id: str = "") -> Location:
    """Where ``resource`` is, downloading and converting it into the cache when no mirror has it."""
    return find(resource, data) or _download(resource, data, dataset_id or resource.name)


def _download(resource: Resource, data: Optional[str | os.PathLike], dataset_id: str) -> Location:
    from ir_datasets.util import Download, RequestsDownload

    root = cache_root()
    sources = root / ".sources" / resource.name
    try:
        for remote in resource.remote:
            Download([RequestsDownload(remote.url)], cache_path=str(sources / remote.name)).path()
    except (OSError, RuntimeError) as exc:  # network errors of requests are OSErrors
        raise DatasetUnavailableError(unavailable_message(resource, data, dataset_id, exc)) from exc
    _check_sources(resource, sources, dataset_id)
    target = root / resource.name
    with scratch_folder(root, f".staging-{resource.name}.") as scratch:  # made now: removed with what is left in it
        staging = scratch / resource.name
        try:
            resource.convert(sources, staging)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:  # DatasetError included: it names the file
            if isinstance(exc, DatasetError):
                raise
            raise DatasetError(f"the files of {resource.source} in {sources} are not in the expected format "
                               f"({exc!r}); delete them to download them again") from exc
        lacking = resource.missing(staging) if resource.files else [] if staging.is_file() else [resource.name]
        if lacking:
            raise DatasetError(f"converting {sources} produced no {', '.join(lacking)}")
        _check_converted(resource, sources, staging, dataset_id)
        try:
            move_entries(scratch, root)  # never over what is at the target (find() found nothing there)
        except FileExistsError:  # another process converted it meanwhile: theirs is used, this one removed
            pass
    _remove(resource, sources)
    return Location(resource, target, "download cache")


def _check_sources(resource: Resource, sources: Path, dataset_id: str) -> None:
    """Each downloaded file against its pinned checksum, else the one recorded at its first download
    (recorded now when there is none). On a mismatch the resource's downloads are removed."""
    record = sources.parent / f"{resource.name}.sha256"
    recorded = _read_record(record)
    found = {}
    for remote in resource.remote:
        path = sources / remote.name
        found[remote.name] = digest = sha256_file(path)
        expected = remote.sha256 or recorded.get(remote.name)
        if expected is None or digest == expected:
            continue
        _remove(resource, sources)
        if remote.sha256:
            origin, advice = "pinned by pairmeasures", "use a mirror (docs/datasets.md), or report the change"
        else:
            origin = f"recorded at its first download in {record}"
            advice = f"if the new version is intended, delete {record} to accept it"
        raise DatasetUnavailableError(
            f"{dataset_id}: {remote.url} (saved as {path}) has SHA-256 {digest}, not the {expected} {origin}: "
            f"the source changed or the download is damaged. The download was removed; {advice}")
    unrecorded = {name: digest for name, digest in found.items() if name not in recorded}
    if unrecorded:
        record.write_text("".join(f"{digest}  {name}\n" for name, digest in sorted({**recorded, **unrecorded}.items())),
                          encoding="utf-8")


def _read_record(record: Path) -> dict[str, str]:
    """The checksums of a record (``<sha256>  <name>`` lines); a damaged record is an error, never ignored."""
    if not record.is_file():
        return {}
    recorded = {}
    for number, line in enumerate(record.read_text(encoding="utf-8").splitlines(), start=1):
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name or any(c not in "0123456789abcdef" for c in digest):
            raise DatasetError(f"{record}:{number}: expected '<sha256>  <file name>', got {line!r}; delete the file "
                               "to record the checksums of the next download")
        recorded[name] = digest
    return recorded


def _check_converted(resource: Resource, sources: Path, staging: Path, dataset_id: str) -> None:
    """The converted files against their pinned checksums; a mismatch removes them (the downloads stay)."""
    for relative, expected in resource.converted_sha256:
        path = staging / relative if relative else staging
        digest = sha256_file(path) if path.is_file() else "missing"
        if digest != expected:  # (the staging folder is removed by the caller)
            name = f"{resource.name}/{relative}" if relative else resource.name
            raise DatasetError(f"{dataset_id}: converting {sources} gave {name} with SHA-256 {digest}, not the pinned "
                               f"{expected}: the public source is not the version pairmeasures knows. Use a mirror "
                               "(docs/datasets.md), or report the change")


def _remove(resource: Resource, sources: Path) -> None:
    """Delete the files of ``resource`` downloaded into ``sources`` (each named by its remote), then the folder when
    nothing else is in it: nothing else there is deleted."""
    for remote in resource.remote:
        if (sources / remote.name).is_file():
            discard(sources / remote.name)
    release_empty(sources)


def unavailable_message(resource: Resource, data: Optional[str | os.PathLike], dataset_id: str,
                        error: BaseException) -> str:
    """What to put where, when no mirror has ``resource`` and it cannot be downloaded."""
    if data is not None:
        mirror, setting = Path(data).expanduser(), ""
    elif os.environ.get(DATA_ENV):
        mirror, setting = Path(os.environ[DATA_ENV]).expanduser(), f" (${DATA_ENV})"
    else:
        mirror, setting = Path("DIR"), f", then set {DATA_ENV}=DIR or pass data=DIR"
    target = mirror / resource.name
    what = f"{', '.join(resource.files)} into {target}/" if resource.files else f"the file {target}"
    sources = cache_root() / ".sources" / resource.name
    downloads = "\n".join(f"  {r.url}\n    -> {sources / r.name}" for r in resource.remote)
    return (f"{dataset_id} is not available here: no mirror has {resource.name} and downloading it failed "
            f"({type(error).__name__}: {error}).\n"
            f"Either put {what}{setting} (the mirror layout of docs/datasets.md),\n"
            f"or fetch its public source ({resource.source}) where there is network access and place the files "
            f"as listed; they are converted on first use:\n{downloads}")
