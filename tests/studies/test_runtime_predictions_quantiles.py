"""rush-Q beside Table 6.6 (issue 29): the schedulers of
``rush.studies.runtime_predictions_quantiles`` on a small synthetic trace: one EASY-FCFS base for
all, kills only of jobs called small that outran the divider, and fewer jobs called small under
the kill budget than at rush's idempotent threshold; and which cached walk-forward
``sim/runtime_predictions/rush_q.py`` takes."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_walkforward import predict_quantiles_walkforward
from rush.studies.runtime_predictions_quantiles import (
    SCHEDULERS,
    RowOptions,
    kill_budget_threshold,
    quantile_rows,
    scheduler_inputs,
)
from tests.models.fixtures import HEADER, SMALL_QUANTILE_MODEL, synthetic_workload
from tests.script_module import load_script


def test_schedulers_share_a_base_and_kill_only_false_smalls() -> None:
    workload = synthetic_workload(700)
    wf = predict_quantiles_walkforward(
        workload, HEADER, RuntimeQuantileRegressor(max_iter=10, min_samples_leaf=5)
    )
    rows = quantile_rows("synthetic", "full", workload, wf)
    assert [r["scheduler"] for r in rows] == list(SCHEDULERS)
    assert len({r["base_bsld"] for r in rows}) == 1
    everyone = np.arange(len(workload))
    divider = wf.class_walkforward().divider_or_first()
    for r in rows:
        inputs, _ = scheduler_inputs(r["scheduler"], wf, everyone, 0.1)
        false_small = (inputs.runtime_class == 0) & (
            np.minimum(workload.runtime, workload.requested_time) > divider
        )
        assert r["false_small_kills"] <= false_small.sum(), r["scheduler"]
        if r["scheduler"].startswith("rush-Q"):  # predictions in force, never above the request
            assert np.all(inputs.estimate <= workload.requested_time + 1e-6)
    budget = kill_budget_threshold(wf)
    assert np.all((budget >= 0.05) & (budget <= 0.95))
    called = {
        r["scheduler"]: scheduler_inputs(r["scheduler"], wf, everyone, 0.1)[0].runtime_class for r in rows
    }
    assert (called["rush-Q (kill budget)"] == 0).sum() <= (called["rush-Q"] == 0).sum() or np.all(
        budget <= 0.1
    )


def _rush_q_script():
    return load_script(
        Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions" / "rush_q.py", "rush_q"
    )


def test_rush_q_takes_the_newest_walkforward_of_the_feature_set(tmp_path, monkeypatch) -> None:
    """Other studies cache walk-forwards of other feature sets in the same folder: rush_q.py takes
    the newest of the asked set, not the newest file, and stops with the command when none is."""
    cache = tmp_path / "runtime_quantiles"
    cache.mkdir()
    for stamp, (name, feature_set) in enumerate(
        [("old-t23", "t23"), ("new-t23", "t23"), ("newest-base", "base"), ("other-trace", "t23")]
    ):
        trace = "OTHER" if name == "other-trace" else "KTH-SP2"
        path = cache / f"{trace}-{name}.pkl"
        path.write_bytes(pickle.dumps(SimpleNamespace(name=name, feature_set=feature_set)))
        os.utime(path, (1000 + stamp, 1000 + stamp))
    monkeypatch.setenv("RUSH_CACHE", str(tmp_path))
    rush_q = _rush_q_script()
    assert rush_q.default_walkforward("KTH-SP2", "t23").name == "new-t23"
    assert rush_q.default_walkforward("KTH-SP2", "base").name == "newest-base"
    with pytest.raises(SystemExit, match="estimates/run.py --traces KTH-SP2"):
        rush_q.default_walkforward("KTH-SP2", "t99")


def _class_rules_script():
    folder = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions" / "estimates"
    return load_script(folder / "class_rules.py", "class_rules")


def test_the_studys_class_rules_are_the_predictors_class_heads() -> None:
    """class_rules.py's weekly head over a cached walk-forward gives the P(small) the predictor's
    own ``class_head`` gives in the walk-forward, and ``with_rule`` changes the classes only."""
    rules = _class_rules_script()
    w = synthetic_workload(900)
    model = SMALL_QUANTILE_MODEL
    wf = predict_quantiles_walkforward(w, HEADER, RuntimeQuantileRegressor(**model))
    for head in ("head", "blend"):
        own = predict_quantiles_walkforward(w, HEADER, RuntimeQuantileRegressor(**model, class_head=head))
        study = rules.head_proba(wf, rules.WEEK_SECONDS, head_params=model)
        if head == "blend":
            study = (wf.proba_small + study) / 2
        assert np.allclose(own.proba_small, study, equal_nan=True)
    blended = rules.with_rule(wf, "quantiles")
    assert np.array_equal(blended.quantiles, wf.quantiles)
    assert np.array_equal(blended.predicted_class, wf.predicted_class)


def test_rush_q_estimates_are_the_deployed_calibrated_mean() -> None:
    """rush-Q's estimate is the mean rush deploys (rule H8: the model's mean times its band's
    factor), not the plain model mean; the class-only schedulers carry no estimate."""
    workload = synthetic_workload(900)
    wf = predict_quantiles_walkforward(workload, HEADER, RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL))
    rows = np.arange(0, len(workload), 2)
    calibrated = wf.calibrated_mean()[rows]
    assert not np.allclose(calibrated, wf.mean()[rows], equal_nan=True)  # the bands move some means
    for name in SCHEDULERS:
        inputs, _ = scheduler_inputs(name, wf, rows, 0.1)
        if name.startswith("rush-Q"):
            assert np.array_equal(inputs.estimate, calibrated, equal_nan=True), name


def test_schedulers_held_to_fcfs_cis_kill_rate_take_its_decisions() -> None:
    """Round 12: given FCFS-CI's false smalls job by job, two more schedulers run, judged at the
    threshold that keeps their past false smalls within FCFS-CI's on the same jobs."""
    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds
    from rush.studies.runtime_predictions_quantiles import MATCHED_SCHEDULERS, matched_threshold

    workload = synthetic_workload(700)
    wf = predict_quantiles_walkforward(
        workload, HEADER, RuntimeQuantileRegressor(max_iter=10, min_samples_leaf=5)
    )
    everyone = np.arange(len(workload))
    with pytest.raises(ValueError, match="FCFS-CI's decisions"):
        scheduler_inputs(MATCHED_SCHEDULERS[0], wf, everyone, 0.1)
    # A reference that never kills: its schedulers call no more jobs small than the 0.1 rule's.
    never = np.where(np.isfinite(wf.proba_small), 0.0, np.nan)
    threshold = matched_threshold(wf, never)
    assert np.array_equal(
        threshold,
        walkforward_thresholds(
            wf.proba_small, wf.runtime, wf.divider, wf.end, wf.submit, reference_false_small=never
        ),
    )
    rows = quantile_rows("synthetic", "full", workload, wf, RowOptions(reference_false_small=never))
    assert [r["scheduler"] for r in rows] == list(SCHEDULERS) + list(MATCHED_SCHEDULERS)
    assert len({r["base_bsld"] for r in rows}) == 1
    for name in MATCHED_SCHEDULERS:
        inputs, config = scheduler_inputs(name, wf, everyone, 0.1, never)
        proba = wf.proba_small
        assert np.array_equal(inputs.runtime_class, np.where(np.isfinite(proba) & (proba >= threshold), 0, 1))
        assert config["policy"] == ("SAF" if name.startswith("SAF") else "SPF") and config["kill_false_small"]


