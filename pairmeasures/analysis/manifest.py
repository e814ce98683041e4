"""Provenance of an audit: versions, checksums, timings and cache hits, written beside the results; paths in it
written relative to the folder it lies in (:class:`PathRecord`), so that it reads the same on another machine."""

from __future__ import annotations

import os
import platform
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from ..io.memo import sha256_file

__all__ = ["Manifest", "PathRecord", "sha256_file", "versions", "embedding_seconds", "embedded_counts"]


#: The installed package's folder, as a record writes paths inside it (the embedded demo corpus, say).
PACKAGE = "<pairmeasures>"


@dataclass(frozen=True)
class PathRecord:
    """How a record written into ``folder`` (an output folder; None: none known) writes a path of this machine:
    relative to ``folder`` (``..`` is the folder that holds it), so that the record reads the same wherever the
    folder and what it names are copied together; a path inside the installed package as ``<pairmeasures>/...``; a
    path under the user's home folder, where ``folder`` shares no other folder with it, as ``~/...``. With
    ``absolute`` (``--absolute-paths``), or without a ``folder``, the absolute path."""

    folder: Optional[Path] = None
    absolute: bool = False

    def __call__(self, path: str | os.PathLike) -> str:
        target = Path(path).expanduser().resolve()
        if self.absolute or self.folder is None:
            return str(target)
        inside = _below(target, Path(__file__).resolve().parents[1])
        if inside is not None:
            return f"{PACKAGE}/{inside}" if inside != "." else PACKAGE
        folder = Path(self.folder).expanduser().resolve()
        try:
            common = Path(os.path.commonpath([target, folder]))
        except ValueError:  # another drive: no relative path leads there
            return str(target)
        if common == Path(common.anchor):  # nothing in common but the root: the home folder, where it applies
            try:
                home = _below(target, Path.home().resolve())
            except (RuntimeError, KeyError):  # no home folder known
                home = None
            if home is not None:
                return "~" if home == "." else f"~/{home}"
        return Path(os.path.relpath(target, folder)).as_posix()

    def locate(self, recorded: str) -> Path:
        """The path of this machine that ``recorded`` (as :meth:`__call__` wrote it into ``folder``) names: the
        inverse of writing it, so that a record read again compares paths as they are here."""
        text = str(recorded)
        if text == PACKAGE or text.startswith(PACKAGE + "/"):
            return (Path(__file__).resolve().parents[1] / text[len(PACKAGE) + 1:]).resolve()
        if text == "~" or text.startswith("~/"):
            return Path(text).expanduser().resolve()
        path = Path(text)
        if path.is_absolute() or self.folder is None:
            return path.resolve()
        return (Path(self.folder).expanduser().resolve() / path).resolve()

    def describe(self) -> str:
        """How the record's paths are written, in words (the manifest's ``paths``)."""
        if self.absolute or self.folder is None:
            return "absolute"
        return f"relative to this folder ({PACKAGE}: the installed pairmeasures package, ~: the home folder)"


def _below(path: Path, folder: Path) -> Optional[str]:
    """``path`` relative to ``folder`` (POSIX), or None when it is not inside it."""
    try:
        return path.relative_to(folder).as_posix()
    except ValueError:
        return None


def versions(modules: Optional[Any] = None) -> dict:
    """Python, pairmeasures, and the version of every installed distribution that provides a module imported in this
    process (``modules``: module names, default ``sys.modules``), by distribution name, sorted: what ran, not what a
    list names (``pyterrier`` 1.1.2, say, and not the ``python-terrier`` meta-package beside it)."""
    from importlib import metadata

    from .. import __version__

    names = sys.modules if modules is None else modules
    imported = {str(name).partition(".")[0] for name in list(names)}
    providers = metadata.packages_distributions()
    distributions = {distribution for module in imported for distribution in providers.get(module, ())}
    found: dict[str, Any] = {"python": platform.python_version(), "pairmeasures": __version__}
    for distribution in sorted(distributions, key=str.lower):
        if distribution.lower() == "pairmeasures":  # the package itself: its own __version__ (a checkout may run)
            continue
        try:
            found[distribution] = metadata.version(distribution)
        except metadata.PackageNotFoundError:  # a stale record of an uninstalled distribution
            continue
    return found


