r"""IBBR: in-batch balancing regularisation (Li et al., "Debiasing Neural Retrieval via In-batch Balancing
Regularization"), as a sentence-transformers loss.

A batch holds B data pairs :math:`s_i = (q_i, p_{i,1}^+, p_{i,2}^-, \dots, p_{i,K+1}^-)`: a query, its one clicked
passage and K non-clicked ones, scored by the dot product :math:`R(p) = z_q^\top z_p` of a bi-encoder. The group
of a pair is the label :math:`d(p_{i,1}^+) \in \{-1, 0, 1\}` of its clicked passage (1 male-biased, -1
female-biased, 0 neutral: IBBR Sec. 2.2); neutral pairs take part in the ranking loss only.

- :func:`normed_prf` is Eq. 3 with one clicked passage (:math:`n_1 = 1`),
- :func:`pairwise_difference_loss` is Eq. 4 (:math:`L_P^{Fair}`), :func:`t_statistic_loss` the squared
  T-statistic (:math:`L_T^{Fair}`),
- :func:`ranking_loss` is Sec. 3.2.1's softmax cross-entropy,
- :class:`IBBRLoss` is the total :math:`L = L^{rank} + \lambda L^{fair}` for ``SentenceTransformerTrainer``,
- :func:`ibbr_dataset` builds the ``datasets.Dataset`` it trains on.

A batch where either group has fewer than ``min_group_size`` (default 2) pairs is *degenerate*: its fairness
term is exactly 0 (no gradient through it, never NaN) and :attr:`IBBRLoss.degenerate_batches` counts it.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import torch
from torch import Tensor, nn

__all__ = ["IBBRLoss", "ibbr_dataset", "normed_prf", "pairwise_difference_loss", "t_statistic_loss",
           "ranking_loss", "GROUP_LABELS"]

MALE, FEMALE = 1, -1
#: Names accepted for the group labels d(p) besides the integers -1, 0, 1.
GROUP_LABELS = {"male": MALE, "m": MALE, "female": FEMALE, "f": FEMALE, "neutral": 0, "none": 0}
FAIRNESS_LOSSES = ("pd", "ts")


def normed_prf(scores: Tensor) -> Tensor:
    r"""nPRF of each data pair (IBBR Eq. 3), shape ``(B,)``, from scores ``(B, 1 + K)`` (column 0: the clicked).

    With one clicked passage :math:`p^+` and the K non-clicked :math:`p_k^-`,
    :math:`\mathrm{nPRF}(s_i) = \{\frac{1}{K} \sum_k |R(p^+)|^2\, \mathbb{1}[R(p^+) \ge R(p_k^-)]\}^{1/2}
    = |R(p^+)| \sqrt{\#\{k : R(p^+) \ge R(p_k^-)\} / K}`. The indicator is the paper's hard one (ties count):
    the gradient flows through :math:`|R(p^+)|^2`, as in the paper; the second form has a finite gradient
    everywhere (0 where nothing is outscored).
    """
    if scores.ndim != 2 or scores.shape[1] < 2:
        raise ValueError(f"scores must be (batch, 1 + K) with K >= 1 negatives, got shape {tuple(scores.shape)}")
    positive = scores[:, 0]
    outscored = (positive.unsqueeze(1) >= scores[:, 1:]).to(scores.dtype).mean(dim=1)
    return positive.abs() * outscored.sqrt()


def _group_masks(groups: Tensor, size: int) -> tuple[Tensor, Tensor]:
    groups = torch.as_tensor(groups).reshape(-1)
    if groups.shape[0] != size:
        raise ValueError(f"{groups.shape[0]} group labels for a batch of {size} data pairs")
    if not bool(torch.isin(groups, groups.new_tensor([-1, 0, 1])).all()):
        raise ValueError(f"group labels must be -1 (female), 0 (neutral) or 1 (male), got {groups.unique().tolist()}")
    return groups == MALE, groups == FEMALE


def pairwise_difference_loss(nprf: Tensor, groups: Tensor, min_group_size: int = 2) -> Optional[Tensor]:
    r"""IBBR Eq. 4: :math:`\frac{1}{n_m n_f} \sum_{c \in P^m} \sum_{d \in P^f} (\mathrm{nPRF}(s_c) - \mathrm{nPRF}(s_d))^2`.

    Equals :math:`\mathrm{var}_m + \mathrm{var}_f + (\hat\mu_m - \hat\mu_f)^2` (biased variances): 0 only when
    every pair of both groups has the same nPRF. ``None`` for a degenerate batch (a group under ``min_group_size``).
    """
    male, female = _group_masks(groups, nprf.shape[0])
    n_male, n_female = int(male.sum()), int(female.sum())
    if min(n_male, n_female) < max(min_group_size, 1):
        return None
    weights = (male.unsqueeze(1) & female.unsqueeze(0)).to(nprf.dtype)
    differences = nprf.unsqueeze(1) - nprf.unsqueeze(0)
    return (weights * differences.square()).sum() / (n_male * n_female)


def t_statistic_loss(nprf: Tensor, groups: Tensor, min_group_size: int = 2, eps: float = 1e-6) -> Optional[Tensor]:
    r"""IBBR's T-statistics loss: the squared Welch statistic of the two groups' nPRF,
    :math:`(\hat\mu_m - \hat\mu_f)^2 / (\widehat{\mathrm{var}}_m / n_m + \widehat{\mathrm{var}}_f / n_f + \epsilon)`,
    with the paper's biased variances (:math:`1/n`).

    The paper's text defines it as "the square of T-statistics" (and appeals to its :math:`\chi^2` law); its
    printed formula squares the mean difference once more inside the braces, which we read as a typo. ``eps``
    keeps two groups of constant nPRF finite. ``None`` for a degenerate batch (a group under ``min_group_size``).
    """
    male, female = _group_masks(groups, nprf.shape[0])
    n_male, n_female = int(male.sum()), int(female.sum())
    if min(n_male, n_female) < max(min_group_size, 1):
        return None
    spread = []
    for mask, n in ((male, n_male), (female, n_female)):
        weights = mask.to(nprf.dtype)
        mean = (weights * nprf).sum() / n
        variance = (weights * (nprf - mean).square()).sum() / n
        spread.append((mean, variance / n))
    (mean_male, se2_male), (mean_female, se2_female) = spread
    return (mean_male - mean_female).square() / (se2_male + se2_female + eps)


def ranking_loss(scores: Tensor, scale: float = 1.0) -> Tensor:
    r"""Sec. 3.2.1: mean over the batch of :math:`-\log \frac{e^{R(p^+)}}{e^{R(p^+)} + \sum_k e^{R(p_k^-)}}`
    over each pair's own passages (scores ``(B, 1 + K)``, column 0 the clicked), logits multiplied by ``scale``."""
    targets = torch.zeros(scores.shape[0], dtype=torch.long, device=scores.device)
    return nn.functional.cross_entropy(scores * scale, targets)


