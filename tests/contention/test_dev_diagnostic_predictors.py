"""The variability study's diagnostic predictors (``sim/variability/dev/diagnostic_predictors.py``),
used through ``run_trial``'s ``predictor``: the placebo flags at its rate and is reproducible from
its seed; POD-PACKING's ``FlagEvery`` and TOPOLOGY's cell placement (``topology-4000/run_diagnostic.py``)
give the rows the scripts gave before they were merged, when they monkeypatched the learned oracle
and the policy table.

The trials are real ones of the study (the committed campaign's bar and models, the study file's
machine and noise), scaled down to a few dozen jobs.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.script_module import load_script

STUDY = Path(__file__).resolve().parents[2] / "sim" / "variability"


@pytest.fixture
def dev(monkeypatch):
    """The dev tooling's modules, as its scripts import them (``dev/`` on the path)."""
    monkeypatch.syspath_prepend(str(STUDY / "dev"))
    monkeypatch.delenv("RUSH_DEV_MODELS", raising=False)
    return (
        load_script(STUDY / "dev" / "trial_cell.py", "trial_cell"),
        load_script(STUDY / "dev" / "diagnostic_predictors.py", "diagnostic_predictors"),
    )


def _run(cell: dict, predictor) -> tuple[list[dict], list[dict]]:
    import rush.contention.experiment as ex

    rows = ex.run_trial(cell, predictor=predictor)
    return [r for r in rows if r["kind"] == "job"], [r for r in rows if r["kind"] == "prediction"]


def test_the_placebo_flags_questions_at_its_rate(dev) -> None:
    _, predictors = dev
    placebo = predictors.Placebo.for_trial(0.73, "WS", 4000)
    flags = placebo(None, [(None, np.arange(8))] * 20_000)
    # 20 000 independent questions: the share is within 4 binomial standard deviations of the rate.
    assert abs(np.mean(flags) - 0.73) < 4 * math.sqrt(0.73 * 0.27 / 20_000)
    assert (placebo.asked, placebo.flagged) == (20_000, sum(flags))
    with pytest.raises(ValueError, match="between 0 and 1"):
        predictors.Placebo(1.5, np.random.default_rng(0))


def test_the_job_placebo_flags_first_and_later_questions_at_their_rates(dev) -> None:
    from types import SimpleNamespace

    _, predictors = dev

    def hold(placebo) -> tuple[list[bool], list[bool]]:
        """5 000 jobs, each asked again while flagged (as a held job is), at most 10 times."""
        first, later = [], []
        for job_id in range(5_000):
            spec = SimpleNamespace(job_id=job_id)
            flags = [placebo(None, [(spec, np.arange(8))])[0]]
            while flags[-1] and len(flags) < 10:
                flags += placebo(None, [(spec, np.arange(8))])
            first.append(flags[0])
            later += flags[1:]
        return first, later

    first, later = hold(predictors.JobPlacebo.for_trial(0.45, 0.85, "WS", 4000))
    assert abs(np.mean(first) - 0.45) < 4 * math.sqrt(0.45 * 0.55 / len(first))
    assert abs(np.mean(later) - 0.85) < 4 * math.sqrt(0.85 * 0.15 / len(later))
    assert hold(predictors.JobPlacebo.for_trial(0.45, 0.85, "WS", 4000)) == (first, later)
    assert hold(predictors.JobPlacebo.for_trial(0.45, 0.85, "SS", 4000)) != (first, later)
    with pytest.raises(ValueError, match="later-question rate"):
        predictors.JobPlacebo(0.5, -0.1, np.random.default_rng(0))


def test_a_placebo_trial_is_reproducible_from_its_seed_and_flags_at_its_rate(dev) -> None:
    trial_cell, predictors = dev
    cell = trial_cell.cell("paper", "WS", 0, "RUSH") | {"scale": 0.2}
    jobs, asked = _run(cell, predictors.Placebo.for_trial(0.6, "WS", 0))
    again_jobs, again_asked = _run(cell, predictors.Placebo.for_trial(0.6, "WS", 0))
    assert (jobs, asked) == (again_jobs, again_asked)
    assert len(jobs) == 38 and len(asked) >= len(jobs)
    # The recorded answers are the seeded coin's, question by question, in the order asked.
    coin = predictors.Placebo.for_trial(0.6, "WS", 0).rng.random(len(asked)) < 0.6
    assert [r["flag"] for r in asked] == coin.tolist()
    share = np.mean([r["flag"] for r in asked])
    assert abs(share - 0.6) < 4 * math.sqrt(0.6 * 0.4 / len(asked))
    # Another trial's (or scenario's) placebo draws other flags; a rate of 0 holds nothing and is FCFS+EASY.
    _, other = _run(cell, predictors.Placebo.for_trial(0.6, "WS", 1))
    assert [r["flag"] for r in other] != [r["flag"] for r in asked]
    none_jobs, none_asked = _run(cell, predictors.Placebo.for_trial(0.0, "WS", 0))
    base, _ = _run(trial_cell.cell("paper", "WS", 0, "FCFS+EASY") | {"scale": 0.2}, None)
    assert not any(r["flag"] for r in none_asked)
    assert [(r["job_id"], r["start"], r["end"]) for r in none_jobs] == [
        (r["job_id"], r["start"], r["end"]) for r in base
    ]
    assert all(r["skips"] == 0 for r in none_jobs) and any(r["skips"] > 0 for r in jobs)