def embedding_seconds() -> float:
    """Seconds this process has spent loading embedding models and encoding texts
    (:attr:`pairmeasures.compute.embed.Embedder.total_embed_seconds`)."""
    from ..compute.embed import Embedder

    return Embedder.total_embed_seconds


def precisions_chosen() -> dict:
    """The embedding precisions chosen on GPUs in this process, with their measurements
    (:func:`pairmeasures.compute.embedded.precisions_chosen`)."""
    from ..compute.embedded import precisions_chosen as chosen

    return chosen()


def embedded_counts() -> dict:
    """Texts embedded in this process by purpose (:func:`pairmeasures.compute.embed.embedded_counts`)."""
    from ..compute.embed import embedded_counts as counts

    return counts()


@dataclass
class Manifest:
    """What an audit records about itself; :meth:`step` times a step, :meth:`as_dict` is the JSON, its paths (``cwd``:
    where the command ran) written as ``paths`` says (:class:`PathRecord`).

    ``apart``: work booked as a step of its own wherever it happens (name -> a clock of the seconds spent on it so far
    in the process; by default ``embedding``): a step's time leaves it out, and ``timings`` has its total since the
    manifest was made. A cold audit's first run, which embeds the corpus, then shows the run's own time and the
    embedding's apart.

    ``embedded``: the texts embedded since the manifest was made, per purpose (a step's name, unless the work inside
    it names its own purpose, as the audit's ``polarity`` of the measured rows does), with why each was embedded
    (:meth:`embedding_reason`)."""

    command: list = field(default_factory=lambda: list(sys.argv))
    paths: PathRecord = field(default_factory=PathRecord)
    record: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    cache: dict = field(default_factory=lambda: {"hits": 0, "misses": 0, "systems": {}})
    apart: dict = field(default_factory=lambda: {"embedding": embedding_seconds})
    reasons: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._apart_from = {name: clock() for name, clock in self.apart.items()}
        self._embedded_from = embedded_counts()

    def embedding_reason(self, purpose: str, why: str, **details: Any) -> None:
        """Say why the texts of ``purpose`` are embedded (``details``: e.g. the depth, the rows scored)."""
        self.reasons[purpose] = {"why": why, **details}

    def embedded(self) -> dict:
        """``{purpose: {"texts", "computed", "why", ...}}``: distinct texts asked for and embedded by a model (not from
        the cache) since the manifest was made, with the reasons given; purposes with reasons but no texts too."""
        now, before = embedded_counts(), self._embedded_from
        found = {}
        for purpose, counts in now.items():
            start = before.get(purpose, {})
            texts, computed = counts["texts"] - start.get("texts", 0), counts["computed"] - start.get("computed", 0)
            if texts or computed:
                found[purpose] = {"texts": texts, "computed": computed}
        for purpose, reason in self.reasons.items():
            found[purpose] = {**found.get(purpose, {"texts": 0, "computed": 0}), **reason}
        return found

    def _spent_apart(self) -> dict:
        return {name: clock() - self._apart_from[name] for name, clock in self.apart.items()}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time the block as step ``name`` (added to an earlier step of that name), less the work booked apart."""
        from ..compute.embed import embedding_purpose

        start, before = time.perf_counter(), {n: clock() for n, clock in self.apart.items()}
        try:
            with embedding_purpose(name):
                yield
        finally:
            elapsed = time.perf_counter() - start
            elapsed -= sum(clock() - before[n] for n, clock in self.apart.items())
            self.timings[name] = round(self.timings.get(name, 0.0) + max(elapsed, 0.0), 3)

    def cached(self, system: str, hit: bool, key: str) -> None:
        self.cache["hits" if hit else "misses"] += 1
        self.cache["systems"][system] = {"hit": hit, "key": key}

    def timings_s(self) -> dict:
        """The steps' seconds, then the work booked apart, then ``total`` when it was set."""
        timings = {name: value for name, value in self.timings.items() if name != "total"}
        timings.update({name: round(spent, 3) for name, spent in self._spent_apart().items()})
        if "total" in self.timings:
            timings["total"] = self.timings["total"]
        return timings

    def as_dict(self) -> dict:
        return {"command": self.command, "cwd": self.paths(Path.cwd()), "paths": self.paths.describe(),
                "versions": versions(), **self.record,
                "timings_s": self.timings_s(), "cache": self.cache, "embedded": self.embedded(),
                **({"embedding_precision": chosen} if (chosen := precisions_chosen()) else {})}
