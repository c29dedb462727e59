"""``live_bias.py``'s and ``live_same_moment.py``'s tables on the Flux runs made after the replay's
user-key fix only (issue 29; README, round 31: post hoc, decides nothing).

    python sim/runtime_predictions/live_postfix.py --models DIR

r29keys fixed how a replayed job tagged ``user=trace-N`` meets its user's trained history (README,
round 29). The runs made since then are the ``repN`` of ``POST_FIX`` and after; every earlier run
of a window under sched-backfill (``flux``) or Fluxion fed rush's predictor no user history, and
the two scripts' committed tables (``results/live_bias.md``, ``results/live_same_moment.md``) read
those. Slurm replays carry no user tag (one account), so their runs are not affected and not
here. Writes ``results/live_bias_postfix.{md,csv}`` and ``results/live_same_moment_postfix.{md,csv}``,
each script's own rows and markdown on these runs.
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

import live_bias  # noqa: E402
import live_same_moment  # noqa: E402
import live_windows  # noqa: E402

from rush.studies import arg_types  # noqa: E402

# (window, run) -> the first kept run made after the fix (the README says which: r29live's BLUE
# runs, r29live2's CTC and KTH runs, r29live3's SDSC runs); every later repN is after it too.
POST_FIX = {
    ("SDSC", "flux"): 2,
    ("SDSC", "fluxion"): 2,
    ("CTC", "flux"): 5,
    ("CTC", "fluxion"): 6,
    ("BLUE", "flux"): 4,
    ("BLUE", "fluxion"): 5,
    ("KTH", "flux"): 3,
    ("KTH", "fluxion"): 3,
}


NOTE = (
    "Written by `python sim/runtime_predictions/live_postfix.py` (see its docstring): the table below, "
    "as its script writes it, on the Flux runs made after the replay's user-key fix only.\n\n"
)


def post_fix_runs() -> list[tuple]:
    """(window, run, CSV, source) of every kept run made after the fix, in the windows' order."""
    runs = []
    for w in live_windows.WINDOWS:
        for rjms in w.runs:
            first = POST_FIX.get((w.name, rjms))
            if first is None:
                continue
            kind = live_windows.RUNS[rjms][0]
            runs += [
                (w, rjms, path, source)
                for source, path in live_windows.repeat_sources(kind, rjms, w)
                if source.startswith("rep") and int(source[3:]) >= first
            ]
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arg_types.add_models_folder(parser)
    models = parser.parse_args(argv).models
    models.mkdir(parents=True, exist_ok=True)
    bias, same = [], []
    for w, rjms, path, source in post_fix_runs():  # the results written after each run
        bias += live_bias.run_rows(models, w, rjms, path, source)
        same += live_same_moment.run_rows(models, w, rjms, path, source)
        for stem, rows, script in (
            ("live_bias", bias, live_bias),
            ("live_same_moment", same, live_same_moment),
        ):
            ordered = live_bias.in_order(rows)
            live_bias.write_results(f"{stem}_postfix", ordered, NOTE + script.markdown(ordered))
        print(w.name, rjms, source, "done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
