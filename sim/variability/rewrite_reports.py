"""Write every committed report of this study again from its committed run records.

    python sim/variability/rewrite_reports.py [--plots]

For each folder below, its summary.json and tables.md are written from its runs.csv.gz and
predictions.csv.gz (rush.studies.contention_records.rewrite_report): no trial is rerun, nothing is
retrained. With --plots, the folders that commit plots get them drawn again. The dev/ tables have
no committed records and stay as they were written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rush.studies.contention_records import rewrite_report

HERE = Path(__file__).resolve().parent
# folder with runs.csv.gz -> its plots folder (None: it commits no plots)
FOLDERS: dict[str, str | None] = {
    "results": "plots",
    "trials-4005": "trials-4005/plots",
    "trials-4005/unlimited-noise": None,
    "trials-5000": "trials-5000/plots",
    "adpa-pdpa-4000": "adpa-pdpa-4000/plots",
    "unlimited-noise-4000": None,
    "rush-size-3000": None,
    "multipod/results": "multipod/plots",
    "multipod/trials-4003": "multipod/trials-4003/plots",
    "multipod/trials-5000": "multipod/trials-5000/plots",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plots", action="store_true", help="draw the committed plots again too")
    args = ap.parse_args()
    for folder, plots in FOLDERS.items():
        rewrite_report(HERE / folder, HERE / plots if args.plots and plots else None)
        print(f"{folder}: summary.json, tables.md" + (f", {plots}/" if args.plots and plots else ""))


if __name__ == "__main__":
    main()
