"""Batches of texts tokenized for a sentence-transformers model's forward pass, by the Rust tokenizer where it can.

:func:`batch_tokenizer` gives, for a loaded model, a function from a batch of texts to the model's input features as
int64 NumPy arrays, each batch padded to its longest text and cut at the model's ``max_seq_length`` as
sentence-transformers' own ``tokenize`` pads and cuts. Where the model's tokenizer is a fast one (a Rust
``tokenizers.Tokenizer`` behind it), a copy of that Rust tokenizer, with padding and truncation set on it, encodes the
whole batch in ``encode_batch`` (which releases the interpreter lock and runs on its own threads), and the id, type
and mask arrays are built from the equal-length encodings in one ``np.asarray`` each: no Python per token. Elsewhere
(no fast tokenizer, lower-casing done by sentence-transformers, a prompt, a model that is not one plain text
transformer) the model's own ``tokenize`` is called and its tensors turned into arrays: slower, the same features.

torch is not imported here; :func:`as_tensors` turns a batch's arrays into tensors for the forward pass.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

__all__ = ["batch_tokenizer", "rust_tokenizer", "as_tensors", "BUILT_ATTRIBUTE"]

#: The attribute of a loaded model that keeps :func:`batch_tokenizer`'s answer (built once per model: copying the Rust
#: tokenizer serialises its vocabulary).
BUILT_ATTRIBUTE = "_pairmeasures_batch_tokenizer"
#: The features the Rust path builds, by the name the model's tokenizer gives them.
_FEATURES = ("input_ids", "token_type_ids", "attention_mask")


def rust_tokenizer(model):
    """A copy of ``model``'s Rust tokenizer with padding (to a batch's longest) and truncation (at the model's
    ``max_seq_length``, longest first) set on it, or ``None`` where the model has none or its features would not be
    what sentence-transformers' ``tokenize`` builds (see the module docstring)."""
    try:
        first = model[0]
        tokenizer = first.tokenizer
    except (TypeError, IndexError, AttributeError, KeyError):
        return None
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not getattr(tokenizer, "is_fast", False):
        return None
    if getattr(first, "do_lower_case", False) or getattr(model, "default_prompt_name", None) \
            or getattr(model, "prompts", None) and any(getattr(model, "prompts", {}).values()):
        return None
    modalities = getattr(first, "modality_config", None)
    if modalities is not None and set(modalities) != {"text"}:
        return None
    names = tuple(getattr(tokenizer, "model_input_names", ()))
    if not names or any(name not in _FEATURES for name in names):
        return None
    if getattr(tokenizer, "padding_side", "right") != "right" or tokenizer.pad_token_id is None:
        return None
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(backend.to_str())
    limit = model.max_seq_length or getattr(tokenizer, "model_max_length", None)
    if limit is None or limit > 1_000_000:  # no limit known: the model's own path decides
        return None
    copy.enable_truncation(max_length=int(limit), strategy="longest_first", direction="right")
    copy.enable_padding(direction="right", pad_id=int(tokenizer.pad_token_id), pad_type_id=int(tokenizer.pad_token_type_id),
                        pad_token=str(tokenizer.pad_token))
    return copy, names


def _rust_batch(tokenizer, names: tuple, texts: Sequence[str]) -> dict:
    encodings = tokenizer.encode_batch(list(texts), add_special_tokens=True)
    fields = {"input_ids": "ids", "token_type_ids": "type_ids", "attention_mask": "attention_mask"}
    return {name: np.asarray([getattr(e, fields[name]) for e in encodings], dtype=np.int64).reshape(len(texts), -1)
            for name in names}


def _model_batch(model, texts: Sequence[str]) -> dict:
    prepare = getattr(model, "preprocess", None) or model.tokenize  # sentence-transformers 6 renamed tokenize
    features = prepare(list(texts))
    return {name: value.numpy() if hasattr(value, "numpy") else value for name, value in features.items()}


def batch_tokenizer(model, fast: bool = True) -> tuple[Callable[[Sequence[str]], dict], str]:
    """``(tokenize, how)``: ``tokenize(texts)`` is the model's input features of a batch as NumPy arrays (other
    entries, such as sentence-transformers' ``modality``, as the model gives them); ``how`` is ``"rust"`` or
    ``"model"`` (the fallback; also with ``fast=False``). Built once per loaded model."""
    if not fast:
        return (lambda texts: _model_batch(model, texts)), "model"
    built = getattr(model, BUILT_ATTRIBUTE, None)
    if built is None:
        built = _build(model)
        try:
            setattr(model, BUILT_ATTRIBUTE, built)
        except AttributeError:  # a model that takes no attributes: built again next time
            pass
    return built


def _build(model) -> tuple:
    found: Optional[tuple] = rust_tokenizer(model)
    if found is None:
        return (lambda texts: _model_batch(model, texts)), "model"
    tokenizer, names = found
    probe = _model_batch(model, ["a"])
    arrays = {name: value for name, value in probe.items() if isinstance(value, np.ndarray)}
    if set(arrays) != set(names) or any(not np.array_equal(arrays[name], value)
                                        for name, value in _rust_batch(tokenizer, names, ["a"]).items()):
        return (lambda texts: _model_batch(model, texts)), "model"
    extra = {name: value for name, value in probe.items() if name not in arrays}
    return (lambda texts: {**_rust_batch(tokenizer, names, texts), **extra}), "rust"


def as_tensors(features: dict) -> dict:
    """A batch's features with its arrays as torch tensors (sharing their memory)."""
    import torch

    return {name: torch.from_numpy(value) if isinstance(value, np.ndarray) else value
            for name, value in features.items()}
