"""DUO comes with the evidence of its axis: held-out accuracies of the per-query polarity axes (``pm.axis_evidence``),
recomputed by hand, and in ``pairmeasures audit``: leaderboard column, leaderboard.json, manifest, report, warning."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_audit import audit, write_run

import pairmeasures as pm
from pairmeasures.analysis.polarity import AxisWarning, held_out_folds
from pairmeasures.audit.axes import AXIS_COLUMN

STANCES = {  # query -> (text, [(label, document)]): arguments for and against; q4 and q5 cannot be checked
    "q1": ("Nuclear power should be expanded", [
        ("pro", "Nuclear plants emit almost no carbon dioxide while running."),
        ("pro", "Reactors give steady baseload power that wind cannot match."),
        ("pro", "Modern reactor designs are among the safest energy sources."),
        ("pro", "Nuclear energy needs very little land per megawatt."),
        ("con", "Nuclear waste stays dangerous for thousands of years."),
        ("con", "Reactor accidents like Chernobyl poison whole regions."),
        ("con", "New nuclear plants cost billions and run years late."),
        ("con", "Uranium mining harms workers and nearby communities.")]),
    "q2": ("Zoos should be abolished", [
        ("pro", "Animals in zoos suffer from stress in small enclosures."),
        ("pro", "Captivity denies wild animals their natural behaviour."),
        ("pro", "Zoos exist mainly to make money from ticket sales."),
        ("pro", "Elephants in zoos die younger than in the wild."),
        ("con", "Zoos breed endangered species that would otherwise vanish."),
        ("con", "Children learn to love wildlife by seeing animals up close."),
        ("con", "Zoo research helps vets treat animals in the wild."),
        ("con", "Accredited zoos fund conservation projects worldwide.")]),
    "q3": ("Homework should be banned", [
        ("pro", "Homework steals time children need for play and rest."),
        ("pro", "Too much homework causes stress and sleep loss."),
        ("pro", "Homework widens gaps between rich and poor families."),
        ("con", "Homework helps pupils practise what they learned."),
        ("con", "Regular homework builds discipline and study habits."),
        ("con", "Homework lets parents see what their children learn.")]),
    "q4": ("Cities should ban cars", [("pro", "Cars fill city air with fumes."), ("pro", "Streets without cars are safer.")]),
    "q5": ("Cats make the best pets", [("pro", "Cats are lovely pets."), ("pro", "Cats keep mice away."),
                                      ("con", "Cats scratch furniture.")]),
}
SEA = ["The waves crashed on the rocky shore.", "Fishermen sailed out across the calm sea.",
       "Seagulls circled above the salty harbour.", "The tide rose over the sandy beach."]
HILLS = ["Snow covered the highest mountain peaks.", "Climbers roped up below the rocky summit.",
         "A glacier carved the steep alpine valley.", "Goats grazed on the high mountain pasture."]


def write_folder(root: Path, data: dict, labels: bool = True) -> Path:
    """A BEIR folder: every document judged relevant to its query, labelled with its perspective unless not ``labels``."""
    (root / "qrels").mkdir(parents=True)
    docs = [(q, f"{q}d{i}", g, t) for q, (_, items) in data.items() for i, (g, t) in enumerate(items)]
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n"
                                               for _, d, _, t in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, (t, _) in data.items()))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n"
                                                                                     for q, d, _, _ in docs))
    if labels:
        (root / "labels.tsv").write_text("query-id\tcorpus-id\tgroup\n" + "".join(f"{q}\t{d}\t{g}\n"
                                                                                 for q, d, g, _ in docs))
    return root


def noise() -> dict:
    """Labels that are noise: ten documents per query drawn from the texts above, five of each label at random. (Seed 2;
    of seeds 0 to 11, 11 give intervals that reach 0.5: a 95% interval misses chance now and then, as seed 1 does.)"""
    texts = [t for _, items in STANCES.values() for _, t in items] + SEA + HILLS
    rng = np.random.default_rng(2)
    data = {}
    for n in range(6):
        chosen = rng.choice(len(texts), 10, replace=False)
        labels = rng.permutation(["pro"] * 5 + ["con"] * 5)
        data[f"n{n}"] = (f"Noise {n}", [(str(g), texts[i]) for g, i in zip(labels, chosen)])
    return data


def separated() -> dict:
    """Perspectives that the first axis separates: one side writes about the sea, the other about mountains."""
    return {f"t{n}": (f"Topic {n}", [("pro", f"{t} (part {n})") for t in SEA] + [("con", f"{t} (part {n})") for t in HILLS])
            for n in range(4)}


def run_of(data: dict, path: Path) -> Path:
    """A run ranking each query's documents in the order they are listed."""
    return write_run(path, {q: [f"{q}d{i}" for i in range(len(items))] for q, (_, items) in data.items()})