def test_rush_q_updates_only_the_rows_it_ran(tmp_path) -> None:
    """A run of some traces or schedulers replaces their rows of the table on disk and keeps the
    others, in the table's trace order, numbers read back as numbers."""
    rush_q = _rush_q_script()
    path = tmp_path / "rush_q.csv"
    path.write_text(
        "trace,scheduler,improvement_over_easy_fcfs_pct,false_small_kills\n"
        "KTH-SP2,rush-Q,63.3,10430\n"
        "SDSC-SP2,rush-Q,62.1,18341\n"
        "SDSC-SP2,quantile SPF-CI,62.8,18341\n"
    )
    new = [
        {
            "trace": "SDSC-SP2",
            "scheduler": "rush-Q",
            "improvement_over_easy_fcfs_pct": 1.0,
            "false_small_kills": 7,
        }
    ]
    new.append(
        {
            "trace": "CTC-SP2",
            "scheduler": "rush-Q",
            "improvement_over_easy_fcfs_pct": 2.0,
            "false_small_kills": 8,
        }
    )
    rows = rush_q._with_other_traces(path, new, ("KTH-SP2", "CTC-SP2", "SDSC-BLUE", "SDSC-SP2"))
    assert [(r["trace"], r["scheduler"], r["false_small_kills"]) for r in rows] == [
        ("KTH-SP2", "rush-Q", 10430),
        ("CTC-SP2", "rush-Q", 8),
        ("SDSC-SP2", "quantile SPF-CI", 18341),
        ("SDSC-SP2", "rush-Q", 7),
    ]
    assert rows[0]["improvement_over_easy_fcfs_pct"] == 63.3
    assert rush_q._with_other_traces(tmp_path / "absent.csv", new, ("CTC-SP2", "SDSC-SP2")) == new[::-1]


