"""Names the audit's files use: a text as a file name, and the dataset as the files record it (a leaf: the
outputs and the report's sections both use it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...analysis.manifest import PathRecord
    from ...datasets.profile import Profile


def file_name(text: str) -> str:
    """``text`` as a file name: letters and digits kept, the rest ``_``."""
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")


def dataset_record(profile: "Profile", paths: "PathRecord") -> tuple:
    """``(id, source)`` of the dataset as the audit's files record it: a dataset id as it is, a folder as ``paths``
    writes it (relative to the output folder, unless ``--absolute-paths``)."""
    if profile.corpus.is_folder:
        return paths(profile.name), paths(profile.source)
    return profile.name, profile.source
