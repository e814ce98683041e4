"""IBBR losses (pairmeasures.train.ibbr): Eq. 3 nPRF, Eq. 4 PD, the T-statistics loss, the total with fixed and
learned λ, degenerate batches, and real SentenceTransformerTrainer steps with the offline all-MiniLM-L6-v2."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")

from pairmeasures.train import ibbr  # noqa: E402

torch.set_num_threads(1)


def test_importing_the_train_package_does_not_import_torch():
    code = "import sys, pairmeasures, pairmeasures.train; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def eq3_by_hand(row):
    """IBBR Eq. 3 written out literally, for one clicked passage (column 0)."""
    positive, negatives = row[0], row[1:]
    total = sum(positive**2 * (1.0 if positive >= negative else 0.0) for negative in negatives)
    return math.sqrt(total / len(negatives))


def test_normed_prf_hand_worked_and_ties_count():
    scores = torch.tensor([[2.0, 1.0, 3.0, 2.0],      # outscores 1 and the tie 2, not 3: sqrt(4 * 2/3)
                           [-1.0, -2.0, 0.0, 5.0],    # outscores -2 only: sqrt(1 * 1/3)
                           [1.0, 4.0, 5.0, 6.0]])     # outscores nothing: 0
    assert ibbr.normed_prf(scores).tolist() == pytest.approx([math.sqrt(8 / 3), math.sqrt(1 / 3), 0.0])


def test_normed_prf_matches_eq3_on_random_batches():
    generator = torch.Generator().manual_seed(3)
    for k in (1, 2, 5):
        scores = torch.randint(-3, 4, (50, 1 + k), generator=generator).double()
        expected = [eq3_by_hand(row) for row in scores.tolist()]
        assert ibbr.normed_prf(scores).tolist() == pytest.approx(expected)


def test_normed_prf_gradient_flows_through_the_positive_score_only():
    scores = torch.tensor([[2.0, 1.0, 3.0, 2.0], [0.0, 0.0, 0.0, 0.0], [-1.0, 1.0, 2.0, 3.0]], requires_grad=True)
    ibbr.normed_prf(scores).sum().backward()
    # d nPRF / d R+ = sign(R+) sqrt(fraction outscored); 0 at R+ = 0 and where nothing is outscored
    assert scores.grad.tolist() == [[pytest.approx(math.sqrt(2 / 3)), 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]


def test_pairwise_difference_hand_worked():
    nprf = torch.tensor([1.0, 2.0, 3.0, 5.0, 7.0])
    groups = torch.tensor([1, 1, -1, -1, 0])  # the neutral pair takes no part
    # (1-3)² + (1-5)² + (2-3)² + (2-5)² = 4 + 16 + 1 + 9 = 30, over n_m n_f = 4
    assert float(ibbr.pairwise_difference_loss(nprf, groups)) == pytest.approx(7.5)


def test_t_statistic_hand_worked():
    nprf = torch.tensor([1.0, 2.0, 3.0, 5.0, 7.0])
    groups = torch.tensor([1, 1, -1, -1, 0])
    # μm = 1.5, var_m = 0.25; μf = 4, var_f = 1 (biased); t² = 6.25 / (0.25/2 + 1/2) = 10
    assert float(ibbr.t_statistic_loss(nprf, groups, eps=0.0)) == pytest.approx(10.0)


def test_zero_for_balanced_groups_and_growing_with_disparity():
    base = torch.tensor([0.5, 0.8, 1.1, 0.5, 0.8, 1.1])
    groups = torch.tensor([1, 1, 1, -1, -1, -1])
    identical = torch.full((6,), 0.7)
    assert float(ibbr.pairwise_difference_loss(identical, groups)) == 0.0
    assert float(ibbr.t_statistic_loss(identical, groups)) == 0.0
    assert float(ibbr.t_statistic_loss(base, groups)) == 0.0  # equal means: t = 0 whatever the spread
    previous = {"pd": -1.0, "ts": -1.0}
    for shift in (0.0, 0.1, 0.3, 0.6, 1.0):
        shifted = base + shift * (groups == -1)
        values = {"pd": float(ibbr.pairwise_difference_loss(shifted, groups)),
                  "ts": float(ibbr.t_statistic_loss(shifted, groups))}
        for name, value in values.items():
            assert value > previous[name]
        previous = values


@pytest.mark.parametrize("groups", [[1, 1, 1, 1], [1, 1, 1, -1], [-1, 0, 0, 0], [0, 0, 0, 0], [1, -1, 0, 0]])
@pytest.mark.parametrize("fairness", ["pd", "ts"])
@pytest.mark.parametrize("lambda_", [1.0, "auto"])
def test_degenerate_batches_have_zero_fairness_and_finite_gradients(groups, fairness, lambda_):
    loss = ibbr.IBBRLoss(nn_identity(), fairness=fairness, lambda_=lambda_)
    assert getattr(ibbr, f"{'pairwise_difference' if fairness == 'pd' else 't_statistic'}_loss")(
        torch.ones(4), torch.tensor(groups)) is None
    scores = torch.randn(4, 3, requires_grad=True)
    terms = loss.terms(scores, torch.tensor(groups))
    assert float(terms["fairness"]) == 0.0
    torch.stack(list(terms.values())).sum().backward()
    assert torch.isfinite(scores.grad).all() and scores.grad.abs().sum() > 0
    assert (loss.batches, loss.degenerate_batches) == (1, 1)


@pytest.mark.parametrize("fairness", ["pd", "ts"])
def test_gradients_finite_on_ties_zeros_and_constant_groups(fairness):
    loss = ibbr.IBBRLoss(nn_identity(), fairness=fairness, lambda_=5.0)
    groups = torch.tensor([1, 1, -1, -1])
    for scores in (torch.zeros(4, 4), torch.ones(4, 4), torch.tensor([[0.0, 1, 2], [0, 1, 2], [3, 1, 2], [3, 1, 2]]),
                   torch.randn(4, 4) * 1e-20):
        scores = scores.clone().requires_grad_(True)
        terms = loss.terms(scores, groups)
        total = terms["ranking"] + terms["fairness"]
        total.backward()
        assert torch.isfinite(total) and torch.isfinite(scores.grad).all()
    assert loss.degenerate_batches == 0


def test_total_loss_with_fixed_lambda_by_hand():
    scores = torch.tensor([[2.0, 1.0, 3.0], [1.0, 0.0, 0.5], [0.5, 1.0, 2.0], [3.0, 1.0, 1.0]])
    groups = torch.tensor([1, 1, -1, -1])
    loss = ibbr.IBBRLoss(nn_identity(), fairness="pd", lambda_=0.5)
    terms = loss.terms(scores, groups)
    rank = sum(-math.log(math.exp(r[0]) / sum(math.exp(v) for v in r)) for r in scores.tolist()) / 4
    nprf = [eq3_by_hand(r) for r in scores.tolist()]
    pd = sum((nprf[c] - nprf[d]) ** 2 for c, d in itertools.product((0, 1), (2, 3))) / 4
    assert float(terms["ranking"]) == pytest.approx(rank)
    assert float(terms["fairness"]) == pytest.approx(0.5 * pd)


def test_auto_lambda_is_uncertainty_weighting():
    scores = torch.tensor([[2.0, 1.0, 3.0], [1.0, 0.0, 0.5], [0.5, 1.0, 2.0], [3.0, 1.0, 1.0]])
    groups = torch.tensor([1, 1, -1, -1])
    loss = ibbr.IBBRLoss(nn_identity(), fairness="ts", lambda_="auto", log_variance=0.3)
    assert [name for name, _ in loss.named_parameters()] == ["log_variance"]
    fair = float(ibbr.t_statistic_loss(ibbr.normed_prf(scores), groups))
    terms = loss.terms(scores, groups)
    assert float(terms["fairness"].detach()) == pytest.approx(math.exp(-0.3) * fair + 0.3)
    terms["fairness"].backward()
    assert float(loss.log_variance.grad) == pytest.approx(1 - math.exp(-0.3) * fair)
    assert loss.weight == pytest.approx(math.exp(-0.3))


def test_in_batch_negatives_rank_against_every_passage_in_the_batch():
    embed = nn_identity()
    query, positive, negative = torch.eye(3), torch.tensor([[1.0, 0, 0], [0, 2, 0], [0, 0, 3]]), torch.ones(3, 3)
    features = [{"x": query}, {"x": positive}, {"x": negative}]
    labels = torch.tensor([1, -1, 0])
    own = ibbr.IBBRLoss(embed, lambda_=0.0)(features, labels)
    every = ibbr.IBBRLoss(embed, lambda_=0.0, in_batch_negatives=True)(features, labels)
    passages = torch.stack([positive, negative], dim=1).reshape(6, 3)
    logits = query @ passages.T
    expected = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 2, 4]))
    assert float(every["ranking"]) == pytest.approx(float(expected))
    assert float(own["ranking"]) == pytest.approx(float(ibbr.ranking_loss(torch.tensor(
        [[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]]))))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="fairness must be one of"):
        ibbr.IBBRLoss(nn_identity(), fairness="kl")
    with pytest.raises(ValueError, match="lambda_"):
        ibbr.IBBRLoss(nn_identity(), lambda_="sometimes")
    with pytest.raises(ValueError, match="group labels must be"):
        ibbr.pairwise_difference_loss(torch.ones(2), torch.tensor([2, 1]))
    with pytest.raises(ValueError, match="K >= 1"):
        ibbr.normed_prf(torch.ones(3, 1))
    with pytest.raises(ValueError, match="columns"):
        ibbr.IBBRLoss(nn_identity())([{"x": torch.ones(2, 2)}] * 2, torch.tensor([1, -1]))


def test_dataset_helper_columns_and_errors():
    dataset = ibbr.ibbr_dataset(["q1", "q2"], ["p1", "p2"], [["n11", "n12"], ["n21", "n22"]], ["male", -1])
    assert dataset.column_names == ["query", "positive", "negative_1", "negative_2", "label"]
    assert dataset["label"] == [1, -1] and dataset["negative_2"] == ["n12", "n22"]
    with pytest.raises(ValueError, match="row 1: 1 negatives, but row 0 has 2"):
        ibbr.ibbr_dataset(["q1", "q2"], ["p1", "p2"], [["a", "b"], ["c"]], [1, 1])
    with pytest.raises(ValueError, match="row 1: group 'boy'"):
        ibbr.ibbr_dataset(["q1", "q2"], ["p1", "p2"], [["a"], ["c"]], [1, "boy"])
    with pytest.raises(ValueError, match="row 0: the positive must be a non-empty text"):
        ibbr.ibbr_dataset(["q1"], [""], [["a"]], [1])
    with pytest.raises(ValueError, match="2 queries but 1 groups"):
        ibbr.ibbr_dataset(["q1", "q2"], ["p1", "p2"], [["a"], ["c"]], [1])


def test_reproducible_under_a_seed():
    def train(seed):
        torch.manual_seed(seed)
        encoder = Linear(4)
        loss = ibbr.IBBRLoss(encoder, fairness="ts", lambda_="auto")
        optimizer = torch.optim.SGD(loss.parameters(), lr=0.1)
        data = torch.randn(8, 4, 4)
        labels = torch.tensor([1, -1] * 4)
        history = []
        for _ in range(5):
            terms = loss([{"x": data[:, j]} for j in range(4)], labels)
            total = terms["ranking"] + terms["fairness"]
            optimizer.zero_grad()
            total.backward()
            optimizer.step()
            history.append(float(total.detach()))
        return history, encoder.layer.weight.detach().clone()

    (first, weights), (again, weights_again), (other, _) = train(7), train(7), train(8)
    assert first == again and torch.equal(weights, weights_again)
    assert first != other


def test_sentence_transformer_trainer_steps(tmp_path):
    pytest.importorskip("accelerate", reason="transformers' Trainer needs accelerate (the train extra)")
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )

    from pairmeasures.compute.embed import default_model_path

    queries = [f"who is a good {job}" for job in ("nurse", "engineer", "teacher", "pilot", "doctor", "chef")] * 2
    positives = [f"{'He' if i % 2 else 'She'} is a {q.split()[-1]} with years of practice." for i, q in
                 enumerate(queries)]
    negatives = [[f"The weather in town {i} was mild.", f"A recipe number {i} with rice."] for i in range(12)]
    groups = [1 if i % 2 else -1 for i in range(12)]
    dataset = ibbr.ibbr_dataset(queries, positives, negatives, groups)

    def train(seed):
        model = SentenceTransformer(str(default_model_path()), device="cpu")
        loss = ibbr.IBBRLoss(model, fairness="ts", lambda_="auto", scale=20.0)
        args = SentenceTransformerTrainingArguments(
            output_dir=str(tmp_path / f"out{seed}"), per_device_train_batch_size=6, max_steps=2, seed=seed,
            learning_rate=1e-4, logging_steps=1, save_strategy="no", report_to=[], use_cpu=True,
            disable_tqdm=True, dataloader_num_workers=0)
        before = [p.detach().clone() for p in model.parameters()]
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss)
        result = trainer.train()
        changed = any(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters()))
        logged = [entry for entry in trainer.state.log_history if "fairness" in entry]
        return result.training_loss, changed, loss, logged, model

    training_loss, changed, loss, logged, model = train(0)
    assert math.isfinite(training_loss) and changed
    assert loss.batches == 2 and loss.degenerate_batches == 0
    assert logged and all(math.isfinite(entry["fairness"]) for entry in logged)
    assert float(loss.log_variance.detach()) != 0.0  # the trainer's optimizer moved the learned λ
    model.save(str(tmp_path / "model"))
    assert (tmp_path / "model" / "config.json").exists()
    assert train(0)[0] == training_loss  # seeded: the same run again


class Linear(torch.nn.Module):
    """A stand-in encoder: features {"x": (B, d)} → {"sentence_embedding": linear map}."""

    def __init__(self, dimension):
        super().__init__()
        self.layer = torch.nn.Linear(dimension, dimension)

    def forward(self, features):
        return {"sentence_embedding": self.layer(features["x"])}


class Identity(torch.nn.Module):
    def forward(self, features):
        return {"sentence_embedding": features["x"]}


def nn_identity():
    return Identity()
