r"""Perspective axes in an embedding space (PAIR §4 and Appendix A.5), as pure NumPy.

Polarity scores are coordinates of document embeddings on the principal axes of a *fit set*
of documents argued from both sides of one query:

.. math::  p_j = (x_j - \bar x_{\mathrm{fit}}) \cdot a_c, \qquad c = 1 \ldots m,

with :math:`a_1, \ldots, a_m` the leading principal components of the centred fit embeddings.
A spurious direction :math:`b` (e.g. the style difference between distractor documents that
imitate each perspective, :math:`b = \mu_{D_1} - \mu_{D_2}`) is projected away first:
:math:`\tilde x_j = x_j - \langle x_j, \hat b \rangle \hat b`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

__all__ = ["Axes", "fit_axes", "anchored_axis", "project", "remove_directions", "difference_of_means"]


@dataclass(frozen=True)
class Axes:
    """``m`` unit axes (rows of ``components``, shape ``(m, d)``) through ``mean``; ``explained`` is
    the fit set's variance along each axis."""

    mean: np.ndarray
    components: np.ndarray
    explained: np.ndarray


#: Singular values below this fraction of the fit embeddings' norm count as rounding noise.
VARIANCE_RTOL = 1e-9


def _matrix(x, name: str) -> np.ndarray:
    array = np.asarray(x, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (documents, dimensions); got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def fit_axes(fit, components: int = 1, labels: Optional[Sequence] = None, positive=None) -> Axes:
    """Leading principal axes of the fit embeddings ``fit`` (rows = documents).

    Orientation is deterministic: with ``labels`` (one per fit document) each axis points
    towards the documents labelled ``positive`` (their mean score is positive); otherwise each
    axis's largest-magnitude coordinate is made positive. Needs more fit documents than axes, and
    fit documents that vary along every axis (else a ValueError: the axis would be arbitrary).
    """
    x = _matrix(fit, "fit embeddings")
    if isinstance(components, bool) or not isinstance(components, (int, np.integer)) or components < 1:
        raise ValueError(f"components must be a positive integer, got {components!r}")
    if x.shape[0] <= components:
        raise ValueError(f"{components} axis(es) need at least {components + 1} fit documents; got {x.shape[0]}")
    mean = x.mean(axis=0)
    _, singular, vt = np.linalg.svd(x - mean, full_matrices=False)
    noise = VARIANCE_RTOL * max(float(np.linalg.norm(x)), np.finfo(np.float64).tiny)
    varying = int(np.sum(singular > noise))
    if varying < components:
        raise ValueError(f"the fit documents do not vary along {components} direction(s) (they vary along "
                         f"{varying}): no axis can be fitted; use fit documents that differ, or fewer components")
    axes = vt[:components].copy()
    explained = singular[:components] ** 2 / x.shape[0]
    if labels is not None:
        label_array = np.asarray(labels, dtype=object)
        if label_array.shape[0] != x.shape[0]:
            raise ValueError(f"labels has {label_array.shape[0]} entries for {x.shape[0]} fit documents")
        chosen = label_array == positive
        if chosen.any() and (~chosen).any():
            scores = (x - mean) @ axes.T
            flip = scores[chosen].mean(axis=0) < scores[~chosen].mean(axis=0)
            axes[flip] *= -1
            return Axes(mean=mean, components=axes, explained=explained)
    largest = np.argmax(np.abs(axes), axis=1)
    axes *= np.sign(axes[np.arange(axes.shape[0]), largest])[:, None]
    return Axes(mean=mean, components=axes, explained=explained)


def anchored_axis(fit, direction, within: int = 0) -> Axes:
    r"""One axis along ``direction`` (e.g. the embedding of a perspective-1 statement minus that of
    a perspective-2 statement) through the mean of the fit embeddings.

    With ``within`` > 0 the direction is first projected onto the span of the fit set's
    ``within`` leading principal axes, :math:`a = V_k V_k^\top d`: the anchor says which way
    the perspectives lie, the fit documents say along which directions they actually vary. The
    axis points towards the first statement.
    """
    x = _matrix(fit, "fit embeddings")
    d = np.asarray(direction, dtype=np.float64).ravel()
    if d.shape[0] != x.shape[1] or not np.isfinite(d).all() or not d.any():
        raise ValueError(f"the anchor direction must be a finite, non-zero vector of dimension {x.shape[1]}")
    if within:
        principal = fit_axes(x, min(within, x.shape[0] - 1)).components
        d = principal.T @ (principal @ d)
    norm = np.linalg.norm(d)
    if norm == 0:
        raise ValueError("the anchor direction is orthogonal to every principal axis of the fit documents")
    mean = x.mean(axis=0)
    axis = (d / norm)[None, :]
    return Axes(mean=mean, components=axis, explained=np.array([np.mean(((x - mean) @ axis[0]) ** 2)]))


def project(x, axes: Axes) -> np.ndarray:
    """Polarity scores of embeddings ``x`` on ``axes``, shape ``(documents, m)``. Each row's score is summed on its
    own, in one order (``einsum``, not a BLAS product whose blocking depends on the number of rows), so a document
    scores the very same number whichever other documents are projected with it (an audit scores only the rows its
    measures read: docs/polarity.md)."""
    return np.einsum("ij,kj->ik", _matrix(x, "embeddings") - axes.mean, axes.components)


def remove_directions(x, directions) -> np.ndarray:
    r"""``x`` with its components along the span of ``directions`` (rows) removed: :math:`x - \langle x, \hat b\rangle \hat b`."""
    x = _matrix(x, "embeddings")
    b = np.atleast_2d(np.asarray(directions, dtype=np.float64))
    q, r = np.linalg.qr(b.T)
    keep = np.abs(np.diag(r)) > 1e-12 * max(1.0, np.abs(r).max(initial=0.0))
    q = q[:, keep]
    return x - (x @ q) @ q.T


def difference_of_means(x, groups: Sequence, first, second) -> np.ndarray:
    r"""Unit direction :math:`(\mu_{\mathrm{first}} - \mu_{\mathrm{second}}) / \lVert \cdot \rVert` between two groups of rows of ``x``."""
    x = _matrix(x, "embeddings")
    owners = np.asarray(groups, dtype=object)
    a, b = owners == first, owners == second
    if not a.any() or not b.any():
        raise ValueError(f"difference of means needs documents of both groups {first!r} and {second!r}")
    direction = x[a].mean(axis=0) - x[b].mean(axis=0)
    norm = np.linalg.norm(direction)
    if norm == 0:
        raise ValueError("the two groups have the same mean embedding: no direction to remove")
    return direction / norm
