"""The per-size flag threshold (RUSH-SIZE): the best-F1 point of each size's held-out start
decisions, capped so that no larger share of them is flagged than varies."""

from __future__ import annotations

import numpy as np

from rush.models.variability.train import best_f1_threshold, size_thresholds


def test_each_size_flags_no_more_than_its_base_rate() -> None:
    rng = np.random.default_rng(3)
    sizes = np.repeat([8.0, 16.0, 32.0], 200)
    positive = (rng.random(600) < np.repeat([0.05, 0.10, 0.30], 200)).astype(int)
    # A weak score: positives a little higher, and a 32-node job scores high whatever happens
    # (the predictor's over-flagging of large jobs that the cap is for).
    score = 0.3 * positive + rng.random(600) * 0.7 + (sizes == 32) * 0.2
    table = size_thresholds(positive, score, sizes, fallback=0.5)
    assert set(table) == {"8", "16", "32"}
    for key, row in table.items():
        here = sizes == float(key)
        flagged = score[here] >= row["threshold"]
        assert row["base_rate"] == positive[here].mean()
        assert flagged.mean() <= positive[here].mean() + 1.0 / here.sum()
        assert row["threshold"] >= best_f1_threshold(positive[here], score[here])["threshold"]
        assert row["flagged_share"] == flagged.mean()


def test_the_cap_only_raises_a_threshold() -> None:
    """A clean separation flags the positives exactly: the best-F1 point already meets the cap."""
    sizes = np.full(10, 16.0)
    positive = np.array([0, 0, 0, 0, 0, 0, 0, 0, 1, 1])
    score = np.array([0.1, 0.2, 0.1, 0.3, 0.2, 0.1, 0.2, 0.3, 0.9, 0.8])
    row = size_thresholds(positive, score, sizes, fallback=0.5)["16"]
    assert row["threshold"] == row["best_f1_threshold"] == 0.8
    assert row["f1"] == 1.0


def test_a_size_without_variation_keeps_the_overall_threshold() -> None:
    sizes = np.array([8.0] * 5 + [32.0] * 5)
    positive = np.array([0, 0, 0, 0, 0, 1, 0, 1, 0, 0])
    score = np.linspace(0.0, 1.0, 10)
    table = size_thresholds(positive, score, sizes, fallback=0.42)
    assert table["8"]["threshold"] == 0.42 and "reason" in table["8"]
    assert table["32"]["threshold"] != 0.42


def test_training_writes_the_per_size_table_that_a_rerun_recomputes(trained, dataset, model_file) -> None:
    """The card carries one threshold per node count the campaign ran, and the table computed
    later for a model trained before it existed (the study's prepare) is the same."""
    from rush.models.variability.train import load_variability_model, size_threshold_table

    by_size = trained.card["flag_threshold_by_size"]
    sizes = dataset.X[:, dataset.feature_names.index("job_nodes")]
    assert set(by_size) == {str(int(s)) for s in np.unique(sizes[np.isfinite(sizes)])}
    assert all(0.0 <= t <= 1.0 for t in by_size.values())
    _, card = load_variability_model(model_file)
    assert card["flag_threshold_by_size"] == by_size
    assert trained.card["selection"] == "kfold"  # the protocol size_threshold_table replays
    again = size_threshold_table(dataset, card, k=trained.card["k_folds"])
    assert {k: v["threshold"] for k, v in again.items()} == by_size
