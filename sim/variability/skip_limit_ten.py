"""The skip-limit plot on the ten paired trials 4000–4009 (paper variant): FCFS+EASY, RUSH at
limits 10 and 30 and without a limit, and the present-state oracle.

    python sim/variability/skip_limit_ten.py   # -> sim/variability/plots/skip_limit-ten.png

Pools the committed runs.csv.gz below; a (variant, scenario, policy, trial) found in two files is
taken from the first (FCFS+EASY is in several, the same jobs in each). No trial is rerun.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from rush.studies.contention_records import read_rows
from rush.studies.contention_report import summarise
from rush.studies.plots.contention import plot_study

HERE = Path(__file__).resolve().parent
FILES = (
    "results",
    "trials-4005",
    "unlimited-noise-4000",
    "trials-4005/unlimited-noise",
    "rush30-4000",
    "rush30-4005",
)
POLICIES = {"FCFS+EASY", "PRESENT-ORACLE", "RUSH", "RUSH-30", "RUSH-UNLIMITED"}


def pooled() -> list[dict]:
    rows: list[dict] = []
    seen: set[tuple] = set()
    for folder in FILES:
        fresh = [r for r in read_rows(HERE / folder / "runs.csv.gz") if r["policy"] in POLICIES]
        keys = {(r["variant"], r["scenario"], r["policy"], r["trial"]) for r in fresh}
        rows += [r for r in fresh if (r["variant"], r["scenario"], r["policy"], r["trial"]) not in seen]
        seen |= keys
    return rows


def main() -> None:
    rows = pooled()
    with tempfile.TemporaryDirectory() as tmp:
        plot_study(Path(tmp), rows, summarise(rows, []))
        shutil.copyfile(Path(tmp) / "plots" / "skip_limit.png", HERE / "plots" / "skip_limit-ten.png")
    print(HERE / "plots" / "skip_limit-ten.png")


if __name__ == "__main__":
    # No options: a flag given is refused (exit 2), not ignored while the files are rewritten.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