def test_an_unknown_scheduler_is_refused_before_any_simulation() -> None:
    workload = synthetic_workload(200)
    wf = SimpleNamespace()  # never read: the names are checked first
    with pytest.raises(ValueError, match="unknown scheduler"):
        quantile_rows("synthetic", "full", workload, wf, RowOptions(names=("rush-Q", "rush-Z")))
    with pytest.raises(ValueError, match="unknown scheduler"):  # held to FCFS-CI's rate: needs its decisions
        quantile_rows("synthetic", "full", workload, wf, RowOptions(names=("rush-Q (FCFS-CI's kill rate)",)))


def test_classifier_schedulers_keep_spf_cis_classes_and_kills() -> None:
    """Round 13: given the runtime classifier's walk-forward, more schedulers run with SPF-CI's own
    classes (so its kills), the predictor only ranking (H13a, H14, H15, H16 by area, H17 where
    confident, H18 one step where confident) or scheduling
    (H13b)."""
    from rush.core.config import CoreConfig
    from rush.models.runtime_class import RuntimeClassifier
    from rush.models.walkforward import predict_classes_walkforward
    from rush.simulator.engine import simulate
    from rush.simulator.metrics import compute_metrics
    from rush.studies.runtime_predictions_quantiles import CLASSIFIER_SCHEDULERS
    from rush.studies.runtime_variants import variant_inputs

    workload = synthetic_workload(900)
    wf = predict_quantiles_walkforward(workload, HEADER, RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL))
    cw = predict_classes_walkforward(
        workload, HEADER, mode="live", estimator=RuntimeClassifier(n_estimators=5)
    )
    everyone = np.arange(len(workload))
    with pytest.raises(ValueError, match="classifier's walk-forward"):
        scheduler_inputs(CLASSIFIER_SCHEDULERS[1], wf, everyone, 0.1)
    with pytest.raises(ValueError, match="predictions for"):
        scheduler_inputs(CLASSIFIER_SCHEDULERS[1], wf, everyone[1:], 0.1, classifier=cw)
    rows = quantile_rows("synthetic", "full", workload, wf, RowOptions(classifier=cw))
    assert [r["scheduler"] for r in rows] == list(SCHEDULERS) + list(CLASSIFIER_SCHEDULERS)
    found = {r["scheduler"]: r for r in rows}
    inputs, kw, _ = variant_inputs("classification-idempotent", None, None, walkforward=cw)
    spf_ci = simulate(workload, CoreConfig.from_names("SPF", "easy", 200_000, **kw), inputs)
    assert found["SPF-CI (classifier)"]["false_small_kills"] == int(spf_ci.requeues.sum())
    calibrated = wf.calibrated_mean()
    for name in CLASSIFIER_SCHEDULERS:
        sim_inputs, config = scheduler_inputs(name, wf, everyone, 0.1, classifier=cw)
        assert np.array_equal(sim_inputs.runtime_class, inputs.runtime_class), name
        assert config["policy"] == ("SAF" if name.startswith("SAF") else "SPF") and config["kill_false_small"]
        # The kills are FCFS-CI's false smalls, job for job, whatever the predictor does.
        assert found[name]["false_small_kills"] == int(np.nansum(cw.for_idempotent().false_small())), name
    ranked, _ = scheduler_inputs("SPF-CI ranked on predictions", wf, everyone, 0.1, classifier=cw)
    assert ranked.estimate is None and np.array_equal(ranked.rank_estimate, calibrated, equal_nan=True)
    planned, config = scheduler_inputs("SPF-CI with predictions", wf, everyone, 0.1, classifier=cw)
    assert np.array_equal(planned.estimate, calibrated, equal_nan=True) and planned.rank_estimate is None
    assert config["prediction_correction"] == "request"
    # H14 (round 17): ranked as H13a, on the slowdown index of the predicted distribution.
    from rush.core.slowdown_rank import slowdown_ranking_runtimes

    risk, config = scheduler_inputs("SPF-CI ranked on slowdown risk", wf, everyone, 0.1, classifier=cw)
    expected = slowdown_ranking_runtimes(wf.quantiles, wf.levels, wf.requested_time, 10.0)
    assert risk.estimate is None and np.array_equal(risk.rank_estimate, expected, equal_nan=True)
    assert not np.array_equal(expected, calibrated, equal_nan=True)
    # H15 (round 17, post hoc): SPF-CI's order by request, equal requests ordered by the mean.
    ties, _ = scheduler_inputs("SPF-CI with predicted tie-breaks", wf, everyone, 0.1, classifier=cw)
    order = np.lexsort((np.arange(len(workload)), calibrated, wf.requested_time))
    assert ties.estimate is None and np.all(np.diff(ties.rank_estimate[order]) >= 0)
    assert np.all(ties.rank_estimate <= wf.requested_time)
    # H16 (round 19): H13a's ranking runtimes under the core's SAF (predicted runtime x processors);
    # its control orders the same classes by the requested area (no predictor).
    area, config = scheduler_inputs("SAF-CI ranked on predictions", wf, everyone, 0.1, classifier=cw)
    assert area.estimate is None and np.array_equal(area.rank_estimate, calibrated, equal_nan=True)
    assert config["policy"] == "SAF" and "scan" not in config  # the backfill scan follows the area too
    control, config = scheduler_inputs("SAF-CI (classifier)", wf, everyone, 0.1, classifier=cw)
    assert control.estimate is None and control.rank_estimate is None and config["policy"] == "SAF"
    # Its row is the core's SAF run on the predicted runtimes, with SPF-CI's classes, planned on the limits.
    by_area = simulate(workload, CoreConfig.from_names("SAF", "easy", 200_000, **kw), area)
    assert found["SAF-CI ranked on predictions"]["mean_bounded_slowdown"] == pytest.approx(
        compute_metrics(by_area, tau=10.0)["mean_bounded_slowdown"], rel=1e-12
    )
    # H17 (round 20): SPF-CI's classes ranked on q0.9 where it is at most half the request, on the
    # request elsewhere; planned on the limits; its row is the core's SPF run on those keys.
    from rush.core.runtime_predictions import confident_ranking_runtimes

    sure, config = scheduler_inputs("SPF-CI ranked where confident", wf, everyone, 0.1, classifier=cw)
    expected = confident_ranking_runtimes(wf.quantiles, wf.levels, wf.requested_time)
    assert sure.estimate is None and np.array_equal(sure.rank_estimate, expected)
    assert config["policy"] == "SPF" and "scan" not in config
    upper = wf.quantiles[:, list(wf.levels).index(0.9)]
    moved = sure.rank_estimate < wf.requested_time
    assert 0 < moved.sum() < len(workload)  # the synthetic trace has jobs of both kinds
    assert np.all(upper[moved] * 2 <= wf.requested_time[moved])
    assert np.array_equal(sure.rank_estimate[~moved], wf.requested_time[~moved])  # SPF-CI's key
    by_confidence = simulate(workload, CoreConfig.from_names("SPF", "easy", 200_000, **kw), sure)
    assert found["SPF-CI ranked where confident"]["mean_bounded_slowdown"] == pytest.approx(
        compute_metrics(by_confidence, tau=10.0)["mean_bounded_slowdown"], rel=1e-12
    )
    # H18 (round 21, post hoc): the same jobs move, one request step only (half the request).
    step, config = scheduler_inputs("SPF-CI one step where confident", wf, everyone, 0.1, classifier=cw)
    assert step.estimate is None and config["policy"] == "SPF" and "scan" not in config
    assert np.array_equal(step.rank_estimate[moved], wf.requested_time[moved] / 2)
    assert np.array_equal(step.rank_estimate[~moved], wf.requested_time[~moved])
    by_step = simulate(workload, CoreConfig.from_names("SPF", "easy", 200_000, **kw), step)
    assert found["SPF-CI one step where confident"]["mean_bounded_slowdown"] == pytest.approx(
        compute_metrics(by_step, tau=10.0)["mean_bounded_slowdown"], rel=1e-12
    )
    # H19 (round 25): SPF-CI with online predictions for the backfill only, corrected stepwise;
    # its row is the core's SPF run with those inputs (the order keeps the requests).
    for name, source in (
        ("SPF-CI backfilled on Gaussier online", "gaussier-online"),
        ("SPF-CI backfilled on EASY++ online", "easy++-online"),
    ):
        backfilled, config = scheduler_inputs(name, wf, everyone, 0.1, classifier=cw)
        assert backfilled.estimate is None and backfilled.rank_estimate is None
        assert (backfilled.online_prediction, backfilled.prediction_scope) == (source, "backfill")
        assert config["policy"] == "SPF" and "scan" not in config
        assert config["prediction_correction"] == "stepwise"
        rest = {k: v for k, v in config.items() if k != "policy"}
        run = simulate(workload, CoreConfig.from_names("SPF", "easy", 200_000, **rest), backfilled)
        assert found[name]["mean_bounded_slowdown"] == pytest.approx(
            compute_metrics(run, tau=10.0)["mean_bounded_slowdown"], rel=1e-12
        )


