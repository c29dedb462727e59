"""Which boosting size the runtime-quantile predictor deploys: the gain share it keeps, its kills.

Round 3 made the predictor's default 20 iterations at 0.2 (half the prediction cost of 40 at
0.1); SDSC-SP2's FCFS-classification-idempotent share of the class-clairvoyant gain then fell
from 0.795 to 0.684. The idempotent decision calls a job small when P(runtime <= divider) >= 0.1,
that is when its predicted 0.1 quantile is at or below the divider, so every large job whose
low quantile dips under the divider is a kill. The candidates, fixed with their reasons in
``dev_log.md`` (round 5) before they ran:

* ``20x0.2``: the current default (reference);
* ``40x0.1``: round 2's default (200 trees; 50.2 ms CPU in round 3's benchmark, the target's edge);
* ``40x0.1-15``: 40 iterations at 0.1 with 15 leaves a tree: the small steps the low quantile
  needs, at about the cost of fewer, bigger trees;
* ``20x0.2-isotonic``: the current trees, P(small) recalibrated each week by isotonic regression
  on past outcomes (``class_heads.isotonic_proba``), so the decision at 0.1 reads a calibrated
  probability.

Per trace and candidate: plain class accuracy, the idempotent false-small count (large jobs
called small at 0.1: the kills), and ``run.py``'s gain protocol under FCFS (base,
classification-idempotent, class-clairvoyant; EASY, threshold 200,000 s, tau 10 s).

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 10 \\
        python sim/runtime_predictions/estimates/tree_configs.py --traces SDSC-SP2 --candidates 40x0.1-15

Writes ``results/tree_configs/<trace>-<candidate>.json`` and the merged
``results/tree_configs.{csv,md}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

from rush.studies.arg_types import count, names, trace_specs
from rush.studies.tables import write_table

sys.path.insert(0, str(Path(__file__).parent))

from run import OUT, cached_walkforward, gain_rows  # noqa: E402

# name: (iterations, learning rate, leaves, isotonic recalibration of P(small))
CANDIDATES = {
    "20x0.2": (20, 0.2, 31, False),
    "40x0.1": (40, 0.1, 31, False),
    "40x0.1-15": (40, 0.1, 15, False),
    "20x0.2-isotonic": (20, 0.2, 31, True),
}
PARTS = OUT / "tree_configs"


def recalibrated(wf):
    """``wf`` with P(small) recalibrated weekly (isotonic, past outcomes) and its plain classes
    re-decided at thresholds chosen walk-forward on the recalibrated probability."""
    from class_heads import _ORIGIN, isotonic_proba

    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds

    _ORIGIN[id(wf)] = float(wf.submit[0])
    proba = isotonic_proba(wf, wf.end)
    threshold = walkforward_thresholds(proba, wf.runtime, wf.divider, wf.end, wf.submit)
    small = np.isfinite(proba) & (proba >= threshold)
    return dataclasses.replace(
        wf, proba_small=proba, threshold=threshold, predicted_class=np.where(small, 0, 1).astype(np.int8)
    )


def measure(trace: str, name: str, n_jobs: int) -> dict:
    from rush.models.decision_thresholds import IDEMPOTENT_THRESHOLD

    max_iter, rate, leaves, isotonic = CANDIDATES[name]
    t0 = time.time()
    wf = cached_walkforward(trace, 10_000, max_iter, n_jobs, rate, leaves)
    if isotonic:
        wf = recalibrated(wf)
    walked = time.time() - t0
    known = np.isfinite(wf.proba_small)
    large = known & (wf.runtime > wf.divider)
    row = {
        "trace": trace,
        "candidate": name,
        "accuracy": wf.class_walkforward().summary()["accuracy"],
        "false_small_idempotent": int(np.sum(large & (wf.proba_small >= IDEMPOTENT_THRESHOLD))),
        "large_jobs": int(large.sum()),
        "walkforward_seconds": walked,
    }
    (gain,) = [r for r in gain_rows(trace, wf, ("FCFS",)) if r["variant"] == "classification-idempotent"]
    row.update(
        share_of_bound=gain["share_of_bound"],
        improvement_pct=gain["improvement_pct"],
        clairvoyant_pct=gain["clairvoyant_pct"],
        kills=gain["kills"],
        seconds=time.time() - t0,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=trace_specs, default="SDSC-SP2,CTC-SP2")
    parser.add_argument("--candidates", type=names(tuple(CANDIDATES)), default=",".join(CANDIDATES))
    parser.add_argument(
        "--jobs", type=count(1), default=1, help="weeks fitted at once (the result is the same)"
    )
    args = parser.parse_args()
    PARTS.mkdir(parents=True, exist_ok=True)
    for trace in args.traces:
        for name in args.candidates:
            row = measure(trace, name, args.jobs)
            print(row, flush=True)
            (PARTS / f"{trace}-{name}.json").write_text(json.dumps(row, indent=1))
    rows = [json.loads(p.read_text()) for p in sorted(PARTS.glob("*.json"))]
    write_table(OUT, "tree_configs", rows, missing="")


if __name__ == "__main__":
    main()