# ---- the folds and the math -------------------------------------------------------------------------------------


def test_folds_are_stratified_balanced_seeded_and_per_query():
    labels = ["pro"] * 7 + ["con"] * 5
    folds = held_out_folds(labels, 5, seed=3, query="q1")
    assert sorted(np.bincount(folds)) == [2, 2, 2, 3, 3]  # sizes differ by at most one
    for label, count in (("pro", 7), ("con", 5)):
        per_fold = np.bincount(folds[np.array(labels) == label], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1 and per_fold.sum() == count
    assert (held_out_folds(labels, 5, seed=3, query="q1") == folds).all()  # deterministic
    assert any((held_out_folds(labels, 5, seed=s, query="q1") != folds).any() for s in range(4, 8))
    assert any((held_out_folds(labels, 5, seed=3, query=q) != folds).any() for q in ("q2", "q3", "q4"))
    small = held_out_folds(["a", "b", "a", "b"], 5, seed=0, query="x")  # fewer documents than folds: one each
    assert sorted(small) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="folds must be an integer of at least 2, got 1"):
        held_out_folds(labels, 1)
    with pytest.raises(ValueError, match="seed must be a non-negative integer, got -1"):
        held_out_folds(labels, 5, seed=-1)


def test_held_out_correct_chooses_its_signs_on_the_fit_documents():
    fit_scores = [1.0, 2.0, 3.0, 0.5, -2.0, -1.0, 1.0, 0.0]
    fit_unit = ["u", "u", "u", "u", "v", "v", "v", "v"]
    fit_positive = [True, True, False, False, True, True, False, False]
    # u: both perspectives lie above 0 (sides +, +); 2 fit documents agree, 2 disagree: the label orientation stays
    # v: pro below (side -), con above (+; its 0 is on neither side); 0 agree, 3 disagree: one sign flip
    scores = [0.5, -0.5, 0.5, -0.5, 2.0, -2.0, 0.0, -1.0]
    unit = ["u", "u", "u", "u", "v", "v", "v", "v"]
    positive = [True, True, False, False, True, False, True, True]
    per, consistent = pm.math.held_out_correct(fit_scores, fit_unit, fit_positive, scores, unit, positive)
    assert per.tolist() == [True, False, True, False, False, False, False, True]
    assert consistent.tolist() == [True, False, False, True, False, False, False, True]
    with pytest.raises(ValueError, match="held-out unit 'w' has no fit documents"):
        pm.math.held_out_correct([1.0], ["u"], [True], [1.0], ["w"], [True])
    with pytest.raises(ValueError, match="must be finite"):
        pm.math.held_out_correct([np.nan], ["u"], [True], [1.0], ["u"], [True])


def test_held_out_correct_against_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(50):
        fit_unit = rng.integers(0, 4, 30)
        unit = rng.integers(0, 4, 12)
        fit_unit[:4] = [0, 1, 2, 3]
        fit_scores = np.round(rng.normal(size=30), 1)
        scores = np.round(rng.normal(size=12), 1)
        fit_positive, positive = rng.random(30) < 0.5, rng.random(12) < 0.5
        per, consistent = pm.math.held_out_correct(fit_scores, fit_unit, fit_positive, scores, unit, positive)
        for i in range(12):
            mine = fit_unit == unit[i]
            same = mine & (fit_positive == positive[i])
            above, below = (fit_scores[same] > 0).sum(), (fit_scores[same] < 0).sum()
            side = 1 if above > below else -1 if below > above else (1 if positive[i] else -1)
            expected = np.where(fit_positive[mine], 1, -1)
            agree = (np.sign(fit_scores[mine]) == expected).sum()
            disagree = (np.sign(fit_scores[mine]) == -expected).sum()
            flip = 1 if agree >= disagree else -1
            assert per[i] == (np.sign(scores[i]) == side)
            assert consistent[i] == (np.sign(scores[i]) == flip * (1 if positive[i] else -1))


# ---- pm.axis_evidence against a recomputation by hand -----------------------------------------------------------


