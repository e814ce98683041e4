"""The ``beir:``, ``corpus:`` and ``pca:DIR`` resources as they were built before they read folders through the on-disk
document store: from ``read_beir``, which holds the whole corpus in memory (the code of those schemes at commit
d01ce85, here as ``wholebeir:``, ``wholecorpus:`` and ``wholepca:``). ``benchmarks/scale.py`` evaluates the same
measures through both to compare their memory and time in the same run, and checks the values agree."""

from __future__ import annotations

__all__ = ["register_whole_corpus_schemes"]


def _labels(argument: str):
    import pandas as pd

    from pairmeasures.io.beir import existing, read_beir
    from pairmeasures.sideinfo.tsv import KeyedValues

    data = read_beir(argument)
    source = KeyedValues()
    source.provides = "labels"  # type: ignore[attr-defined]
    source.path = existing(data.path, "labels.tsv")  # type: ignore[attr-defined]
    source.values = data.labels["group"].to_numpy(dtype=object)
    source.by_query = True
    source._index = pd.MultiIndex.from_arrays([data.labels[c].to_numpy(dtype=object) for c in ("query_id", "doc_id")])
    return source


def _text(argument: str):
    from pairmeasures.io.beir import check_text_field, read_beir
    from pairmeasures.sideinfo import resource_options
    from pairmeasures.sideinfo.text import TextSource

    location, options = resource_options(argument, ("fields",), "corpus")
    fields = check_text_field(options.get("fields", "text"))
    data = read_beir(location)
    return TextSource(f"corpus:{argument}", texts={d: data.document_text(d, fields) for d in data.corpus})


def _polarity(argument: str):
    from pairmeasures.compute.embed import Embedder
    from pairmeasures.io.beir import check_text_field, read_beir
    from pairmeasures.sideinfo import resource_options
    from pairmeasures.sideinfo.polarity import FitSet, PolarityModel, PolaritySource
    from pairmeasures.sideinfo.text import TextSource

    location, options = resource_options(argument, ("model", "components", "text", "positive"), "pca")
    text = check_text_field(options.get("text", "text").replace(" ", "+"))
    data = read_beir(location)
    fit = FitSet.from_frame(data.fit_frame(text), positive=options.get("positive"))
    documents = TextSource(str(data.path), texts={d: data.document_text(d, text) for d in data.corpus})
    model = PolarityModel(fit=fit, embedder=Embedder(options.get("model") or None),
                          components=int(options.get("components", 1)))
    return PolaritySource(model, documents)


def register_whole_corpus_schemes() -> None:
    """Register ``wholebeir:``, ``wholecorpus:`` and ``wholepca:`` (the earlier ``beir:``, ``corpus:``, ``pca:DIR``)."""
    from pairmeasures.sideinfo import register_scheme

    register_scheme("wholebeir", _labels)
    register_scheme("wholecorpus", _text)
    register_scheme("wholepca", _polarity)
