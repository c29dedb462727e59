"""sim/variability/ten_trials.py pools several studies' run records: each trial counted once."""

from __future__ import annotations

from pathlib import Path

from rush.studies.contention import JOB_COLUMNS, _write_csv
from tests.script_module import load_script
from tests.studies.contention_rows import job

SCRIPT = Path(__file__).resolve().parents[2] / "sim" / "variability" / "ten_trials.py"


def _varied(policy: str, trial: int, job_id: int, cause: str, avoidable: bool) -> dict:
    return job(policy, trial, job_id=job_id, variation=True, cause=cause, decisive=cause, avoidable=avoidable)


def test_pooled_causes_count_a_trial_found_in_two_files_once(tmp_path: Path) -> None:
    ten = load_script(SCRIPT, "variability_ten_trials")
    first = [_varied("FCFS+EASY", 0, 1, "noise", True), _varied("FCFS+EASY", 0, 2, "jitter", False)]
    first += [job("RUSH", 0, job_id=1)]
    # The second file repeats trial 0 (as a rerun folder does; the first file's is kept) and adds trial 1.
    second = [_varied("FCFS+EASY", 0, k, "noise", True) for k in range(1, 6)]
    second += [_varied("FCFS+EASY", 1, 1, "noise", False), job("FCFS+EASY", 1, job_id=2)]
    for name, rows in (("a.csv.gz", first), ("b.csv.gz", second)):
        _write_csv(tmp_path / name, rows, JOB_COLUMNS)
    pool = ten.Pool()
    pool.add_file(str(tmp_path / "a.csv.gz"), "paper")
    pool.add_file(str(tmp_path / "b.csv.gz"), "paper")
    lines = ten.cause_rows(pool)
    adaa = [line for line in lines if line.startswith("| ADAA |")]
    # Trials 0 (two runs with variation: noise, avoidable; jitter) and 1 (one: noise): 1.5 per trial.
    assert adaa == ["| ADAA | 2 | 1.5 | 1.0 (67%) | 0.0 (0%) | 0.0 (0%) | 0.0 (0%) | 0.5 (33%) | 0.5 (33%) |"]
    assert [t.variation for _, t in sorted(pool.cells[("ADAA", "FCFS+EASY")].items())] == [2, 1]


def test_pooled_trial_sets_are_named_by_their_runs_of_consecutive_trials() -> None:
    ten = load_script(SCRIPT, "variability_ten_trials")
    assert ten.trial_ranges([7, 4000, 4001, 4002, 5000, 5001]) == "7, 4000–4002, 5000–5001"
    assert ten.trial_ranges(list(range(4000, 4010))) == "4000–4009"