def test_evidence_equals_a_brute_force_recomputation(tmp_path, embedder):
    folder = write_folder(tmp_path / "stances", STANCES)
    found = pm.axis_evidence(folder, embedder=embedder, resamples=500, seed=4, warn=False)
    assert found["validated"] and found["positive"] == "pro" and found["folds"] == 5 and found["seed"] == 4
    assert found["skipped_queries"] == {"one perspective only": 1,
                                        "a perspective with one document (none to hold out)": 1}
    assert [r["query_id"] for r in found["per_query"]] == ["q1", "q2", "q3"]
    correct, documents, scores, queries, is_pro = [], [], [], [], []
    for qid in ("q1", "q2", "q3"):
        labels = [g for g, _ in STANCES[qid][1]]
        texts = [t for _, t in STANCES[qid][1]]
        folds = held_out_folds(labels, 5, seed=4, query=qid)
        right = np.zeros(2)
        for fold in range(folds.max() + 1):  # fit on the other folds by hand, score the held-out fold
            train = np.flatnonzero(folds != fold)
            test = np.flatnonzero(folds == fold)
            axes = pm.math.fit_axes(embedder.embed([texts[i] for i in train]).astype(np.float64), 1,
                                    labels=[labels[i] for i in train], positive="pro")
            fit_scores = pm.math.project(embedder.embed([texts[i] for i in train]).astype(np.float64), axes)[:, 0]
            held = pm.math.project(embedder.embed([texts[i] for i in test]).astype(np.float64), axes)[:, 0]
            sides = {}
            for label in ("pro", "con"):
                mine = np.array([labels[i] == label for i in train])
                above, below = (fit_scores[mine] > 0).sum(), (fit_scores[mine] < 0).sum()
                sides[label] = 1 if above > below else -1 if below > above else (1 if label == "pro" else -1)
            expected = np.array([1 if labels[i] == "pro" else -1 for i in train])
            flip = 1 if (np.sign(fit_scores) == expected).sum() >= (np.sign(fit_scores) == -expected).sum() else -1
            for score, i in zip(held, test):
                right += [np.sign(score) == sides[labels[i]], np.sign(score) == flip * (1 if labels[i] == "pro" else -1)]
                scores.append(score)
                queries.append(qid)
                is_pro.append(labels[i] == "pro")
        record = next(r for r in found["per_query"] if r["query_id"] == qid)
        assert record["documents"] == len(texts) and record["folds"] == 5
        assert record["accuracy"] == pytest.approx(right[0] / len(texts), abs=1e-12)
        assert record["consistent_accuracy"] == pytest.approx(right[1] / len(texts), abs=1e-12)
        correct.append(right)
        documents.append(len(texts))
    correct, documents = np.array(correct), np.array(documents, dtype=float)
    draws = np.random.default_rng(4).integers(0, 3, (500, 3))  # the bootstrap over queries, by hand
    for column, measure in enumerate(("accuracy", "consistent_accuracy")):
        value = found[measure]
        assert value["value"] == pytest.approx(correct[:, column].sum() / documents.sum(), abs=1e-12)
        ratios = correct[draws, column].sum(axis=1) / documents[draws].sum(axis=1)
        assert [value["low"], value["high"]] == pytest.approx(np.quantile(ratios, [0.025, 0.975]), abs=1e-12)
    assert found["in_hindsight"]["consistent_accuracy"] == pytest.approx(
        pm.math.consistent_accuracy(scores, queries, is_pro), abs=1e-12)
    assert found["in_hindsight"]["accuracy"] == pytest.approx(
        pm.math.perspective_accuracy(scores, queries, is_pro), abs=1e-12)
    assert found["reaches_chance"] == (min(found["accuracy"]["low"], found["consistent_accuracy"]["low"]) <= 0.5)
    # the same from the fit set, the polarity model and the dataset read as a frame; another seed, other folds
    fit = pm.FitSet.from_beir(folder)
    again = pm.axis_evidence(pm.PolarityModel(fit, embedder=embedder), resamples=500, seed=4, warn=False)
    assert again["per_query"] == found["per_query"] == pm.axis_evidence(fit, embedder, resamples=500, seed=4,
                                                                        warn=False)["per_query"]
    other = pm.axis_evidence(fit, embedder, resamples=500, seed=5, warn=False)
    assert other["per_query"] != found["per_query"] and other["seed"] == 5
    json.dumps(found, allow_nan=False)  # JSON-ready


