"""Reproduce the runtime-classification experiment.

For each trace (SDSC-SP2, CTC-SP2, KTH-SP2, SDSC-BLUE, HPC2N): one walk-forward per mode
(weekly, live); then EASY with FCFS, SPF, SAF and WFP3 under the five variants (base,
classification, classification-idempotent, class-clairvoyant, runtime-clairvoyant),
threshold 200,000 s, tau 10 s, predictions from the weekly mode. Writes to ``results/``:

* ``improvement.csv`` / ``.md``: each variant's mean bounded slowdown and its improvement over
  EASY-FCFS (base), the final value of the cumulative mean bounded slowdown;
* ``classification.csv`` / ``.md``: accuracy, precision, recall, false-small and false-large
  rates per trace and mode; kills and wasted area per policy;
* ``fairness.csv``: mean bounded slowdown of small vs large jobs per configuration;
* ``importances.csv``: per-week feature importances (weekly mode);
* ``cumulative_bsld_<trace>.png``: cumulative mean bounded slowdown over time per variant.

Configurations run in parallel with joblib (``--jobs``); with ``--dask ADDRESS`` they run on
a Dask cluster (e.g. one started by dask-jobqueue on Slurm) through joblib's dask backend.

    RUSH_TRACE_MIRROR=../shared/traces python sim/runtime_classes/run.py [--traces KTH-SP2,...]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import time
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed

TRACES = ("SDSC-SP2", "CTC-SP2", "KTH-SP2", "SDSC-BLUE", "HPC2N")
POLICIES = ("FCFS", "SPF", "SAF", "WFP3")
OUT = Path(__file__).parent / "results"


def walkforward(trace_name: str, mode: str):
    from rush.models.walkforward import predict_classes_walkforward
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    trace = load_trace(trace_name)
    workload = workload_from_trace(trace)
    return trace_name, mode, predict_classes_walkforward(workload, trace.header, mode=mode)


def simulate_all(trace_name: str, wf) -> list[dict]:
    from rush.core.config import CoreConfig
    from rush.models.variants import VARIANTS, variant_inputs
    from rush.sim.engine import simulate
    from rush.sim.metrics import compute_metrics, cumulative_bounded_slowdown, per_class
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    trace = load_trace(trace_name)
    workload = workload_from_trace(trace)
    actual_class = np.where(wf.runtime <= wf.divider_or_first(), 0, 1)
    rows = []
    for policy in POLICIES:
        for variant in VARIANTS:
            inputs, kwargs, _ = variant_inputs(variant, trace, workload, walkforward=wf)
            config = CoreConfig.from_names(policy, "easy", 200_000, **kwargs)
            result = simulate(workload, config, inputs)
            metrics = compute_metrics(result, tau=10.0)
            classes = per_class(result, actual_class, tau=10.0)
            times, cumulative = cumulative_bounded_slowdown(result, 10.0)
            rows.append(
                {
                    "trace": trace_name,
                    "policy": policy,
                    "variant": variant,
                    "mean_bounded_slowdown": metrics["mean_bounded_slowdown"],
                    "mean_wait": metrics["mean_wait"],
                    "utilization": metrics["utilization"],
                    "kills": int(result.requeues.sum()),
                    "wasted_area": float(result.wasted_area.sum()),
                    "bsld_small": classes.get("0", {}).get("mean_bounded_slowdown"),
                    "bsld_large": classes.get("1", {}).get("mean_bounded_slowdown"),
                    "cumulative": (np.asarray(times).tolist(), np.asarray(cumulative).tolist()),
                }
            )
    return rows


def backend(dask_address: str | None):
    if dask_address is None:
        return contextlib.nullcontext()
    try:
        from dask.distributed import Client
    except ImportError as exc:
        raise SystemExit("--dask needs dask[distributed]: pip install 'rush[dask]'") from exc
    from joblib import parallel_backend

    Client(dask_address)
    return parallel_backend("dask")


def write_table(name: str, rows: list[dict], columns: list[str]) -> None:
    with open(OUT / f"{name}.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(c)) for c in columns) + " |")
    (OUT / f"{name}.md").write_text("\n".join(lines) + "\n")


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", default=",".join(TRACES))
    parser.add_argument("--jobs", type=int, default=2, help="parallel workers (joblib)")
    parser.add_argument("--dask", default=None, help="Dask scheduler address, e.g. tcp://host:8786")
    args = parser.parse_args()
    traces = [t.strip() for t in args.traces.split(",") if t.strip()]
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.time()
    with backend(args.dask):
        walks = Parallel(n_jobs=args.jobs, verbose=5)(
            delayed(walkforward)(t, m) for t in traces for m in ("weekly", "live")
        )
        weekly = {t: wf for t, m, wf in walks if m == "weekly"}
        batches = Parallel(n_jobs=args.jobs, verbose=5)(delayed(simulate_all)(t, weekly[t]) for t in traces)
    rows = [row for batch in batches for row in batch]

    quality = []
    for t, m, wf in walks:
        s = wf.summary()
        quality.append(
            {
                "trace": t,
                "mode": m,
                "jobs": s["jobs"],
                "accuracy": s["accuracy"],
                "precision": s["precision"],
                "recall": s["recall"],
                "false_small_rate": s["false_small_rate"],
                "false_large_rate": s["false_large_rate"],
                "walkforward_seconds": wf.seconds,
            }
        )
    write_table("classification", quality, list(quality[0]))

    base = {
        r["trace"]: r["mean_bounded_slowdown"]
        for r in rows
        if r["policy"] == "FCFS" and r["variant"] == "base"
    }
    for r in rows:
        r["improvement_over_easy_fcfs_pct"] = (
            100.0 * (base[r["trace"]] - r["mean_bounded_slowdown"]) / base[r["trace"]]
        )
    write_table(
        "improvement",
        rows,
        [
            "trace",
            "policy",
            "variant",
            "mean_bounded_slowdown",
            "improvement_over_easy_fcfs_pct",
            "mean_wait",
            "utilization",
            "kills",
            "wasted_area",
        ],
    )
    write_table(
        "fairness", rows, ["trace", "policy", "variant", "bsld_small", "bsld_large", "kills", "wasted_area"]
    )
    importances = [
        {"trace": t, "week": w["week"], **w["importances"]}
        for t, wf in weekly.items()
        for w in wf.weekly
        if w.get("importances")
    ]
    if importances:
        write_table("importances", importances, list(importances[0]))
    plot(rows)
    (OUT / "run.json").write_text(
        json.dumps(
            {
                "traces": traces,
                "seconds": time.time() - started,
                "command": "python sim/runtime_classes/run.py --traces " + ",".join(traces),
            },
            indent=2,
        )
    )
    print(f"done in {time.time() - started:.0f} s; tables and plots in {OUT}")


def plot(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for trace in sorted({r["trace"] for r in rows}):
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
        for ax, policy in zip(axes, ("FCFS", "SPF"), strict=True):
            for r in rows:
                if r["trace"] == trace and r["policy"] == policy:
                    times, values = r["cumulative"]
                    ax.plot(np.asarray(times) / 86400, values, label=r["variant"])
            ax.set_title(f"{trace}: EASY-{policy}")
            ax.set_xlabel("days since first submit")
            ax.set_yscale("log")
        axes[0].set_ylabel("cumulative mean bounded slowdown")
        axes[1].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(OUT / f"cumulative_bsld_{trace}.png", dpi=90)
        plt.close(fig)


if __name__ == "__main__":
    main()