class IBBRLoss(nn.Module):
    r"""The IBBR total loss :math:`L = L^{rank} + \lambda L^{fair}` as a sentence-transformers loss.

    The dataset's columns are (query, positive, negative_1, ..., negative_K, label) with ``label`` the group
    d(p) of the positive: build it with :func:`ibbr_dataset`. Scores are dot products of the model's sentence
    embeddings. ``fairness`` is ``"pd"`` (Eq. 4) or ``"ts"`` (T-statistics). ``lambda_`` is a number, or
    ``"auto"``: a learned weight by uncertainty weighting (Kendall et al., 2018), our reading of the paper's
    trainable :math:`\lambda_{fair}` — a log-variance :math:`s` (initially ``log_variance``), :math:`\lambda =
    e^{-s}`, and the fairness part :math:`e^{-s} L^{fair} + s`, so that :math:`\lambda` does not simply fall to 0;
    :math:`s` is a parameter of this module, which the trainer's optimizer includes. ``in_batch_negatives``: the
    ranking loss also takes every other pair's passages as negatives (default False: each pair's own K, as in
    the paper); nPRF always uses the pair's own K. ``scale`` multiplies the ranking logits only (1 = the paper;
    about 20 suits normalised embeddings such as all-MiniLM-L6-v2's). Returns a dict ``{"ranking", "fairness"}``
    that the trainer sums and logs; a degenerate batch has fairness 0 and is counted in
    :attr:`degenerate_batches`.
    """

    def __init__(self, model: nn.Module, fairness: str = "ts", lambda_: Union[float, str] = 1.0, *,
                 min_group_size: int = 2, in_batch_negatives: bool = False, scale: float = 1.0,
                 eps: float = 1e-6, log_variance: float = 0.0) -> None:
        super().__init__()
        if fairness not in FAIRNESS_LOSSES:
            raise ValueError(f"fairness must be one of {FAIRNESS_LOSSES}, got {fairness!r}")
        self.model = model
        self.fairness = fairness
        self.auto = isinstance(lambda_, str)
        if self.auto and str(lambda_).lower() != "auto":
            raise ValueError(f"lambda_ must be a non-negative number or 'auto', got {lambda_!r}")
        if not self.auto and not float(lambda_) >= 0:
            raise ValueError(f"lambda_ must be a non-negative number or 'auto', got {lambda_!r}")
        self.lambda_ = None if self.auto else float(lambda_)
        self.log_variance = nn.Parameter(torch.tensor(float(log_variance))) if self.auto else None
        self.min_group_size = int(min_group_size)
        self.in_batch_negatives = bool(in_batch_negatives)
        self.scale = float(scale)
        self.eps = float(eps)
        self.batches = 0
        self.degenerate_batches = 0

    @property
    def weight(self) -> float:
        """The current :math:`\\lambda` (fixed, or :math:`e^{-s}` under "auto")."""
        if self.log_variance is not None:
            return float(torch.exp(-self.log_variance.detach()))
        return float(self.lambda_ or 0.0)

    def fairness_loss(self, nprf: Tensor, groups: Tensor) -> Optional[Tensor]:
        """:math:`L^{fair}` of the batch, ``None`` when it is degenerate."""
        if self.fairness == "pd":
            return pairwise_difference_loss(nprf, groups, self.min_group_size)
        return t_statistic_loss(nprf, groups, self.min_group_size, self.eps)

    def terms(self, scores: Tensor, groups: Tensor, ranking_scores: Optional[Tensor] = None) -> dict[str, Tensor]:
        """The loss terms from scores ``(B, 1 + K)`` (column 0 the clicked) and group labels ``(B,)``;
        ``ranking_scores`` (column 0 the clicked), when given, replace ``scores`` in the ranking loss."""
        self.batches += 1
        rank = ranking_loss(scores if ranking_scores is None else ranking_scores, self.scale)
        fair = self.fairness_loss(normed_prf(scores), groups.to(scores.device))
        if fair is None:
            self.degenerate_batches += 1
            return {"ranking": rank, "fairness": torch.zeros((), dtype=rank.dtype, device=rank.device)}
        if self.log_variance is not None:
            return {"ranking": rank, "fairness": torch.exp(-self.log_variance) * fair + self.log_variance}
        return {"ranking": rank, "fairness": (self.lambda_ or 0.0) * fair}

    def forward(self, sentence_features: Iterable[Mapping[str, Tensor]], labels: Tensor) -> dict[str, Tensor]:
        embeddings = [self.model(features)["sentence_embedding"] for features in sentence_features]
        if len(embeddings) < 3:
            raise ValueError("IBBRLoss needs the columns (query, positive, negative_1, ..., label): "
                             "build the dataset with pairmeasures.train.ibbr_dataset")
        query = embeddings[0]
        passages = torch.stack(embeddings[1:], dim=1)
        scores = torch.einsum("bd,bkd->bk", query, passages)
        ranking_scores = None
        if self.in_batch_negatives:
            batch, width = passages.shape[:2]
            every = query @ passages.reshape(batch * width, -1).T
            own = torch.arange(batch, device=every.device) * width
            ranking_scores = every.gather(1, torch.cat([own.unsqueeze(1), _others(own, batch * width)], dim=1))
        return self.terms(scores, labels, ranking_scores)

    def get_config_dict(self) -> dict[str, Any]:
        return {"fairness": self.fairness, "lambda_": "auto" if self.auto else self.lambda_,
                "min_group_size": self.min_group_size, "in_batch_negatives": self.in_batch_negatives,
                "scale": self.scale, "eps": self.eps}

    @property
    def citation(self) -> str:
        return ("@inproceedings{li2022ibbr, title={Debiasing Neural Retrieval via In-batch Balancing "
                "Regularization}, author={Li, Yuantong and Wei, Xiaokai and Wang, Zijian and Wang, Shen and "
                "Bhatia, Parminder and Ma, Xiaofei and Arnold, Andrew}, booktitle={GeBNLP}, year={2022}}")