def test_evidence_reuses_the_embedding_cache(tmp_path, embedder):
    folder = write_folder(tmp_path / "stances", STANCES)
    pm.axis_evidence(folder, embedder=embedder, resamples=100, warn=False)
    before = embedder.computed
    pm.axis_evidence(folder, embedder=embedder, resamples=100, seed=1, warn=False)  # other folds, same texts
    assert embedder.computed == before


def test_noise_labels_do_not_clear_chance_and_are_warned_about(tmp_path, embedder):
    folder = write_folder(tmp_path / "noise", noise())
    with pytest.warns(AxisWarning, match=r"consistent accuracy 0\.\d+ \[0\.\d+, 0\.\d+\] .*not clear chance \(0\.5"):
        found = pm.axis_evidence(folder, embedder=embedder, resamples=1000)
    assert found["reaches_chance"] and found["consistent_accuracy"]["low"] <= 0.5
    assert "\n" not in found["warning"]
    # counted as validate-polarity counts them (signs chosen on the scored documents), noise looks like signal
    assert found["in_hindsight"]["consistent_accuracy"] > 0.55
    clear = pm.axis_evidence(write_folder(tmp_path / "separated", separated()), embedder=embedder, resamples=1000)
    assert clear["consistent_accuracy"]["low"] > 0.5 and not clear["reaches_chance"] and clear["warning"] is None


def test_nothing_to_check_is_said_not_guessed(tmp_path, embedder):
    unlabelled = pm.FitSet.from_beir(write_folder(tmp_path / "plain", STANCES, labels=False))
    found = pm.axis_evidence(unlabelled, embedder, warn=False)
    assert not found["validated"] and "no labels" in found["reason"] and found["accuracy"] is None
    assert "carry no labels" in pm.axis_evidence(pm.PolarityModel(embedder=embedder))["reason"]
    one_sided = {q: STANCES[q] for q in ("q4", "q5")}
    found = pm.axis_evidence(write_folder(tmp_path / "thin", one_sided), embedder=embedder)
    assert not found["validated"] and "no query of" in found["reason"] and "1 with one perspective only" in found["reason"]
    with pytest.raises(ValueError, match="brings its own embedder"):
        pm.axis_evidence(pm.PolarityModel(embedder=embedder), embedder)


# ---- in the audit -----------------------------------------------------------------------------------------------


def test_audit_reports_the_evidence_next_to_duo_everywhere(tmp_path, embedder):
    folder = write_folder(tmp_path / "stances", STANCES)
    cache = Path(os.environ["PAIRMEASURES_CACHE_DIR"])  # the session's embeddings
    out = tmp_path / "audit"
    args = ["--dataset", str(folder), "--systems", f"run:{run_of(STANCES, tmp_path / 'a.run')}", "--measures",
            "nDCG@10", "Duo@10", "--resamples", "300", "--seed", "2", "--no-tradeoff", "--out", str(out)]
    done = audit(*args, cache=cache)
    expected = pm.axis_evidence(folder, embedder=embedder, resamples=300, seed=2, warn=False)
    board = json.loads((out / "leaderboard.json").read_text())
    axes = board["polarity_axes"]
    assert axes["per_query"] == expected["per_query"] and axes["consistent_accuracy"] == expected["consistent_accuracy"]
    assert axes["scheme"].startswith("5-fold cross-validation within each query (seed 2)")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["polarity_axes"]["accuracy"] == expected["accuracy"] and "per_query" not in manifest["polarity_axes"]
    assert manifest["cache"]["evaluations"]["axis evidence"] == "miss" and "polarity axes" in manifest["timings_s"]
    header = (out / "leaderboard.md").read_text().splitlines()[0]
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[cells.index("Duo@10 n") + 1] == AXIS_COLUMN  # next to DUO's columns
    value = expected["consistent_accuracy"]
    assert f"{value['value']:.3f} [{value['low']:.3f}, {value['high']:.3f}]" in done.stdout
    html = (out / "report.html").read_text()
    assert "How good are DUO&#x27;s polarity axes" in html and "held-out accuracies" in html
    assert html.index("How good are DUO") < html.index("<h2>Statistics</h2>")
    again = audit(*args, "--force", cache=cache)  # warm: nothing recomputed, the same evidence
    assert json.loads((out / "manifest.json").read_text())["cache"]["evaluations"]["axis evidence"] == "hit"
    assert json.loads((out / "leaderboard.json").read_text())["polarity_axes"] == axes
    assert again.stderr.count("AxisWarning") == done.stderr.count("AxisWarning")


