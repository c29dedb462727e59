"""D32 (issue 29, round 29; ``estimates/dev_log.md``): BLUE's live start estimates at submit
recomputed with the replayed users keyed as the live model's training history keys them.

    python sim/runtime_predictions/live_keyed_estimates.py --models DIR

For every kept run of window BLUE under sched-backfill (``flux``) and Fluxion: rush's estimate at
submit made again as ``live_bias.py`` makes it (the core's pass on the run's recorded state at the
live estimate's moment, rule L2, the run's model fed the run's completions), once with the users
keyed as recorded (a ``trace-N`` tag under its name's key) and once keyed as the trace's number N
(``live_history_pit.keyed_as_trained``, D31); on the jobs both rush and the RJMS estimated at
submit that waited over an hour, beside the RJMS's own. Trace minutes. Writes
``results/live_keyed_estimates.{md,json}``. Chooses nothing.

Since r29keys (D33) rush itself keys a ``trace-N`` tag as N on a ``trace-id`` model, so both
passes give the keyed figures (``results/live_keyed_estimates_fixed.md``); D32's "as recorded"
column is reproduced only at a433a04, before the fix.
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
RUNS = ("flux", "fluxion")
VARIANT = "queue: L2"


def compare(rows: list[dict], keyed: list[dict], csv_rows: list[dict], window: str = WINDOW) -> dict | None:
    """The jobs of the measured class both rush and the RJMS estimated at submit (the recorded
    pass's rows and the keyed pass's, made at the same moments): MAE (trace minutes) of rush live,
    L2 recomputed as recorded, L2 keyed, the RJMS; signed means of both L2s; |L2 - live|."""
    import live_bias

    if [r["job"] for r in rows] != [r["job"] for r in keyed]:
        raise ValueError("the keyed pass's moments differ from the recorded pass's")
    by_job = {r["job"]: r[VARIANT] for r in keyed}
    merged = [{**r, "keyed": by_job[r["job"]]} for r in rows]
    cls, own, mine = live_bias.both_estimated(window, merged, csv_rows, (VARIANT, "keyed"))
    if not mine:
        return None
    mae = live_bias.mae_minutes
    return {
        "wait": cls,
        "jobs": len(mine),
        "rush_live": mae(r["live"] for r in mine),
        "L2": mae(r[VARIANT] for r in mine),
        "L2_keyed": mae(r["keyed"] for r in mine),
        "rjms": mae(own[str(r["job"])] for r in mine),
        "L2_signed": statistics.fmean(r[VARIANT] for r in mine) / 60,
        "L2_keyed_signed": statistics.fmean(r["keyed"] for r in mine) / 60,
        "L2_vs_live": mae(r[VARIANT] - r["live"] for r in mine),
    }


def reading(table: list[dict]) -> str:
    """D32's pre-set reading on the runs since L2 (``rep`` sources): keyed L2 below the RJMS's
    own on every one of them, or not."""
    since = [t for t in table if t["source"].startswith("rep")]
    if not since:
        return "no run since L2"
    below = all(t["L2_keyed"] < t["rjms"] for t in since)
    return "would close the gap" if below else "would not close the gap"


def markdown(table: list[dict]) -> str:
    lines = [
        "# D32: BLUE's live estimates at submit, recomputed with the users keyed as trained",
        "",
        "Written by `python sim/runtime_predictions/live_keyed_estimates.py` (see its docstring). "
        "Jobs both rush and the RJMS estimated at submit, waited over an hour; MAE, trace minutes; "
        "`L2`: recomputed as recorded, `L2 keyed`: the users keyed as the model's training history; "
        "signed: estimate minus real start; |L2 - live|: how well the recomputation gives the live "
        "estimates back.",
        "",
        "| run | kept run | jobs | rush live | L2 | L2 keyed | RJMS | L2 signed | L2 keyed signed | |L2 - live| |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in table:
        lines.append(
            f"| {t['run']} | {t['source']} | {t['jobs']} | {t['rush_live']:.1f} | {t['L2']:.1f} | "
            f"{t['L2_keyed']:.1f} | {t['rjms']:.1f} | {t['L2_signed']:+.1f} | {t['L2_keyed_signed']:+.1f} | "
            f"{t['L2_vs_live']:.1f} |"
        )
    lines += ["", f"D32's reading (runs since L2): the keys **{reading(table)}**."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arg_types.add_models_folder(parser)
    args = parser.parse_args(argv)
    models = args.models
    models.mkdir(parents=True, exist_ok=True)
    import live_bias
    import live_history_pit
    import live_windows

    w = next(x for x in live_windows.WINDOWS if x.name == WINDOW)
    model = live_bias.model_path(w, models)
    table = []
    for rjms in RUNS:
        for source, path in live_windows.repeat_sources(live_windows.RUNS[rjms][0], rjms, w):
            rows = live_bias.reconstruct(w, rjms, model, variants=(VARIANT,), path=path)
            with live_history_pit.keyed_as_trained():
                keyed = live_bias.reconstruct(w, rjms, model, variants=(VARIANT,), path=path)
            row = compare(rows, keyed, live_windows.read_rows(path))
            if row is not None:
                table.append({"run": rjms, "source": source, **row})
            print(rjms, source, row, flush=True)
    live_bias.write_report(
        "live_keyed_estimates", {"rows": table, "reading": reading(table)}, markdown(table)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