def test_tie_seeds_rerun_a_scheduler_with_its_ties_in_each_seeds_order() -> None:
    """D15: one row per tie seed, labelled; the arrival row is the plain run; a seed's keys keep the
    order of different requests, leave no tie, and change neither classes nor kills."""
    from rush.studies.runtime_predictions_quantiles import _random_ties

    workload = synthetic_workload(700)
    wf = predict_quantiles_walkforward(
        workload, HEADER, RuntimeQuantileRegressor(max_iter=10, min_samples_leaf=5)
    )
    name = ("quantile SPF-CI",)
    plain = quantile_rows("synthetic", "full", workload, wf, RowOptions(names=name))
    seeded = quantile_rows("synthetic", "full", workload, wf, RowOptions(names=name, tie_seeds=(None, 1, 2)))
    assert [r.get("tie_seed") for r in seeded] == [None, 1, 2]
    assert seeded[0] == plain[0]
    assert len({r["false_small_kills"] for r in seeded}) == 1
    # The order of ties matters on this trace: the seeds' runs differ from the arrival run and each other.
    assert len({r["mean_bounded_slowdown"] for r in seeded}) == 3
    inputs, _ = scheduler_inputs(name[0], wf, np.arange(len(workload)), 0.1)
    keys = _random_ties(inputs, workload, 1)
    requested = workload.requested_time
    assert len(np.unique(requested)) < len(requested)  # the trace has ties to break
    assert len(np.unique(keys)) == len(keys)
    assert np.all(np.diff(requested[np.argsort(keys)]) >= 0)


