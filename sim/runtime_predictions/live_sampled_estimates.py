"""D36 (issue 29, round 31, helper r29mc; ``estimates/dev_log.md``): the live start estimates at
submit recomputed under rule L2 and, post hoc, rules MR and M (the median of the starts over
sampled scenarios; neither is in the core) on BLUE's and CTC's runs after the replay's key fix.

    python sim/runtime_predictions/live_sampled_estimates.py --models DIR

D32/D35's method (``live_tail_estimates.py``): for each run of :data:`RUNS`, rush's estimate at
submit made again as ``live_bias.py`` makes it (the core's pass on the run's recorded state at the
live estimate's moment, the run's model fed the run's completions), with L2 and with
``live_bias.SAMPLED_RUNNING_VARIANT`` / ``live_bias.SAMPLED_VARIANT``; on the jobs both rush and the
RJMS estimated at submit that waited over an hour, beside the RJMS's own and rush's live figure.
Trace minutes. Writes ``results/live_sampled_estimates.{md,json}``. A diagnostic: it decides
nothing (each run valid only if L2's recomputed MAE is within 5 minutes of the live one).
"""

from __future__ import annotations

import argparse
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
    "BLUE": (("flux", "rep4"), ("flux", "rep5"), ("fluxion", "rep5"), ("fluxion", "rep6")),
    "CTC": (
        ("flux", "rep5"),
        ("flux", "rep6"),
        ("fluxion", "rep6"),
        ("fluxion", "rep7"),
        ("fluxion", "rep8"),
    ),
}
RULES = ("MR", "M")


def markdown(table: list[dict]) -> str:
    lines = [
        "# D36: live estimates at submit recomputed under L2, MR and M (round 31, r29mc, post hoc)",
        "",
        "Written by `python sim/runtime_predictions/live_sampled_estimates.py` (see its docstring). "
        "Jobs both rush and the RJMS estimated at submit, waited over an hour; MAE, trace minutes; "
        "signed: estimate minus real start; valid: L2 recomputed within 5 minutes of rush live. "
        "Neither MR nor M is in the core: a diagnostic, it decides nothing.",
        "",
        "| window | run | kept run | jobs | rush live | L2 | MR | M | RJMS | L2 signed | MR signed | M signed | valid |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for t in table:
        lines.append(
            f"| {t['window']} | {t['run']} | {t['source']} | {t['jobs']} | {t['rush_live']:.1f} | "
            f"{t['L2']:.1f} | {t['MR']:.1f} | {t['M']:.1f} | {t['rjms']:.1f} | {t['L2_signed']:+.1f} | "
            f"{t['MR_signed']:+.1f} | {t['M_signed']:+.1f} | {'yes' if t['valid'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arg_types.add_models_folder(parser)
    args = parser.parse_args(argv)
    args.models.mkdir(parents=True, exist_ok=True)
    import live_bias
    import live_tail_estimates
    import live_windows

    variants = {"MR": live_bias.SAMPLED_RUNNING_VARIANT, "M": live_bias.SAMPLED_VARIANT}
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
            rows = live_bias.reconstruct(
                w, rjms, model, variants=("queue: L2", *variants.values()), path=path
            )
            csv_rows = live_windows.read_rows(path)
            row = None
            for rule in RULES:
                part = live_tail_estimates.compare(rows, csv_rows, variants[rule], window)
                if part is None:
                    break
                row = {**part, **(row or {})}
                row[rule], row[f"{rule}_signed"] = part["T"], part["T_signed"]
            if row is not None:
                row = {k: v for k, v in row.items() if not k.startswith("T")}
                table.append({"window": window, "run": rjms, "source": wanted, **row})
            print(window, rjms, wanted, row, flush=True)
    live_bias.write_report("live_sampled_estimates", {"rows": table}, markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
