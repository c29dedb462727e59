"""sim/runtime_classes/run.py: a run of some traces keeps the tables' rows of the others."""

from __future__ import annotations

from pathlib import Path

from rush.studies.tables import write_table
from tests.script_module import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "sim" / "runtime_classes" / "run.py"


def test_a_run_of_one_trace_keeps_the_other_traces_rows_as_written(tmp_path) -> None:
    script = load_script(SCRIPT, "runtime_classes_run")
    columns = ["trace", "policy", "jobs", "mean_bounded_slowdown", "kills", "note"]
    committed = [
        {
            "trace": "HPC2N",
            "policy": "FCFS",
            "jobs": 187844,
            "mean_bounded_slowdown": 19.673182499583323,
            "kills": 0,
            "note": None,
        },
        {
            "trace": "SDSC-SP2",
            "policy": "FCFS",
            "jobs": 100,
            "mean_bounded_slowdown": 0.1 + 0.2,
            "kills": 3,
            "note": "x",
        },
        {
            "trace": "LLNL-Atlas",
            "policy": "FCFS",
            "jobs": 1,
            "mean_bounded_slowdown": 1.0,
            "kills": 1,
            "note": None,
        },
    ]
    write_table(tmp_path, "improvement", committed, columns)
    before_md = (tmp_path / "improvement.md").read_text().splitlines()
    new = [
        {
            "trace": "LLNL-Atlas",
            "policy": "FCFS",
            "jobs": 2,
            "mean_bounded_slowdown": 2.5,
            "kills": 4,
            "note": None,
        }
    ]
    table = script.with_other_traces(tmp_path, "improvement", new, ["LLNL-Atlas"])
    # TRACES' order first (SDSC-SP2 before HPC2N), then a trace outside it; its old row replaced.
    assert [r["trace"] for r in table] == ["SDSC-SP2", "HPC2N", "LLNL-Atlas"]
    assert table[0] == committed[1] and table[1] == committed[0] and table[2] == new[0]
    write_table(tmp_path, "improvement", table, columns)
    after_md = (tmp_path / "improvement.md").read_text().splitlines()
    assert sorted(after_md[2:4]) == sorted(before_md[2:4])  # the kept rows print as before


def test_a_table_not_on_disk_is_the_new_rows(tmp_path) -> None:
    script = load_script(SCRIPT, "runtime_classes_run")
    new = [{"trace": "LLNL-Atlas", "x": 1}]
    assert script.with_other_traces(tmp_path, "fairness", new, ["LLNL-Atlas"]) == new