@pytest.mark.parametrize(
    "argv", [["--seeds", "x"], ["--seeds", "8-1"], ["--traces", "FOO"], ["--rule", "SPF-CI (classifier)"]]
)
def test_paired_seeds_refuses_bad_seeds_and_traces_with_exit_2(argv, monkeypatch, capsys) -> None:
    script = load_script(
        Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions" / "paired_seeds.py",
        "paired_seeds",
    )
    monkeypatch.setattr("sys.argv", ["paired_seeds.py", *argv])
    with pytest.raises(SystemExit) as exit_:
        script.main()
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    expected = {"--seeds": "1-8", "--traces": "KTH-SP2", "--rule": "SAF-CI ranked on predictions"}
    assert expected[argv[0]] in err


def test_paired_seeds_out_writes_its_own_files_and_leaves_d15s(tmp_path, monkeypatch, capsys) -> None:
    import csv
    import shutil

    from scipy.stats import ttest_1samp

    sim = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions"
    script = load_script(sim / "paired_seeds.py", "paired_seeds")
    committed = sim / "results" / "published" / "paired_seeds.csv"
    with open(committed) as fh:
        recorded = list(csv.DictReader(fh))
    published = tmp_path / "results" / "published"
    published.mkdir(parents=True)
    shutil.copy(committed, published / "paired_seeds.csv")
    # The simulation is replaced by its recorded output (D15's committed rows of the trace).
    monkeypatch.setattr(script, "HERE", tmp_path)
    monkeypatch.setattr(
        script, "run_trace", lambda trace, seeds, rule: [r for r in recorded if r["trace"] == trace]
    )
    monkeypatch.setattr("sys.argv", ["paired_seeds.py", "--traces", "KTH-SP2", "--out", "paired_seeds_d16"])
    script.main()
    assert (published / "paired_seeds.csv").read_bytes() == committed.read_bytes()
    with open(published / "paired_seeds_d16.csv") as fh:
        assert list(csv.DictReader(fh)) == [r for r in recorded if r["trace"] == "KTH-SP2"]
    table = (published / "paired_seeds_d16.md").read_text().splitlines()
    assert len(table) == 3 and table[2].startswith("| KTH-SP2 | 8 |")
    pct = {
        (r["scheduler"], r["tie_seed"]): float(r["improvement_over_easy_fcfs_pct"])
        for r in recorded
        if r["trace"] == "KTH-SP2"
    }
    diff = [pct[script.H13A, str(s)] - pct[script.SPF_CI, str(s)] for s in range(1, 9)]
    low, high = ttest_1samp(diff, 0.0).confidence_interval(0.95)
    assert f"| {low:+.2f} to {high:+.2f} |" in table[2]


