"""Regression-obtained heuristics: trial scores, weighted fits, VIF, singular designs, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rush.core.learned import parse_heuristic
from rush.core.policies import priority_key
from rush.errors import ConfigError
from rush.models.policies.heuristic_file import parse_policy_text
from rush.models.policies.regression import design, fit_template, row_weights, template_terms, vif
from rush.studies.regression_data import pair_jobs, score_pair, score_spread, training_set

ROOT = Path(__file__).resolve().parents[2]


def test_scores_of_a_hand_worked_pair():
    # S: one job holding the 4-processor machine until t=100. Q: A (4 procs, 100 s) and B (1 proc,
    # 10 s), both submitted at 10. A first: A runs 100-200, B 200-210: BSLD 1.9 and 20 (mean 10.95).
    # B first: B runs 100-110, A 110-210: BSLD 10 and 2 (mean 6). So B is the job to put first.
    submit = np.array([0.0, 10.0, 10.0])
    procs = np.array([4, 4, 1])
    runtime = np.array([100.0, 100.0, 10.0])
    scores = score_pair(submit, procs, runtime, trials=64, n_s=1, machine=4)
    assert scores is not None
    np.testing.assert_allclose(scores.raw, [10.95, 6.0])
    np.testing.assert_allclose(scores.score, [1.0, 0.0])
    np.testing.assert_allclose(scores.r, [10.0, 10.0])
    assert scores.trials_per_job == 32


def test_a_pair_where_order_never_matters_is_flat():
    # Q's jobs arrive together and all fit at once: every order starts them all at 10.
    submit = np.array([0.0, 10.0, 10.0, 10.0])
    scores = score_pair(submit, np.array([1, 1, 1, 1]), np.array([5.0, 5.0, 5.0, 5.0]), 64, n_s=1, machine=8)
    assert scores is None


def test_training_set_scores_are_normalised_per_pair():
    data = training_set(pairs=3, trials=320, seed=1)
    assert len(data) == 32 * data.pairs_kept and data.pairs_kept + data.pairs_flat == 3
    for k in range(data.pairs_kept):
        s = data.score[data.pair == k]
        assert s.min() == 0.0 and s.max() == 1.0
    assert np.all(data.r >= 0) and np.all(data.stderr >= 0)


def test_score_spread_falls_with_trials():
    rows = score_spread(seed=2, trial_counts=[64, 4096], repeats=3)
    assert [r["trials"] for r in rows] == [64, 4096]
    assert rows[1]["score_sd"] < rows[0]["score_sd"]
    assert rows[1]["spearman_vs_reference"] > rows[0]["spearman_vs_reference"]


def test_q_spread_packs_q_arrivals_towards_the_branch():
    submit, procs, runtime = pair_jobs(4)
    packed, procs2, runtime2 = pair_jobs(4, q_spread=0.25)
    np.testing.assert_array_equal(packed[:16], submit[:16])
    np.testing.assert_array_equal(procs2, procs)
    np.testing.assert_array_equal(runtime2, runtime)
    np.testing.assert_allclose(packed[16:] - submit[15], 0.25 * (submit[16:] - submit[15]), atol=1.0)
    for bad in (-0.1, 1.5, float("nan"), True):
        with pytest.raises(ConfigError, match="q-spread"):
            pair_jobs(4, q_spread=bad)


def test_bad_counts_are_config_errors():
    with pytest.raises(ConfigError, match="pairs"):
        training_set(pairs=0, trials=320)
    with pytest.raises(ConfigError, match="trials"):
        training_set(pairs=1, trials=True)  # type: ignore[arg-type]


def _rows(n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.uniform(1, 1000, n), rng.integers(1, 257, n).astype(float), rng.uniform(1, 5000, n)


def test_templates_are_all_monomials_up_to_their_degree():
    assert template_terms("Lin") == ((1, 0, 0), (0, 1, 0), (0, 0, 1))
    assert [len(template_terms(t)) for t in ("Lin", "Qdr", "Cub", "Qua")] == [3, 9, 19, 34]
    assert (1, 1, 0) in template_terms("Qdr")  # the area factor p*q
    with pytest.raises(ConfigError, match="template"):
        template_terms("Quintic")


def test_weighted_fit_recovers_known_coefficients():
    p, q, r = _rows()
    scale = (1000.0, 256.0, 5000.0)
    x, y, z = p / scale[0], q / scale[1], r / scale[2]
    score = 0.3 + 2.0 * x - 1.0 * y + 0.5 * z + 0.7 * x * y - 0.2 * z * z
    # Rows of weight 0 carry garbage: a weighted fit must ignore them.
    junk = 50
    pj, qj, rj = _rows(junk, seed=1)
    weights = np.r_[np.ones(len(p)), np.zeros(junk)]
    fit = fit_template(
        "Qdr", np.r_[p, pj], np.r_[q, qj], np.r_[r, rj], np.r_[score, np.full(junk, 99.0)], weights, scale
    )
    expected = dict.fromkeys(fit.terms, 0.0)
    expected.update(
        {(0, 0, 0): 0.3, (1, 0, 0): 2.0, (0, 1, 0): -1.0, (0, 0, 1): 0.5, (1, 1, 0): 0.7, (0, 0, 2): -0.2}
    )
    np.testing.assert_allclose(fit.coefficients, [expected[t] for t in fit.terms], atol=1e-8)
    assert fit.r2 == pytest.approx(1.0) and not fit.singular


def test_learned_policy_key_is_the_fitted_prediction(tmp_path):
    p, q, r = _rows()
    score = np.sin(p / 300) + q / 100 + np.sqrt(r) / 50
    fit = fit_template("Cub", p, q, r, score)
    data = json.loads(json.dumps(fit.heuristic({"note": "test"}).to_json()))
    heuristic = parse_heuristic(data, "test")
    path = tmp_path / "cub.json"
    path.write_text(json.dumps(data))
    policy = parse_policy_text(f"LEARNED:{path}")
    x = np.column_stack([p, q, r]) / np.asarray(heuristic.scale)
    predicted = np.hstack([np.ones((len(p), 1)), design(x, template_terms("Cub"))]) @ fit.coefficients
    keys = [
        priority_key(policy.code, policy.weight_array(), 0.0, 0.0, r[k], int(q[k]), p[k]) for k in range(20)
    ]
    # q is an integer for the policy (processors): compare on integral q.
    np.testing.assert_allclose(keys, predicted[:20], rtol=1e-9, atol=1e-9)


def test_vif_of_independent_collinear_and_dependent_terms():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=500), rng.normal(size=500)
    independent = vif(np.column_stack([a, b]))
    assert np.all(independent < 1.1)
    near = vif(np.column_stack([a, b, a + b + rng.normal(scale=0.01, size=500)]))
    assert np.all(near > 1000)
    exact = vif(np.column_stack([a, b, a + 2 * b]))
    assert np.all(np.isinf(exact))


def test_singular_design_is_reported_not_a_crash():
    p, q, _ = _rows()
    r = np.full(len(p), 7.0)  # a constant r is the intercept again
    fit = fit_template("Qdr", p, q, r, p / 1000 + q / 256, None)
    assert fit.singular
    assert any("singular design" in m and "r" in m for m in fit.messages)
    table = {row["term"]: row for row in fit.table()}
    assert table["r"]["vif"] == "inf" and table["r^2"]["vif"] == "inf"
    assert np.all(np.isfinite(fit.coefficients))


def test_bad_rows_are_config_errors():
    p, q, r = _rows(20)
    with pytest.raises(ConfigError, match="NaN"):
        fit_template("Lin", np.r_[p[:-1], np.nan], q, r, p)
    with pytest.raises(ConfigError, match="rows"):
        fit_template("Qua", p, q, r, p)  # 20 rows for 35 coefficients
    with pytest.raises(ConfigError, match="weights"):
        fit_template("Lin", p, q, r, p, -np.ones(20))


def test_row_weights_are_capped_inverse_variances():
    w = row_weights(np.array([0.0, 1e-9, 0.1, 0.1, 0.2]))
    assert w.mean() == pytest.approx(1.0)
    assert w[0] == w[1] and w[2] == w[3] > w[4]
    assert w.max() / np.median(w) <= 10.0 + 1e-9


def _rush(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, RUSH_TRACE_MIRROR=str(ROOT.parent / "shared" / "traces"))
    return subprocess.run(
        [sys.executable, "-m", "rush", "experiment", "regression", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=900,
    )


TINY = ["--pairs", "4", "--trials", "64", "--runs", "1", "--jobs", "150", "--traces", "", "--weeks", "0"]
TINY += ["--spread-pairs", "1", "--spread-repeats", "2", "--cluster", "serial"]


def test_cli_json_and_out_at_a_tiny_size(tmp_path):
    out = tmp_path / "study"
    done = _rush(*TINY, "--json", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [f["template"] for f in result["fits"]] == ["Lin", "Qdr", "Cub", "Qua"]
    policies = {(s["policy"], s["backfill"]) for s in result["summary"] if s["source"] == "lublin"}
    expected = {"FCFS", "SPF", "SAF", "F1", "F2", "F3", "F4", "LIN", "Lin", "Qdr", "Cub", "Qua"}
    assert policies == {(p, b) for p in expected for b in ("none", "easy")}
    for name in ("training", "coefficients", "fits", "spread", "evaluation", "summary"):
        assert (out / "results" / f"{name}.csv").stat().st_size > 0
    for name in ("Lin", "Qdr", "Cub", "Qua"):
        parse_policy_text(f"LEARNED:{out / 'heuristics' / f'{name}.json'}")
    assert (out / "plots" / "vif.png").exists()


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["--pairs", "0"], "--pairs"),
        (["--trials", "5"], "--trials"),
        (["--runs", "-1"], "--runs"),
        (["--q-spread", "2"], "--q-spread"),
        (["--traces", "no-such-trace.swf"], "no-such-trace"),
    ],
)
def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, args, where):
    out = tmp_path / "study"
    done = _rush(*TINY, "--out", str(out), *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert where in done.stderr
    assert not out.exists()
