"""Provenance of an audit: versions, checksums, timings and cache hits, written beside the results."""

from __future__ import annotations

import platform
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..sideinfo.memo import sha256_file

__all__ = ["Manifest", "sha256_file", "versions", "DEPENDENCIES"]

#: Distributions whose versions a manifest records.
DEPENDENCIES = ("ir_measures", "python-terrier", "pyterrier-pisa", "pyterrier-dr", "sentence-transformers", "torch",
                "numpy", "pandas", "scipy", "statsmodels", "matplotlib")


def versions() -> dict:
    """Python, pairmeasures and each of :data:`DEPENDENCIES` (``None`` where not installed)."""
    from importlib import metadata

    from .. import __version__

    found: dict[str, Any] = {"python": platform.python_version(), "pairmeasures": __version__}
    for name in DEPENDENCIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


@dataclass
class Manifest:
    """What an audit records about itself; :meth:`step` times a step, :meth:`as_dict` is the JSON."""

    command: list = field(default_factory=lambda: list(sys.argv))
    record: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    cache: dict = field(default_factory=lambda: {"hits": 0, "misses": 0, "systems": {}})

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = round(self.timings.get(name, 0.0) + time.perf_counter() - start, 3)

    def cached(self, system: str, hit: bool, key: str) -> None:
        self.cache["hits" if hit else "misses"] += 1
        self.cache["systems"][system] = {"hit": hit, "key": key}

    def as_dict(self) -> dict:
        return {"command": self.command, "cwd": str(Path.cwd()), "versions": versions(), **self.record,
                "timings_s": self.timings, "cache": self.cache}
