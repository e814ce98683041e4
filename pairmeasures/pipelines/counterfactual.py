r"""CRBO: how much a system's rankings change when the collection's genders are swapped (TExFAIR paper, §5).

A system ranks the original collection and its counterfactual (every gendered term swapped by
:class:`~pairmeasures.sideinfo.counterfactual.CounterfactualSubstitution`); per query,
:math:`\mathrm{CRBO} = \mathrm{RBO_{ext}}(\text{original top-}k, \text{counterfactual top-}k;\ p)`
(:func:`pairmeasures.math.rbo`, p = 0.9 by default). 1 means the system is indifferent to gender,
lower values mean its rankings depend on it.

- :class:`CounterfactualText` rewrites text columns inside a PyTerrier pipeline (for re-rankers
  that read ``text``);
- :func:`counterfactual_corpus` rewrites a corpus iterator (to index it);
- :func:`crbo` compares two result frames;
- :func:`counterfactual_rbo` does it all: builds the system on both corpora, runs the topics and
  compares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Optional, Sequence, Union

import numpy as np
import pandas as pd
import pyterrier as pt

from ..io.frames import ir_names
from ..math import rbo
from ..measures.ranked import build_ranked_lists
from ..sideinfo.counterfactual import CounterfactualSubstitution

__all__ = ["CounterfactualText", "counterfactual_corpus", "crbo", "counterfactual_rbo", "CRBOResult"]


class CounterfactualText(pt.Transformer):
    """Swaps gendered terms in the given text columns of every row (a pipeline stage)."""

    def __init__(self, substitution: Optional[CounterfactualSubstitution] = None, columns: Sequence[str] = ("text",)):
        self.substitution = substitution or CounterfactualSubstitution()
        self.columns = tuple(columns)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        missing = [c for c in self.columns if c not in inp.columns]
        if missing:
            raise ValueError(f"CounterfactualText: the input has no {missing} column(s); found {list(inp.columns)}")
        out = inp.copy()
        for column in self.columns:
            out[column] = [self.substitution(t) if isinstance(t, str) else t for t in out[column]]
        return out


def counterfactual_corpus(documents: Iterable[dict], substitution: Optional[CounterfactualSubstitution] = None,
                          fields: Sequence[str] = ("text",)) -> Iterator[dict]:
    """The documents (dicts, e.g. ``{'docno', 'text'}``) with the given fields rewritten."""
    substitution = substitution or CounterfactualSubstitution()
    for document in documents:
        swapped = dict(document)
        for field in fields:
            if isinstance(swapped.get(field), str):
                swapped[field] = substitution(swapped[field])
        yield swapped


def _ranked(results: pd.DataFrame, depth: int, name: str) -> dict:
    """Top ``depth`` docnos per query, in the order every measure sees (trec_eval's tie-breaking)."""
    frame = ir_names(results)
    missing = [c for c in ("query_id", "doc_id", "score") if c not in frame.columns]
    if missing:
        raise ValueError(f"the {name} results need columns qid, docno, score; missing {missing}")
    query_ids = pd.unique(frame["query_id"].astype(str))
    lists = build_ranked_lists(frame, query_ids, depth, [])
    return {q: lists.doc_ids[lists.offsets[i]:lists.offsets[i + 1]].tolist() for i, q in enumerate(lists.query_ids)}


def crbo(original: pd.DataFrame, counterfactual: pd.DataFrame, p: float = 0.9, depth: int = 10) -> pd.DataFrame:
    """Per query, RBO_ext of the top ``depth`` of two result frames (``qid``, ``docno``, ``score``).

    A query answered in one frame only compares against an empty list (RBO 0).
    """
    if depth < 1:
        raise ValueError(f"depth must be a positive integer; got {depth}")
    first, second = _ranked(original, depth, "original"), _ranked(counterfactual, depth, "counterfactual")
    qids = sorted(set(first) | set(second))
    return pd.DataFrame({"qid": qids, "crbo": [rbo(first.get(q, []), second.get(q, []), p) for q in qids]})


@dataclass(frozen=True)
class CRBOResult:
    """Per-query CRBO (``per_query``: qid, crbo) and both result frames."""

    per_query: pd.DataFrame
    original: pd.DataFrame
    counterfactual: pd.DataFrame

    @property
    def mean(self) -> float:
        return float(np.mean(self.per_query["crbo"])) if len(self.per_query) else float("nan")


def counterfactual_rbo(build: Callable[[Iterable[dict]], pt.Transformer],
                       corpus: Union[Sequence[dict], Callable[[], Iterable[dict]]], topics: pd.DataFrame,
                       p: float = 0.9, depth: int = 10, substitution: Optional[CounterfactualSubstitution] = None,
                       fields: Sequence[str] = ("text",)) -> CRBOResult:
    """CRBO of the system ``build(documents)`` returns, built once on ``corpus`` and once on its counterfactual.

    ``build`` receives an iterator of document dicts and returns a retrieval pipeline (e.g. it
    indexes them with PISA and returns BM25 >> a re-ranker); ``corpus`` is a list of dicts or a
    function returning a fresh iterator. Queries are run unchanged on both.
    """
    def documents() -> Iterable[dict]:
        return corpus() if callable(corpus) else iter(corpus)

    original = build(documents())(topics)
    swapped = build(counterfactual_corpus(documents(), substitution, fields))(topics)
    return CRBOResult(per_query=crbo(original, swapped, p, depth), original=original, counterfactual=swapped)
