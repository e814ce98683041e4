"""Axes, projection, debiasing and polarization accuracy: pure NumPy, checked against definitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pairmeasures.math import (
    anchored_axis,
    consistent_accuracy,
    difference_of_means,
    fit_axes,
    per_query_accuracy,
    perspective_accuracy,
    project,
    remove_directions,
)


def two_clusters(rng, n=10, d=6, gap=4.0):
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    labels = np.array(["p1"] * (n // 2) + ["p2"] * (n - n // 2))
    x = rng.normal(scale=0.3, size=(n, d)) + np.where(labels == "p1", gap / 2, -gap / 2)[:, None] * direction
    return x, labels, direction


def test_first_axis_finds_the_separating_direction_and_orients_to_perspective_one():
    rng = np.random.default_rng(0)
    x, labels, direction = two_clusters(rng)
    axes = fit_axes(x, 1, labels=labels, positive="p1")
    assert abs(axes.components[0] @ direction) > 0.95
    scores = project(x, axes)[:, 0]
    assert (scores[labels == "p1"] > 0).all() and (scores[labels == "p2"] < 0).all()
    flipped = fit_axes(x, 1, labels=labels, positive="p2")
    assert np.allclose(project(x, flipped)[:, 0], -scores)


def test_orientation_without_labels_is_deterministic_and_sign_invariant():
    rng = np.random.default_rng(1)
    x, _, _ = two_clusters(rng)
    a, b = fit_axes(x, 2), fit_axes(-x, 2)
    assert np.allclose(np.abs(a.components), np.abs(b.components))
    for axes in (a, b):
        big = np.argmax(np.abs(axes.components), axis=1)
        assert (axes.components[np.arange(2), big] > 0).all()
    assert np.allclose(fit_axes(x, 2).components, a.components)


def test_axes_are_orthonormal_principal_components():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(30, 5)) * np.array([5.0, 3.0, 1.0, 0.5, 0.1])
    axes = fit_axes(x, 3)
    assert np.allclose(axes.components @ axes.components.T, np.eye(3))
    assert np.all(np.diff(axes.explained) <= 0)
    covariance = np.cov((x - x.mean(0)).T, bias=True)
    assert np.allclose(np.sort(np.linalg.eigvalsh(covariance))[::-1][:3], axes.explained)


@pytest.mark.parametrize("n,components", [(1, 1), (2, 2), (3, 3)])
def test_too_few_fit_documents(n, components):
    with pytest.raises(ValueError, match=f"need at least {components + 1} fit documents"):
        fit_axes(np.ones((n, 4)), components)


@pytest.mark.parametrize("jitter", [0.0, 1e-17])
def test_fit_documents_without_variance_fit_no_axis(jitter):
    rng = np.random.default_rng(2)
    same = np.tile(rng.normal(size=5), (6, 1)) + jitter * rng.normal(size=(6, 5))  # identical up to float noise
    with pytest.raises(ValueError, match="fit documents do not vary.*no axis can be fitted"):
        fit_axes(same, 1)
    line = np.outer(np.arange(6.0), rng.normal(size=5))  # one direction of variance, not two
    assert fit_axes(line, 1).explained[0] > 0
    with pytest.raises(ValueError, match="do not vary along 2 direction"):
        fit_axes(line, 2)


def test_bad_embeddings():
    with pytest.raises(ValueError, match="NaN or infinite"):
        fit_axes(np.array([[0.0, np.nan], [1.0, 2.0], [3.0, 1.0]]))
    with pytest.raises(ValueError, match="2-D"):
        project(np.ones(3), fit_axes(np.eye(3)))


def test_remove_directions_projects_out_the_span():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20, 8))
    b = rng.normal(size=(2, 8))
    cleaned = remove_directions(x, b)
    assert np.allclose(cleaned @ b.T, 0, atol=1e-10)
    assert np.allclose(remove_directions(cleaned, b), cleaned)
    single = remove_directions(x, b[0])
    unit_b = b[0] / np.linalg.norm(b[0])
    assert np.allclose(single, x - np.outer(x @ unit_b, unit_b))  # the A.5 formula


def test_removing_a_spurious_style_direction_recovers_the_stance_axis():
    rng = np.random.default_rng(4)
    d = 10
    stance, style = np.eye(d)[0], np.eye(d)[1]
    labels = np.array(["p1"] * 6 + ["p2"] * 6)
    side = np.where(labels == "p1", 1.0, -1.0)
    x = rng.normal(scale=0.1, size=(12, d)) + np.outer(side, stance) + 3 * np.outer(side * rng.choice([1, -1], 12), style)
    distractors = rng.normal(scale=0.1, size=(8, d)) + 3 * np.outer(np.repeat([1.0, -1.0], 4), style)
    b = difference_of_means(distractors, np.repeat(["p1", "p2"], 4), "p1", "p2")
    before = abs(fit_axes(x, 1).components[0] @ stance)
    after = abs(fit_axes(remove_directions(x, b), 1).components[0] @ stance)
    assert before < 0.5 < 0.95 < after


def test_difference_of_means_needs_both_groups():
    with pytest.raises(ValueError, match="both groups"):
        difference_of_means(np.eye(3), ["a", "a", "a"], "a", "b")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.floats(-2, 2, allow_nan=False)), min_size=1, max_size=40))
def test_accuracies_match_their_definitions(rows):
    query = np.array([r[0] for r in rows])
    positive = np.array([r[1] for r in rows])
    scores = np.array([r[2] for r in rows])
    per_perspective = consistent = 0
    each = per_query_accuracy(scores, query, positive)
    assert each.query.tolist() == np.unique(query).tolist()
    for i, q in enumerate(np.unique(query)):
        right = 0
        for p in (True, False):
            s = scores[(query == q) & (positive == p)]
            right += max((s > 0).sum(), (s < 0).sum())
        s, y = scores[query == q], np.where(positive[query == q], 1, -1)
        agree = max((np.sign(s) == y).sum(), (np.sign(s) == -y).sum())
        assert each.documents[i] == s.size
        assert (each.accuracy[i], each.consistent_accuracy[i]) == pytest.approx((right / s.size, agree / s.size))
        per_perspective, consistent = per_perspective + right, consistent + agree
    assert perspective_accuracy(scores, query, positive) == pytest.approx(per_perspective / len(rows))
    assert consistent_accuracy(scores, query, positive) == pytest.approx(consistent / len(rows))
    assert consistent_accuracy(scores, query, positive) <= perspective_accuracy(scores, query, positive) + 1e-12


def test_accuracies_of_nothing_are_nan():
    assert np.isnan(perspective_accuracy([], [], [])) and np.isnan(consistent_accuracy([], [], []))
    assert per_query_accuracy([], [], []).query.size == 0


def test_a_degenerate_axis_games_only_the_reference_measure():
    query = np.zeros(10, dtype=int)
    positive = np.array([True] * 5 + [False] * 5)
    all_positive = np.linspace(0.1, 1.0, 10)
    assert perspective_accuracy(all_positive, query, positive) == 1.0
    assert consistent_accuracy(all_positive, query, positive) == 0.5


def test_anchored_axis_points_to_the_first_statement_within_the_documents_variation():
    rng = np.random.default_rng(5)
    x, labels, direction = two_clusters(rng, n=12, d=6)
    noise = rng.normal(size=6)
    anchor = 2 * direction + noise  # a noisy anchor that mostly agrees with the stance direction
    raw = anchored_axis(x, anchor)
    assert np.allclose(raw.components[0], anchor / np.linalg.norm(anchor))
    assert np.allclose(raw.mean, x.mean(axis=0))
    within = anchored_axis(x, anchor, within=1)
    assert abs(within.components[0] @ direction) > 0.95 > abs(raw.components[0] @ direction)
    scores = project(x, within)[:, 0]
    assert (scores[labels == "p1"] > 0).all()  # oriented towards the anchor, so towards p1
    flipped = anchored_axis(x, -anchor, within=1)
    assert np.allclose(project(x, flipped)[:, 0], -scores)


def test_anchored_axis_rejects_useless_directions():
    x = np.random.default_rng(6).normal(size=(5, 3))
    with pytest.raises(ValueError, match="non-zero vector of dimension 3"):
        anchored_axis(x, np.zeros(3))
    with pytest.raises(ValueError, match="non-zero vector of dimension 3"):
        anchored_axis(x, np.ones(4))
    flat = np.column_stack([np.arange(5.0), np.zeros(5), np.zeros(5)])
    with pytest.raises(ValueError, match="orthogonal"):
        anchored_axis(flat, np.array([0.0, 1.0, 0.0]), within=1)
