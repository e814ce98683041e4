"""The int8 backends of :class:`~pairmeasures.compute.embed.Embedder` on the CPU: torch's dynamic quantisation of the
linear layers (``torch-int8``) and ONNX Runtime on a dynamically quantised ONNX export (``onnx-int8``). torch, onnx
and onnxruntime are imported inside the functions."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

__all__ = ["EmbeddingModelError", "quantize_torch", "require_onnx", "text_transformer", "export_onnx", "run_on_onnx"]


class EmbeddingModelError(RuntimeError):
    """A model could not be loaded, or a backend cannot run it; the message says what to do (re-exported by
    :mod:`pairmeasures.compute.embed`)."""


def quantize_torch(model):
    """``model`` with its linear layers quantised to int8 by torch (dynamic quantisation, CPU kernels)."""
    import torch

    quantization = getattr(getattr(torch, "ao", None), "quantization", None)
    if quantization is None or not hasattr(quantization, "quantize_dynamic"):
        raise EmbeddingModelError(f"backend 'torch-int8' needs torch.ao.quantization.quantize_dynamic, which torch "
                                  f"{torch.__version__} lacks: use backend='torch' or 'onnx-int8'")
    with warnings.catch_warnings():  # torch announces the API's deprecation: nothing the user can act on
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        return quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def require_onnx() -> None:
    """Fail early, with the command that installs them, when the onnx-int8 backend's packages are missing."""
    try:
        import onnx  # noqa: F401  (onnxruntime's quantiser needs it)
        import onnxruntime.quantization  # noqa: F401
    except ImportError as exc:
        raise EmbeddingModelError(
            f"backend 'onnx-int8' needs onnxruntime and onnx ({exc}): pip install 'pairmeasures[onnx]' "
            "(or pip install onnxruntime onnx), or use backend='torch'") from None


def text_transformer(model):
    """The first module of ``model`` when it is a text transformer whose token embeddings can come from ONNX."""
    first = model[0]
    config = getattr(first, "modality_config", {}).get("text", {})
    if not hasattr(first, "model") or config.get("method_output_name") != "last_hidden_state":
        raise EmbeddingModelError(f"backend 'onnx-int8' supports models that start with a text transformer "
                                  f"module; this one starts with {type(first).__name__}: use backend='torch'")
    return first


def export_onnx(model, path: Path) -> None:
    """Export the transformer of ``model`` (token ids in, token embeddings out) to ONNX at ``path``."""
    import torch

    transformer = text_transformer(model)
    example = model.preprocess(["an example sentence to trace", "another one"])
    names = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in example]

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, network):
            super().__init__()
            self.network = network

        def forward(self, *inputs):
            return self.network(**dict(zip(names, inputs)), return_dict=True).last_hidden_state

    dynamic = {name: {0: "batch", 1: "tokens"} for name in [*names, "token_embeddings"]}
    with warnings.catch_warnings(), torch.no_grad():  # tracer notes on the export: nothing the user can act on
        warnings.simplefilter("ignore")
        torch.onnx.export(TokenEmbeddings(transformer.model), tuple(example[n] for n in names), str(path),
                          input_names=names, output_names=["token_embeddings"], dynamic_axes=dynamic,
                          opset_version=17, dynamo=False)


def run_on_onnx(model, path: Path) -> None:
    """Make ``model`` compute its token embeddings with ONNX Runtime from ``path``; tokenising and pooling stay."""
    import onnxruntime
    import torch

    transformer = text_transformer(model)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]

    def forward(features: dict, **kwargs) -> dict:
        inputs = {name: features[name].numpy().astype(np.int64, copy=False) for name in names}
        features[transformer.module_output_name] = torch.from_numpy(session.run(None, inputs)[0])
        return features

    transformer.forward = forward
