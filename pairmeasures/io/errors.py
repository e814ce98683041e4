"""The errors and warnings of the file readers and of side information, in a leaf module that the readers (``beir``,
``runfiles``, ``sideinfo.tsv``) and :mod:`pairmeasures.sideinfo` import (re-exported as
``pairmeasures.sideinfo.SideInfoError`` and ``.InputWarning``)."""

from __future__ import annotations

__all__ = ["SideInfoError", "InputWarning"]


class SideInfoError(ValueError):
    """A resource cannot be resolved or read."""


class InputWarning(UserWarning):
    """An input file is usable but not as clean as it looks (a judgement listed twice, a run and qrels that share
    only some queries): the message names the files, the cause and the count, and what was done."""
