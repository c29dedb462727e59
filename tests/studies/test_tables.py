"""rush.studies.tables.write_table, the one writer of the runtime studies' committed tables."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from rush.studies.tables import csv_value, write_table

SIM = Path(__file__).resolve().parents[2] / "sim"
# Tables each study writes with write_table (rush_q.md has a writer of its own); the CSV of
# table_6_6 is rewritten afterwards with every column, so only its Markdown is compared.
COMMITTED = {
    **{
        f"runtime_predictions/results/{s}": ("accuracy", "schedulers", "table_6_6")
        for s in ("published", "full")
    },
    **{
        f"runtime_classes/results/{s}": ("classification", "fairness", "improvement", "summary")
        for s in ("published", "full")
    },
    "runtime_classes/results": ("threshold_selection",),
    "runtime_predictions/estimates/results": (
        "class_heads",
        "classes",
        "estimates",
        "gain",
        "predictor",
        "tree_configs",
    ),
}


@pytest.mark.parametrize(
    ("folder", "name"), [(folder, name) for folder, names in COMMITTED.items() for name in names]
)
def test_committed_tables_are_written_again_byte_for_byte(folder: str, name: str, tmp_path: Path) -> None:
    committed = SIM / folder / f"{name}.md"
    columns = [c.strip() for c in committed.read_text().splitlines()[0].strip("|").split("|")]
    with open(SIM / folder / f"{name}.csv", newline="") as fh:
        rows = [{k: csv_value(v) for k, v in row.items()} for row in csv.DictReader(fh)]
    write_table(tmp_path, name, rows, columns)
    assert (tmp_path / f"{name}.md").read_bytes() == committed.read_bytes()
    if name != "table_6_6":
        assert (tmp_path / f"{name}.csv").read_bytes() == (SIM / folder / f"{name}.csv").read_bytes()


def test_columns_pick_and_order_and_none_is_the_missing_mark(tmp_path: Path) -> None:
    rows = [
        {"trace": "KTH-SP2", "bsld": 12.34567, "wait": 4567.8, "extra": 1},
        {"trace": "CTC", "bsld": None},
    ]
    write_table(tmp_path, "t", rows, ["bsld", "trace", "wait"])
    assert (tmp_path / "t.md").read_text().splitlines() == [
        "| bsld | trace | wait |",
        "|---|---|---|",
        "| 12.346 | KTH-SP2 | 4568 |",
        "| - | CTC | - |",
    ]
    assert (tmp_path / "t.csv").read_text().splitlines() == [
        "bsld,trace,wait",
        "12.34567,KTH-SP2,4567.8",
        ",CTC,",
    ]
    write_table(tmp_path, "u", rows[1:], missing="")
    assert (tmp_path / "u.md").read_text().splitlines()[-1] == "| CTC |  |"


def test_without_columns_a_row_with_another_key_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="extra"):
        write_table(tmp_path, "t", [{"trace": "A"}, {"trace": "B", "extra": 1}])


def test_rows_not_rerun_keep_other_traces_and_read_numbers_back(tmp_path) -> None:
    from rush.studies.tables import in_trace_order, rows_not_rerun

    rows = [
        {"trace": "CTC-SP2", "value": 15.104861719292916, "count": 3, "note": None, "label": "+5.00"},
        {"trace": "KTH-SP2", "value": 87.12, "count": 0, "note": "x", "label": "[36]"},
    ]
    write_table(tmp_path, "t", rows)
    assert rows_not_rerun(tmp_path / "missing.csv", ["KTH-SP2"]) == []
    kept = rows_not_rerun(tmp_path / "t.csv", ["KTH-SP2"], numbers=True)
    assert kept == [{**rows[0], "label": 5.0}]  # every cell as written, numbers as numbers
    assert type(kept[0]["count"]) is int and kept[0]["note"] is None
    as_text = rows_not_rerun(tmp_path / "t.csv", ["KTH-SP2"])
    assert as_text[0]["label"] == "+5.00" and as_text[0]["value"] == "15.104861719292916"
    # Written again, the kept raw row is rounded in Markdown as a fresh one is.
    write_table(tmp_path, "again", kept)
    assert "| 15.105 |" in (tmp_path / "again.md").read_text()
    order = ["KTH-SP2", "CTC-SP2"]
    mixed = [{"trace": "HPC2N"}, {"trace": "CTC-SP2"}, {"trace": "KTH-SP2"}]
    assert [r["trace"] for r in in_trace_order(mixed, order)] == ["KTH-SP2", "CTC-SP2", "HPC2N"]
