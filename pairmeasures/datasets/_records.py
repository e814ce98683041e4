"""Typed records of the pairmeasures datasets (what ``docs_iter()``, ``queries_iter()`` and friends yield)."""

from __future__ import annotations

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


class WikiBalanceDoc(NamedTuple):
    """A Wiki-Balance Synthetic document; ``perspective`` (``p1``/``p2``) comes from its id
    ``{topic_id}_{query index}_p{1|2}_d{n}``."""

    doc_id: str
    title: str
    text: str
    query_id: str
    topic_id: str
    perspective: str


class WikiBalanceNaturalDoc(NamedTuple):
    """A Wiki-Balance Natural document (a Wikipedia passage)."""

    doc_id: str
    title: str
    text: str


class WikiBalanceQueryInfo(NamedTuple):
    """A Wiki-Balance query's controversial topic and its domains (the 15 Wiki-Balance domains;
    empty when the topic is not in the categories table)."""

    query_id: str
    topic_id: str
    topic: str
    domains: tuple


class PerspectrumDoc(NamedTuple):
    """A PERSPECTRUM perspective sentence; its stance depends on the claim (see ``labels_iter()``)."""

    doc_id: str
    text: str
    source: str


class PerspectrumQueryInfo(NamedTuple):
    """A PERSPECTRUM claim's split (train/dev/test), source site and topics (may be empty)."""

    query_id: str
    split: str
    source: str
    topics: tuple


class ProconDoc(NamedTuple):
    """A ProCon.org argument: headline, description, its debate and side (``pro``/``con``)."""

    doc_id: str
    title: str
    text: str
    query_id: str
    group: str


class ProconQueryInfo(NamedTuple):
    """A ProCon.org debate's page."""

    query_id: str
    url: str


class GrepBiasIRDoc(NamedTuple):
    """A Grep-BiasIR document variant; ``group`` is its gender wording (female, male, neutral, both)."""

    doc_id: str
    title: str
    text: str
    query_id: str
    group: str
    category: str


class GrepBiasIRQueryInfo(NamedTuple):
    """A Grep-BiasIR query's category and the annotators' expected stereotype."""

    query_id: str
    category: str
    expected_stereotype: str
