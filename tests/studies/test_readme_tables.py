"""The runtime-prediction study's README quotes its committed results files cell by cell
(``sim/runtime_predictions/readme_tables.py``): Table 6.6 on both job sets, the schedulers' parts,
the accuracy, the online columns and rush-Q's committed rows. A re-run that changes a results file
without the README, or a README edit that leaves the file, fails here. No simulation is run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.script_module import load_script

STUDY = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions"
tables = load_script(STUDY / "readme_tables.py", "readme_tables_under_test")


def test_every_claimed_readme_cell_is_the_committed_figure() -> None:
    mismatches = tables.audit()
    assert mismatches == [], "\n".join(
        f"README.md:{m.line} {m.claim} {m.job_set} {m.trace} {m.column}: {m.readme!r} but {m.file} says {m.committed!r}"
        for m in mismatches
    )


def test_table_6_6_is_claimed_on_both_job_sets_with_every_trace() -> None:
    readme = tables.markdown_tables(tables.README.read_text())
    claimed = {claim.name: tables.find_table(readme, claim) for claim in tables.CLAIMS}
    for name in ("Table 6.6, published job set", "Table 6.6, full job set"):
        traces = [row[0] for row in claimed[name].rows]
        assert traces == ["KTH-SP2", "CTC-SP2", "SDSC-BLUE", "SDSC-SP2"], name
    both = claimed["Table 6.6 with the starved-head rule, both job sets"]
    assert {row[0] for row in both.rows} == {"published", "full"}


def _readme_with(tmp_path: Path, old: str, new: str) -> Path:
    text = tables.README.read_text()
    assert text.count(old) == 1, old
    copy = tmp_path / "README.md"
    copy.write_text(text.replace(old, new))
    return copy


@pytest.mark.parametrize(
    ("old", "new", "claim", "column"),
    [
        (
            "| CTC-SP2 | 77,222 | **46** (1 [37])",
            "| CTC-SP2 | 77,222 | **45** (1 [37])",
            "Table 6.6, full job set",
            "EASY++",
        ),
        (
            "| KTH-SP2 | 27,954 | **30** (23 [36])",
            "| KTH-SP2 | 27,954 | **30** (23 [35])",
            "Table 6.6, published job set",
            "EASY++",
        ),
        ("| 2.9 | 23.6 |", "| 2.9 | 23.7 |", "Table 6.6, full job set", "EASY++, correct to request"),
        (
            "| KTH-SP2 | 357 s, 47 %",
            "| KTH-SP2 | 357 s, 48 %",
            "Prediction accuracy, published job set",
            "EASY++: median abs. error, underpredicted, accuracy",
        ),
        (
            "| 64.69 | 57.69 | 64.65 | 1.6 %",
            "| 64.69 | 57.69 | 64.66 | 1.6 %",
            "single runs of record: SPF-CI ranked",
            "H17 (confident only)",
        ),
        (
            "| rush-Q | 49.0 \u2192 **71.3**",
            "| rush-Q | 49.1 \u2192 **71.3**",
            "The starved-head rule",
            "improvement %",
        ),
        (
            "| CTC-SP2 | Gaussier online | jitter | 16 | 58.52 | 60.29 | 1.38 | 58.12 | 62.72 | -4.60 |",
            "| CTC-SP2 | Gaussier online | jitter | 16 | 58.52 | 60.29 | 1.38 | 58.12 | 62.72 | -1.20 |",
            "Table 6.6's columns over seeds",
            "minus SPF-CI: mean",
        ),
        (
            "| SDSC-BLUE | 16 | 73.91 | 71.60 | 73.18 (70.37-75.40)",
            "| SDSC-BLUE | 16 | 73.91 | 71.60 | 73.18 (70.37-75.41)",
            "H18 against SPF-CI over 16 tie-break seeds",
            "SPF-CI over seeds: mean (min-max)",
        ),
        (
            "| 62.68 (56.56-65.03)",
            "| 62.68 (56.56-65.02)",
            "H13a against SPF-CI",
            "SPF-CI, 8 seeds: mean (min-max)",
        ),
    ],
)
def test_a_changed_readme_cell_is_named(tmp_path: Path, old: str, new: str, claim: str, column: str) -> None:
    mismatches = tables.audit(_readme_with(tmp_path, old, new))
    assert [m.column for m in mismatches] == [column]
    assert mismatches[0].claim.startswith(claim)


def test_a_changed_results_cell_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    shutil.copytree(tables.RESULTS, results, ignore=shutil.ignore_patterns("*.png", "*.csv"))
    table = results / "full" / "table_6_6.md"
    table.write_text(table.read_text().replace("| 13 (32 [29]) | 6 ([15]) |", "| 13 (32 [29]) | 7 ([15]) |"))
    monkeypatch.setattr(tables, "RESULTS", results)
    mismatches = tables.audit()
    assert {(m.claim, m.trace, m.column, m.committed) for m in mismatches} == {
        ("Table 6.6, full job set", "SDSC-SP2", "Gaussier et al.", "7 ([15])"),
        ("Table 6.6 with the starved-head rule, both job sets", "SDSC-SP2", "Gaussier et al.", "7 ([15])"),
    }


def test_a_claimed_table_that_is_gone_is_an_error(tmp_path: Path) -> None:
    readme = _readme_with(
        tmp_path,
        "| trace | jobs | EASY++ | Gaussier et al. | FCFS-CI |",
        "| trace | n | EASY++ | Gaussier et al. | FCFS-CI |",
    )
    with pytest.raises(LookupError, match="Table 6.6, full job set"):
        tables.audit(readme)


def test_figures_read_through_bold_separators_brackets_and_arrows() -> None:
    assert tables.figures("**30** (was 29; 23 [36])") == ["30", "29", "23", "[36]"]
    assert tables.figures("**72.2** \u2192 70.2 (26,464)") == ["70.2", "26,464"]
    assert tables.figures("\u22124.05") == ["-4.05"]
    assert tables.figures("[19.47, 27.18]") == ["19.47", "27.18"]
    assert (
        tables.agrees("26,464", 26464.0)
        and tables.agrees("29.8", 29.772)
        and not tables.agrees("29.7", 29.772)
    )
    assert tables.agrees("47", 47.2) and not tables.agrees("46", 47.2)
