"""The embedded demo data: ``debates/``, a PERSPECTRUM slice in BEIR layout (the audit's default
dataset), and a toy corpus of arguments on three controversial questions with three toy systems."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ToyData", "debates_dir", "load_toy"]


@dataclass(frozen=True)
class ToyData:
    """Topics, qrels, documents and one result frame per toy system, in PyTerrier's column names.

    Result frames carry the side columns the bias measures read: ``polarity`` (hand-set, + = pro)
    and ``group`` (``pro``/``con``), plus the document ``text``.
    """

    topics: pd.DataFrame
    qrels: pd.DataFrame
    documents: pd.DataFrame
    runs: dict


def debates_dir() -> Path:
    """The embedded debates corpus: a BEIR-layout folder (40 PERSPECTRUM claims, 612 perspectives,
    stance labels; CC BY-SA 4.0, see its README.md), usable wherever a dataset folder is."""
    folder = resources.files(__package__).joinpath("debates")
    if not isinstance(folder, Path) or not (folder / "corpus.jsonl").is_file():
        raise FileNotFoundError(f"the demo corpus is not an unpacked folder of the installed package ({folder}); "
                                "install pairmeasures from a wheel or source tree, not a zip archive")
    return folder


def load_toy() -> ToyData:
    """Load the toy corpus shipped with the package."""
    import pandas as pd

    data = json.loads(resources.files(__package__).joinpath("toy.json").read_text(encoding="utf-8"))
    documents = pd.DataFrame(data["documents"])
    by_docno = documents.set_index("docno")
    runs = {}
    for name, rankings in data["systems"].items():
        rows = []
        for qid, docnos in rankings.items():
            for rank, docno in enumerate(docnos):
                doc = by_docno.loc[docno]
                rows.append({"qid": qid, "docno": docno, "score": float(len(docnos) - rank), "rank": rank,
                             "text": doc["text"], "polarity": doc["polarity"], "group": doc["group"]})
        runs[name] = pd.DataFrame(rows)
    return ToyData(topics=pd.DataFrame(data["queries"]), qrels=pd.DataFrame(data["qrels"]),
                   documents=documents, runs=runs)