def test_audit_warns_in_one_line_when_the_labels_are_noise(tmp_path):
    data = noise()
    folder = write_folder(tmp_path / "noise", data)
    out = tmp_path / "audit"
    args = ["--dataset", str(folder), "--systems", f"run:{run_of(data, tmp_path / 'n.run')}", "--measures", "Duo@10",
            "--resamples", "1000", "--no-tradeoff", "--out", str(out)]
    cache = Path(os.environ["PAIRMEASURES_CACHE_DIR"])
    done = audit(*args, cache=cache)
    lines = [line for line in done.stderr.splitlines() if "AxisWarning" in line]
    assert len(lines) == 1 and lines[0].startswith("pairmeasures audit: AxisWarning: the polarity axes of ")
    assert "not clear chance (0.5" in lines[0]
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["polarity_axes"]["reaches_chance"] and board["polarity_axes"]["consistent_accuracy"]["low"] <= 0.5
    assert "not above chance" in (out / "leaderboard.md").read_text()
    assert "Warning: the polarity axes of" in (out / "report.html").read_text()
    warm = audit(*args, "--force", cache=cache)  # the warning comes from the cached evidence too
    assert [line for line in warm.stderr.splitlines() if "AxisWarning" in line] == lines


def test_an_unlabelled_dataset_says_its_axis_is_unvalidated(tmp_path):
    folder = write_folder(tmp_path / "plain", STANCES, labels=False)
    out = tmp_path / "audit"
    done = audit("--dataset", str(folder), "--systems", f"run:{run_of(STANCES, tmp_path / 'a.run')}", "--measures",
                 "Duo@10", "--resamples", "200", "--no-tradeoff", "--out", str(out),
                 cache=Path(os.environ["PAIRMEASURES_CACHE_DIR"]))
    html = (out / "report.html").read_text()
    assert "DUO&#x27;s axis is unvalidated: it has no labelled documents" in html
    axes = json.loads((out / "leaderboard.json").read_text())["polarity_axes"]
    assert axes["validated"] is False and axes["accuracy"] is None and "no labelled documents" in axes["reason"]
    assert json.loads((out / "manifest.json").read_text())["polarity_axes"]["validated"] is False
    assert "unvalidated" in done.stdout and "AxisWarning" not in done.stderr


def test_an_audit_without_polarity_has_no_axis_section(tmp_path):
    folder = write_folder(tmp_path / "stances", STANCES)
    out = tmp_path / "audit"
    audit("--dataset", str(folder), "--systems", f"run:{run_of(STANCES, tmp_path / 'a.run')}", "--measures",
          "nDCG@10", "rKL@10", "--resamples", "200", "--no-tradeoff", "--out", str(out), cache=tmp_path / "c")
    assert json.loads((out / "leaderboard.json").read_text())["polarity_axes"] is None
    assert "polarity axes" not in (out / "report.html").read_text() and AXIS_COLUMN not in (out / "leaderboard.md").read_text()


def test_procon_through_the_audit_against_validate_polarity(data_dir, tmp_path):
    """ProCon's axes, held out, through ``pairmeasures audit``: counted in hindsight they agree with validate-polarity
    (fitted and scored on the same documents) within 0.02; held out they are at chance (docs/polarity.md)."""
    qrels = pd.read_csv(data_dir / "procon" / "qrels" / "test.tsv", sep="\t", dtype=str)
    run = write_run(tmp_path / "procon.run", {q: list(part["corpus-id"]) for q, part in qrels.groupby("query-id")})
    out = tmp_path / "audit"
    audit("--dataset", "pair/procon", "--systems", f"run:{run}", "--measures", "Duo@10", "--resamples", "2000",
          "--no-tradeoff", "--out", str(out), cache=Path(os.environ["PAIRMEASURES_CACHE_DIR"]), check=True)
    axes = json.loads((out / "leaderboard.json").read_text())["polarity_axes"]
    reference = pm.validate_polarity(data_dir / "procon")
    assert axes["queries"] == reference["queries"] == 50 and axes["documents"] == reference["documents"] == 953
    for measure in ("accuracy", "consistent_accuracy"):
        assert axes["in_hindsight"][measure] == pytest.approx(reference[measure], abs=0.02)
        assert axes[measure]["value"] < reference[measure] - 0.05  # the signs chosen in hindsight were most of it
    assert axes["consistent_accuracy"]["low"] <= 0.5 <= axes["consistent_accuracy"]["high"]
