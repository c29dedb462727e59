"""D-h19 (post hoc, decides nothing; round 25): where H19 ("SPF-CI backfilled on Gaussier online")
loses against SPF-CI. Per trace (published set, ties by arrival, the runs of record): jobs
backfilled, mean wait and mean bounded slowdown of the jobs SPF-CI's classifier called small and
of the others, the share of jobs whose prediction was below their runtime, and the mean delay of
each run's start past the first reservation the pass gave it (``first_reservation``: how far
predicted reservations slip). Writes ``results/published/h19_diagnostic.md``.

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 15 \\
        python sim/runtime_predictions/h19_diagnostic.py [--traces KTH-SP2,...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rush.studies.arg_types import names

HERE = Path(__file__).parent
TRACES = ("KTH-SP2", "CTC-SP2", "SDSC-SP2", "SDSC-BLUE")
RULES = ("SPF-CI (classifier)", "SPF-CI backfilled on Gaussier online", "SPF-CI backfilled on EASY++ online")


def _trace_rows(trace: str) -> list[str]:
    import numpy as np

    sys.path.insert(0, str(HERE))
    import rush_q

    from rush.core.config import CoreConfig
    from rush.models.runtime_quantiles_features import DEFAULT_FEATURE_SET
    from rush.models.walkforward import published_job_set
    from rush.simulator.engine import simulate
    from rush.simulator.metrics import bounded_slowdown
    from rush.studies.runtime_predictions import TAU, THRESHOLD
    from rush.studies.runtime_predictions_quantiles import scheduler_inputs
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    full = workload_from_trace(load_trace(trace))
    rows = np.flatnonzero((full.runtime > 0) & (full.runtime < full.requested_time))
    workload = published_job_set(full)
    wf = rush_q.default_walkforward(trace, DEFAULT_FEATURE_SET)
    cw = rush_q.classifier_walkforward(trace, "published")
    out = []
    for name in RULES:
        inputs, kw = scheduler_inputs(name, wf, rows, 0.1, classifier=cw)
        config = CoreConfig.from_names(kw.pop("policy"), "easy", THRESHOLD, kw.pop("scan", None), **kw)
        r = simulate(workload, config, inputs)
        wait = r.start - r.submit
        bsld = bounded_slowdown(r, tau=TAU)  # the study's metric, job by job
        ran = r.end - r.start
        small = np.asarray(inputs.runtime_class) == 0
        reserved = np.isfinite(r.attributes["first_reservation"])
        slip = (r.start - r.attributes["first_reservation"])[reserved]
        est = r.attributes.get("estimate")
        under = f"{100 * np.mean(est < ran):.0f} %" if est is not None else "-"
        out.append(
            f"| {trace} | {name} | {int(r.backfilled.sum()):,} | {wait[small].mean():,.0f} | "
            f"{wait[~small].mean():,.0f} | {bsld[small].mean():.2f} | {bsld[~small].mean():.2f} | {bsld.mean():.2f} | "
            f"{under} | {reserved.sum():,} | {slip.mean():,.0f} |"
        )
        print(out[-1], flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=names(TRACES), default=",".join(TRACES))
    args = parser.parse_args()
    run = list(args.traces)
    lines = [
        "| trace | scheduler | backfilled | mean wait, small (s) | mean wait, large (s) | mean bsld, small "
        "| mean bsld, large | mean bsld | predicted below runtime | jobs given a reservation "
        "| mean start past first reservation (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for trace in run:
        lines += _trace_rows(trace)
    (HERE / "results" / "published" / "h19_diagnostic.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
