"""Layer 1: the formulas, as pure NumPy functions on arrays in rank order (no I/O, no pandas)."""

from ._lists import list_index, list_lengths, segment_sum
from .axes import Axes, anchored_axis, difference_of_means, fit_axes, project, remove_directions
from .duo import DEGENERATE_DUO, DuoResult, duo, duo_bounds, duo_depth_weights, duo_lists, duo_raw
from .group_fairness import (
    DEGENERATE_GROUP_FAIRNESS,
    GROUP_MEASURES,
    GroupFairnessResult,
    group_fairness_bounds,
    group_fairness_lists,
    group_fairness_raw,
    prefix_disparity,
    rkl,
    rnd,
    rrd,
)
from .polarization import consistent_accuracy, perspective_accuracy

__all__ = [
    "Axes",
    "DEGENERATE_DUO",
    "DEGENERATE_GROUP_FAIRNESS",
    "DuoResult",
    "GROUP_MEASURES",
    "GroupFairnessResult",
    "anchored_axis",
    "consistent_accuracy",
    "difference_of_means",
    "duo",
    "duo_bounds",
    "duo_depth_weights",
    "duo_lists",
    "duo_raw",
    "fit_axes",
    "group_fairness_bounds",
    "group_fairness_lists",
    "group_fairness_raw",
    "list_index",
    "list_lengths",
    "perspective_accuracy",
    "prefix_disparity",
    "project",
    "remove_directions",
    "rkl",
    "rnd",
    "rrd",
    "segment_sum",
]
