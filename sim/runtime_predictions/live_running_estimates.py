"""Rule R (issue 29, round 30, helper r29run; ``estimates/dev_log.md``): the live start estimates
at submit recomputed under rule L2 and rule R on the runs made after the replay's key fix.

    python sim/runtime_predictions/live_running_estimates.py --models DIR

D32/D35's method (``live_tail_estimates.py``): for each kept run of :data:`RUNS` (CTC's and KTH's
r29live2 runs, BLUE's r29live runs), rush's estimate at submit made again as ``live_bias.py``
makes it (the core's pass on the run's recorded state at the live estimate's moment, the run's
model fed the run's completions), once with the core's estimate rule L2 and once with R
(``live_bias.RUNNING_R_VARIANT``); on the jobs both rush and the RJMS estimated at submit that
waited over an hour, beside the RJMS's own and rush's live figure. Trace minutes. Writes
``results/live_running_estimates.{md,json}``. Part (b) of r29run's criterion reads it: R below L2
on every CTC run, at most L2 + 1 minute on every KTH run (BLUE reported), each run valid only if
L2's recomputed MAE is within 5 minutes of the live one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for extra in (ROOT, HERE, ROOT / "sim" / "start_estimates"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from rush.studies import arg_types  # noqa: E402

# The runs after the key fix (sim/start_estimates/results/repeats/), per window.
RUNS = {
    "CTC": (
        ("flux", "rep5"),
        ("flux", "rep6"),
        ("fluxion", "rep6"),
        ("fluxion", "rep7"),
        ("fluxion", "rep8"),
    ),
    "KTH": (("flux", "rep3"), ("flux", "rep4"), ("flux", "rep5"), ("fluxion", "rep3"), ("fluxion", "rep4")),
    "BLUE": (("flux", "rep4"), ("flux", "rep5"), ("fluxion", "rep5"), ("fluxion", "rep6")),
}
# Part (b): R's MAE against L2's on each run: below it on CTC, at most this many minutes above on KTH.
KTH_SLACK = 1.0


def holds(window: str, row: dict) -> bool | None:
    """Part (b) on one run: None where the window decides nothing (BLUE)."""
    if window == "CTC":
        return row["T"] < row["L2"]
    if window == "KTH":
        return row["T"] <= row["L2"] + KTH_SLACK
    return None


def reading(table: list[dict]) -> str:
    """Part (b): met if every CTC and KTH run is there, valid, and holds."""
    decided = [t for t in table if t["window"] in ("CTC", "KTH")]
    if len(decided) != len(RUNS["CTC"]) + len(RUNS["KTH"]):
        return "not met (a run is missing)"
    if not all(t["valid"] for t in decided):
        return "not met (a run is invalid)"
    return "met" if all(t["holds"] for t in decided) else "not met"


def markdown(table: list[dict]) -> str:
    lines = [
        "# Rule R: live estimates at submit recomputed under L2 and R (round 30, r29run, part b)",
        "",
        "Written by `python sim/runtime_predictions/live_running_estimates.py` (see its docstring). "
        "Jobs both rush and the RJMS estimated at submit, waited over an hour; MAE, trace minutes; "
        "signed: estimate minus real start; late: how many of R's estimates are after the real start; "
        "valid: L2 recomputed within 5 minutes of rush live; holds: R below L2 (CTC), at most L2 + "
        f"{KTH_SLACK:g} (KTH), BLUE reported only.",
        "",
        "| window | run | kept run | jobs | rush live | L2 | R | RJMS | L2 signed | R signed | R late | valid | holds |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for t in table:
        held = "-" if t["holds"] is None else ("yes" if t["holds"] else "no")
        lines.append(
            f"| {t['window']} | {t['run']} | {t['source']} | {t['jobs']} | {t['rush_live']:.1f} | "
            f"{t['L2']:.1f} | {t['T']:.1f} | {t['rjms']:.1f} | {t['L2_signed']:+.1f} | "
            f"{t['T_signed']:+.1f} | {t['T_late']} | {'yes' if t['valid'] else 'no'} | {held} |"
        )
    lines += ["", f"Part (b): **{reading(table)}**. (Columns `R`, `R signed`, `R late` are R's.)"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models",
        required=True,
        type=arg_types.folder,
        help="DIR with the windows' live models (trained there if absent)",
    )
    args = parser.parse_args(argv)
    args.models.mkdir(parents=True, exist_ok=True)
    import live_bias
    import live_tail_estimates
    import live_windows

    table = []
    for window, runs in RUNS.items():
        w = next(x for x in live_windows.WINDOWS if x.name == window)
        model = live_bias.model_path(w, args.models)
        for rjms, wanted in runs:
            sources = dict(live_windows.repeat_sources(live_windows.RUNS[rjms][0], rjms, w))
            if wanted not in sources:
                print(window, rjms, wanted, "missing", flush=True)
                continue
            path = sources[wanted]
            variants = ("queue: L2", live_bias.RUNNING_R_VARIANT)
            rows = live_bias.reconstruct(w, rjms, model, variants=variants, path=path)
            row = live_tail_estimates.compare(
                rows, live_windows.read_rows(path), live_bias.RUNNING_R_VARIANT, window
            )
            if row is not None:
                table.append({"window": window, "run": rjms, "source": wanted, **row})
                table[-1]["holds"] = holds(window, row)
            print(window, rjms, wanted, row, flush=True)
    out = HERE / "results" / "live_running_estimates"
    out.with_suffix(".json").write_text(
        json.dumps({"rows": table, "reading": reading(table)}, indent=1) + "\n"
    )
    text = markdown(table)
    out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
