"""Floor 1: the formulas, as pure NumPy functions on arrays in rank order (no I/O, no pandas).

Each measure family has the same module name here as in :mod:`pairmeasures.measures` (``duo``, ``group``,
``texfair``, ``awrf``, ``fairr``, ``rab``, ``exposure``, ``parity``, ``prf``); helpers several families share have
neutral names (``_lists``, ``group_combos``).
"""

from ._lists import list_index, list_lengths, prefix_sum, segment_sum
from .awrf import awrf, awrf_lists, distribution_distance, position_weights
from .axes import Axes, anchored_axis, difference_of_means, fit_axes, project, remove_directions
from .duo import (
    DEGENERATE_DUO,
    DuoResult,
    KnownBounds,
    duo,
    duo_batches,
    duo_bounds,
    duo_depth_weights,
    duo_lists,
    duo_raw,
)
from .fairr import (
    DEGENERATE_NFAIRR,
    NFaiRRResult,
    fairr,
    fairr_lists,
    ifairr,
    neutrality,
    nfairr,
    nfairr_lists,
    position_discount,
    ranker_agnostic_fairr,
)
from .group import (
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
from .polarization import QueryAccuracy, consistent_accuracy, held_out_correct, per_query_accuracy, perspective_accuracy
from .prf import PRFResult, prf_lists
from .rab import arab, bias_labels, gender_magnitudes, ibbr_magnitudes, rab, rank_bias_lists
from .rbo import rbo
from .reorder import duo_extreme_order, duo_extreme_orders, duogreedy_lists, duogreedy_order, most_signed_order
from .texfair import TermFairnessResult, max_ted, rbdf, ted, term_exposure, texfair, texfair_lists

__all__ = [
    "PRFResult",
    "prf_lists",
    "Axes",
    "duo_extreme_order",
    "duo_extreme_orders",
    "duogreedy_lists",
    "duogreedy_order",
    "most_signed_order",
    "DEGENERATE_NFAIRR",
    "NFaiRRResult",
    "TermFairnessResult",
    "arab",
    "awrf",
    "awrf_lists",
    "bias_labels",
    "distribution_distance",
    "fairr",
    "fairr_lists",
    "gender_magnitudes",
    "ibbr_magnitudes",
    "ifairr",
    "max_ted",
    "neutrality",
    "nfairr",
    "nfairr_lists",
    "position_discount",
    "position_weights",
    "rab",
    "rank_bias_lists",
    "ranker_agnostic_fairr",
    "rbdf",
    "rbo",
    "ted",
    "term_exposure",
    "texfair",
    "texfair_lists",
    "DEGENERATE_DUO",
    "DEGENERATE_GROUP_FAIRNESS",
    "DuoResult",
    "QueryAccuracy",
    "GROUP_MEASURES",
    "GroupFairnessResult",
    "anchored_axis",
    "consistent_accuracy",
    "difference_of_means",
    "duo",
    "duo_bounds",
    "duo_depth_weights",
    "duo_lists",
    "KnownBounds",
    "duo_batches",
    "duo_raw",
    "fit_axes",
    "group_fairness_bounds",
    "group_fairness_lists",
    "group_fairness_raw",
    "list_index",
    "list_lengths",
    "per_query_accuracy",
    "held_out_correct",
    "perspective_accuracy",
    "prefix_disparity",
    "project",
    "remove_directions",
    "rkl",
    "rnd",
    "rrd",
    "prefix_sum",
    "segment_sum",
]