def test_paired_seeds_h19_keeps_the_other_traces_rows(tmp_path, monkeypatch, capsys) -> None:
    """Round 25: H19 is a paired rule; a run of one trace replaces that trace's rows of its file and
    keeps the others' (the four traces are run one process each)."""
    import csv

    sim = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions"
    script = load_script(sim / "paired_seeds.py", "paired_seeds")
    rule = "SPF-CI backfilled on Gaussier online"

    def rows(trace, seeds, rule_, pct=61.0):
        return [
            {
                "trace": trace,
                "scheduler": name,
                "tie_seed": seed,
                "improvement_over_easy_fcfs_pct": value + k,
                "fcfs_ci_kills": 5,
            }
            for k, seed in enumerate(("arrival", 9, 10))
            for name, value in ((script.SPF_CI, 60.0), (rule_, pct))
        ]

    published = tmp_path / "results" / "published"
    published.mkdir(parents=True)
    monkeypatch.setattr(script, "HERE", tmp_path)
    monkeypatch.setattr(script, "run_trace", rows)
    for trace in ("CTC-SP2", "KTH-SP2"):
        monkeypatch.setattr(
            "sys.argv", ["paired_seeds.py", "--traces", trace, "--seeds", "9-10", "--rule", rule]
        )
        script.main()
    # KTH-SP2 again, with other figures: its rows are replaced, CTC-SP2's stay.
    monkeypatch.setattr(script, "run_trace", lambda t, s, r: rows(t, s, r, pct=59.0))
    monkeypatch.setattr(
        "sys.argv", ["paired_seeds.py", "--traces", "KTH-SP2", "--seeds", "9-10", "--rule", rule]
    )
    script.main()
    with open(published / "paired_seeds.csv") as fh:
        kept = list(csv.DictReader(fh))
    assert [r["trace"] for r in kept] == ["KTH-SP2"] * 6 + ["CTC-SP2"] * 6
    assert {float(r["improvement_over_easy_fcfs_pct"]) for r in kept if r["scheduler"] == rule} == {
        59.0,
        60.0,
        61.0,
        62.0,
        63.0,
    }
    table = (published / "paired_seeds.md").read_text().splitlines()
    assert "H19 - SPF-CI" in table[0]
    assert table[2].startswith("| KTH-SP2 | 2 |") and "| below |" in table[2]
    assert table[3].startswith("| CTC-SP2 | 2 |") and "| at or above |" in table[3]


