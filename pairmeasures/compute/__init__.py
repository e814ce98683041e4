"""Floor 3: the embedding and compute engine.

:class:`~pairmeasures.compute.embed.Embedder` turns texts into vectors through one backend (torch with the model's
Rust tokenizer, ONNX, int8; :mod:`~pairmeasures.compute.encoding`, :mod:`~pairmeasures.compute.batchtokens`,
:mod:`~pairmeasures.compute.int8`), keeping them in the on-disk cache (:mod:`~pairmeasures.compute.cache`) keyed by
model and text. Where the work runs is the compute engine's concern (:mod:`~pairmeasures.compute.engines`): in this
process, or on a Ray pool (:mod:`~pairmeasures.compute.raypool`, its session :mod:`~pairmeasures.compute.raysession`
and watchdog :mod:`~pairmeasures.compute.raywatch`, its shards :mod:`~pairmeasures.compute.shards` and the actors' progress
:mod:`~pairmeasures.compute.shardprogress`). A model folder's weights are checked before they load
(:mod:`~pairmeasures.compute.modelfiles`). Nothing here
knows what the vectors are for (polarity, dense retrieval): that is :mod:`pairmeasures.sideinfo` and
:mod:`pairmeasures.pipelines`, above. It imports :mod:`pairmeasures.io` and the atomic-write and
ownership modules only; torch, Ray and
sentence-transformers load on first use.
"""