def test_a_predictor_replaces_only_a_learned_policys_model(dev) -> None:
    import rush.contention.experiment as ex

    trial_cell, predictors = dev
    cell = trial_cell.cell("paper", "ADAA", 0, "FCFS+EASY") | {"scale": 0.05}
    with pytest.raises(ValueError, match="learned policy"):
        ex.run_trial(cell, predictor=predictors.FlagEvery())
    with pytest.raises(ValueError, match="placement 'packed'"):
        ex.run_trial(cell | {"placement": "packed"})


def _old_pod_packing(monkeypatch, move_diag, trial_cell, scale: float) -> list[dict]:
    """POD-PACKING as run_pod_packing.py ran it before the merge: the learned oracle patched to
    flag every job and call every leaf quiet."""
    from rush.contention.oracles import LearnedOracle

    def flag_all(self, present, asked):
        self.asked += len(asked)
        self.flagged += len(asked)
        return [True] * len(asked)

    cell = trial_cell.cell("multipod", "WS", 4000, "RUSH-MOVE") | {"scale": scale}
    with monkeypatch.context() as patch:
        patch.setattr(LearnedOracle, "__call__", flag_all)
        patch.setattr(
            LearnedOracle,
            "quiet_leaves",
            lambda self, present: np.ones(present.fabric.machine.leaves, dtype=bool),
        )
        return [r | {"policy": "POD-PACKING"} for r in move_diag.run(cell)]


def _old_topology(monkeypatch, move_diag, trial_cell, variant: str, scale: float) -> list[dict]:
    """TOPOLOGY as before the merge: FCFS+EASY's entry of the policy table set to topology."""
    import rush.contention.experiment as ex

    cell = trial_cell.cell(variant, "WS", 4000, "FCFS+EASY") | {"scale": scale}
    with monkeypatch.context() as patch:
        patch.setitem(ex.PLACEMENT, "FCFS+EASY", "topology")
        return [r | {"policy": "TOPOLOGY"} for r in move_diag.run(cell)]


def test_the_merged_diagnostic_script_gives_the_rows_of_the_scripts_it_replaced(monkeypatch, dev) -> None:
    trial_cell, _ = dev
    move_diag = load_script(STUDY / "dev" / "move_diag.py", "move_diag")
    script = load_script(STUDY / "topology-4000" / "run_diagnostic.py", "variability_run_diagnostic")
    pod = script.rows_of("POD-PACKING", "multipod", "WS", 4000, scale=0.3)
    old_pod = _old_pod_packing(monkeypatch, move_diag, trial_cell, 0.3)
    assert pod == old_pod and len(pod) == 57
    # Every job was asked about and flagged, and the pod rule kept each in one pod.
    assert all(r["flag_first"] is True and r["flag_last"] is True for r in pod)
    assert all(r["pods"] == 1 for r in pod)
    for variant in ("paper", "multipod"):
        topo = script.rows_of("TOPOLOGY", variant, "WS", 4000, scale=0.3)
        assert topo == _old_topology(monkeypatch, move_diag, trial_cell, variant, 0.3)
        assert all(r["flag_first"] == "" for r in topo)  # no predictor asked
    # TOPOLOGY is not POD-PACKING with another name: on multipod they differ.
    assert [(r["start"], r["leaf_ids"]) for r in topo] != [(r["start"], r["leaf_ids"]) for r in pod]
    with pytest.raises(SystemExit, match="unknown diagnostic"):
        script.rows_of("PLACEBO", "paper", "WS", 4000)


def test_the_placebo_rates_are_read_per_question_and_per_job_from_the_models_questions(
    tmp_path, monkeypatch, dev
) -> None:
    from rush.studies.contention import _write_csv

    run = load_script(STUDY / "placebo" / "run.py", "variability_placebo_run")
    answers = {
        (4000, 1): [True, True, False],
        (4000, 2): [False],
        (4000, 3): [True, False],
        (4001, 1): [True],
    }
    rows = [
        {"variant": "paper", "scenario": "WS", "policy": "RUSH", "trial": t, "t": k, "job_id": j, "app": "AMG",
         "flag": f, "oracle_flag": False}
        for (t, j), flags in answers.items() for k, f in enumerate(flags)
    ]  # fmt: skip
    rows.append(rows[0] | {"policy": "RUSH-MOVE"})  # another policy's question: not counted
    path = tmp_path / "predictions.csv.gz"
    _write_csv(path, rows, run.PREDICTION_COLUMNS)
    monkeypatch.setitem(run.PREDICTIONS, "RUSH", [path])
    got = run.rates("RUSH", ["WS"], [4000])["WS"]  # trial 4001 is not in the run
    assert got == {
        "questions": 6,
        "flagged": 3,
        "rate_per_question": 0.5,
        "jobs_flagged_share": 2 / 3,
        "rate_first_question": 2 / 3,
        "rate_later_questions": 1 / 3,
    }
    with pytest.raises(SystemExit, match="no prediction rows"):
        run.rates("RUSH", ["SS"], [4000])
