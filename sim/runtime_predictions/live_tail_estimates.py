"""Rule T (issue 29, round 30; ``estimates/dev_log.md``): BLUE's live start estimates at submit
recomputed under rule L2 and rule T on the runs made after the replay's key fix.

    python sim/runtime_predictions/live_tail_estimates.py --models DIR

D32's method (``live_keyed_estimates.py``): for each of r29live's four BLUE runs after the key fix
(sched-backfill ``rep4``, ``rep5``; Fluxion ``rep5``, ``rep6``), rush's estimate at submit made
again as ``live_bias.py`` makes it (the core's pass on the run's recorded state at the live
estimate's moment, the run's model fed the run's completions), once with the core's estimate
rule L2 and once with T (``live_bias.TAIL_VARIANT``); on the jobs both rush and the RJMS
estimated at submit that waited over an hour, beside the RJMS's own and rush's live figure.
Trace minutes. Writes ``results/live_tail_estimates.{md,json}``. Part (c) of round 30's criterion
reads it: T's MAE below L2's on every run, each run valid only if L2's recomputed MAE is within 5
minutes of the live one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for extra in (ROOT, HERE, ROOT / "sim" / "start_estimates"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from rush.studies import arg_types  # noqa: E402

WINDOW = "BLUE"
# r29live's runs after the key fix (sim/start_estimates/results/repeats/).
RUNS = (("flux", "rep4"), ("flux", "rep5"), ("fluxion", "rep5"), ("fluxion", "rep6"))
L2 = "queue: L2"
VALID_MINUTES = 5.0


def compare(rows: list[dict], csv_rows: list[dict], tail: str, window: str = WINDOW) -> dict | None:
    """The jobs of the measured class both rush and the RJMS estimated at submit: their count,
    MAE (trace minutes) of rush live, L2 and T recomputed and the RJMS's own; signed means of L2
    and T; whether the run is valid (L2 within :data:`VALID_MINUTES` of live) and T below L2."""
    import live_bias

    cls, own, mine = live_bias.both_estimated(window, rows, csv_rows, (L2, tail))
    if not mine:
        return None
    mae = live_bias.mae_minutes
    row = {
        "wait": cls,
        "jobs": len(mine),
        "rush_live": mae(r["live"] for r in mine),
        "L2": mae(r[L2] for r in mine),
        "T": mae(r[tail] for r in mine),
        "rjms": mae(own[str(r["job"])] for r in mine),
        "L2_signed": statistics.fmean(r[L2] for r in mine) / 60,
        "T_signed": statistics.fmean(r[tail] for r in mine) / 60,
        "T_late": sum(r[tail] > 0 for r in mine),
    }
    row["valid"] = abs(row["L2"] - row["rush_live"]) <= VALID_MINUTES
    row["T_below_L2"] = row["T"] < row["L2"]
    row["T_below_rjms"] = row["T"] < row["rjms"]
    return row


def reading(table: list[dict]) -> str:
    """Part (c): met if every run is valid and T's MAE is below L2's on each of them."""
    if len(table) != len(RUNS):
        return "not met (a run is missing)"
    if not all(t["valid"] for t in table):
        return "not met (a run is invalid)"
    return "met" if all(t["T_below_L2"] for t in table) else "not met"


def markdown(table: list[dict]) -> str:
    lines = [
        "# Rule T: BLUE's live estimates at submit recomputed under L2 and T (round 30, part c)",
        "",
        "Written by `python sim/runtime_predictions/live_tail_estimates.py` (see its docstring). Jobs "
        "both rush and the RJMS estimated at submit, waited over an hour; MAE, trace minutes; signed: "
        "estimate minus real start; late: how many of T's estimates are after the real start; valid: "
        f"L2 recomputed within {VALID_MINUTES:g} minutes of rush live.",
        "",
        "| run | kept run | jobs | rush live | L2 | T | RJMS | L2 signed | T signed | T late | valid |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for t in table:
        lines.append(
            f"| {t['run']} | {t['source']} | {t['jobs']} | {t['rush_live']:.1f} | {t['L2']:.1f} | "
            f"{t['T']:.1f} | {t['rjms']:.1f} | {t['L2_signed']:+.1f} | {t['T_signed']:+.1f} | "
            f"{t['T_late']} | {'yes' if t['valid'] else 'no'} |"
        )
    lines += ["", f"Part (c), T's MAE below L2's on every run: **{reading(table)}**."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arg_types.add_models_folder(parser)
    args = parser.parse_args(argv)
    models = args.models
    models.mkdir(parents=True, exist_ok=True)
    import live_bias
    import live_windows

    w = next(x for x in live_windows.WINDOWS if x.name == WINDOW)
    model = live_bias.model_path(w, models)
    table = []
    for rjms, wanted in RUNS:
        sources = dict(live_windows.repeat_sources(live_windows.RUNS[rjms][0], rjms, w))
        if wanted not in sources:
            print(rjms, wanted, "missing", flush=True)
            continue
        path = sources[wanted]
        rows = live_bias.reconstruct(w, rjms, model, variants=(L2, live_bias.TAIL_VARIANT), path=path)
        row = compare(rows, live_windows.read_rows(path), live_bias.TAIL_VARIANT)
        if row is not None:
            table.append({"run": rjms, "source": wanted, **row})
        print(rjms, wanted, row, flush=True)
    live_bias.write_report("live_tail_estimates", {"rows": table, "reading": reading(table)}, markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
