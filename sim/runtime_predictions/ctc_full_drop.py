"""Which jobs carry CTC-SP2's full-set rush-Q swing between the quantile and the blended classes.

A diagnostic (round 7): rush-Q on CTC-SP2's full set with both class rules (the same predicted
runtimes), per-job bounded slowdowns compared; prints the share of the difference the top 10, 100,
1,000 jobs carry and the top jobs. Needs the cached `t23` walk-forward (``estimates/run.py``).

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 python sim/runtime_predictions/ctc_full_drop.py
"""

import sys
from pathlib import Path

import numpy as np

from rush.core.config import CoreConfig
from rush.simulator.engine import simulate
from rush.simulator.metrics import bounded_slowdown
from rush.studies.runtime_predictions import THRESHOLD
from rush.studies.runtime_predictions_quantiles import scheduler_inputs
from rush.workload.catalogue import load_trace
from rush.workload.model import workload_from_trace

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE / "estimates"), str(HERE)]
from class_rules import with_rule  # noqa: E402
from rush_q import default_walkforward  # noqa: E402

w = workload_from_trace(load_trace("CTC-SP2"))
wf = default_walkforward("CTC-SP2", "t23")
rows = np.arange(len(w))
out = {}
for rule in ("quantiles", "blend"):
    x = wf if rule == "quantiles" else with_rule(wf, rule)
    inputs, kw = scheduler_inputs("rush-Q", x, rows, 0.1)
    cfg = CoreConfig.from_names(kw.pop("policy"), "easy", THRESHOLD, kw.pop("scan", None), **kw)
    r = simulate(w, cfg, inputs)
    out[rule] = (bounded_slowdown(r, 10.0), r, inputs.runtime_class)
    print(rule, np.nanmean(out[rule][0]), flush=True)
a, b = out["quantiles"][0], out["blend"][0]
d = a - b
order = np.argsort(-np.abs(d))
print("total diff of sums", np.nansum(d), "n", len(d))
for k in (10, 100, 1000):
    print(f"top {k} jobs carry", np.nansum(d[order[:k]]) / np.nansum(d))
ra, rb = out["quantiles"][1], out["blend"][1]
for j in order[:12]:
    wait_q, wait_b = ra.start[j] - ra.submit[j], rb.start[j] - rb.submit[j]
    print(
        f"job {j}: bsld {a[j]:.0f} / {b[j]:.0f}, runtime {w.runtime[j]}, request {w.requested_time[j]}, "
        f"procs {w.procs[j]}, wait {wait_q:.0f} / {wait_b:.0f}, class {out['quantiles'][2][j]} / "
        f"{out['blend'][2][j]}, week {wf.week[j]}"
    )
big = order[:100]
print(
    "top-100: runtime<=10s share",
    np.mean(w.runtime[big] <= 10),
    "same class share",
    np.mean(out["quantiles"][2][big] == out["blend"][2][big]),
)
print("top-100 weeks", np.unique(wf.week[big], return_counts=True))