def _others(own: Tensor, total: int) -> Tensor:
    """For each row, the column indices ``0..total-1`` other than ``own[row]``, in order: ``(B, total - 1)``."""
    columns = torch.arange(total, device=own.device).expand(own.shape[0], total)
    return columns[columns != own.unsqueeze(1)].reshape(own.shape[0], total - 1)


def _group_label(value: Any, row: int) -> int:
    if isinstance(value, str):
        label = GROUP_LABELS.get(value.strip().lower())
        if label is None:
            raise ValueError(f"row {row}: group {value!r} is not one of {sorted(GROUP_LABELS)} or -1, 0, 1")
        return label
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if number not in (-1.0, 0.0, 1.0):
        raise ValueError(f"row {row}: group {value!r} must be -1 (female), 0 (neutral) or 1 (male)")
    return int(number)


def ibbr_dataset(queries: Sequence[str], positives: Sequence[str], negatives: Sequence[Sequence[str]],
                 groups: Sequence[Any]):
    """A ``datasets.Dataset`` for :class:`IBBRLoss`: columns query, positive, negative_1..negative_K, label.

    One row per data pair: the query text, its clicked passage, its K non-clicked passages (the same K for
    every row) and the group d(p) of the clicked passage (-1/0/1 or "female"/"neutral"/"male").
    """
    from datasets import Dataset

    n = len(queries)
    for name, column in (("positives", positives), ("negatives", negatives), ("groups", groups)):
        if len(column) != n:
            raise ValueError(f"{n} queries but {len(column)} {name}: give one per query")
    if n == 0:
        raise ValueError("no data pairs: give at least one query with its positive and negatives")
    k = len(negatives[0])
    for row, (query, positive, passages) in enumerate(zip(queries, positives, negatives)):
        if isinstance(passages, str) or len(passages) != k:
            raise ValueError(f"row {row}: {1 if isinstance(passages, str) else len(passages)} negatives, but "
                             f"row 0 has {k}: every row needs the same number of negatives (a list of texts)")
        for what, text in (("query", query), ("positive", positive), *((f"negative {j + 1}", t)
                                                                       for j, t in enumerate(passages))):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"row {row}: the {what} must be a non-empty text, got {text!r}")
    if k == 0:
        raise ValueError("every row needs at least one negative passage")
    columns: dict[str, list] = {"query": list(queries), "positive": list(positives)}
    for j in range(k):
        columns[f"negative_{j + 1}"] = [passages[j] for passages in negatives]
    columns["label"] = [_group_label(value, row) for row, value in enumerate(groups)]
    return Dataset.from_dict(columns)