def test_paired_seeds_refuses_an_out_that_is_not_a_file_stem(monkeypatch, capsys) -> None:
    script = load_script(
        Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions" / "paired_seeds.py",
        "paired_seeds",
    )
    monkeypatch.setattr("sys.argv", ["paired_seeds.py", "--out", "../paired_seeds.csv"])
    with pytest.raises(SystemExit) as exit_:
        script.main()
    assert exit_.value.code == 2
    assert "paired_seeds_d16" in capsys.readouterr().err


def test_paired_seeds_runs_hpc2n_the_confirmation_trace(tmp_path, monkeypatch, capsys) -> None:
    """D22: HPC2N (a trace H18 was not shaped on) is a trace of the paired reading; its row lands
    after Table 6.6's four."""
    sim = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions"
    script = load_script(sim / "paired_seeds.py", "paired_seeds")
    rule = "SPF-CI one step where confident"

    def rows(trace, seeds, rule_):
        return [
            {
                "trace": trace,
                "scheduler": name,
                "tie_seed": seed,
                "improvement_over_easy_fcfs_pct": pct + k,
                "fcfs_ci_kills": 5,
            }
            for k, seed in enumerate(("arrival", 9, 10, 11))
            for name, pct in ((script.SPF_CI, 60.0), (rule_, 61.0 if seed != 10 else 59.0))
        ]

    (tmp_path / "results" / "published").mkdir(parents=True)
    monkeypatch.setattr(script, "HERE", tmp_path)
    monkeypatch.setattr(script, "run_trace", rows)
    monkeypatch.setattr(
        "sys.argv", ["paired_seeds.py", "--traces", "HPC2N", "--seeds", "9-11", "--rule", rule, "--out", "p"]
    )
    script.main()
    table = (tmp_path / "results" / "published" / "p.md").read_text().splitlines()
    assert len(table) == 3 and table[2].startswith("| HPC2N | 3 |")
    assert "| 2 of 3 |" in table[2]
