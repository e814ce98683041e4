"""The typed records every pairmeasures dataset shares: :class:`Query`, :class:`Qrel`, :class:`GroupLabel`
(each dataset family's document and query metadata records are in its own module)."""

# No ``from __future__ import annotations`` in record modules: PyTerrier's text loader (``pt.text.get_text``)
# keeps only fields whose annotation is the type ``str``.

from typing import NamedTuple


class Query(NamedTuple):
    """A query: PyTerrier's ``get_topics()`` names its text ``query``. Metadata is in :class:`QueryInfo` records."""

    query_id: str
    text: str


class Qrel(NamedTuple):
    """A relevance judgement of a document for a query."""

    query_id: str
    doc_id: str
    relevance: int


class GroupLabel(NamedTuple):
    """The gold group of a document with respect to a query (a perspective, a stance, a side, a gender)."""

    query_id: str
    doc_id: str
    group: str
