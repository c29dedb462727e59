"""The simulator on nodes (issue 20, "Speed and scale"): whole traces of node-level logs
(SDSC-BLUE: 144 nodes x 8 cores, LLNL-Atlas: 1 152 x 8, whole-node allocation) simulated on
their nodes next to the same workload as processor counts, in the same run. Target: the
node-level run within 3x of the processor-count run. Also EASY on a processor-only trace
(KTH-SP2, CTC-SP2: one-core nodes) with ``on_nodes=False``, whose figure is the one to compare
with earlier runs (no target here beyond "as fast as before"; its on-nodes twin is printed
for reference).

Protocol: each trace is read once; a warm-up simulation of its first 2 000 jobs in each mode
loads (or compiles) the kernels (its time is printed as ``first``); then each mode runs the
whole trace ``--repeat`` times, alternating modes, and the median is printed. The start
times of the two runs are compared too (they need not be equal on whole nodes: a job can
wait for whole nodes where the processor count would have let it start).

Run: ``RUSH_TRACE_MIRROR=../shared/traces python benchmarks/bench_sim_nodes.py
[--traces SDSC-BLUE,LLNL-Atlas,KTH-SP2] [--repeat 3] [--placement first-fit]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from rush.core.config import CoreConfig
from rush.simulator.engine import simulate
from rush.workload.model import Workload, workload_from_trace
from rush.workload.swf import read_swf

TRACES = {
    "SDSC-BLUE": "SDSC-BLUE-2000-4.2-cln.swf.gz",
    "LLNL-Atlas": "LLNL-Atlas-2006-2.1-cln.swf.gz",
    "KTH-SP2": "KTH-SP2-1996-2.1-cln.swf.gz",
    "CTC-SP2": "CTC-SP2-1996-3.1-cln.swf.gz",
}
# Leaf switches for topology placement: SDSC-BLUE and LLNL-Atlas as pods of 16 and 32 nodes.
NODES_PER_LEAF = {"SDSC-BLUE": 16, "LLNL-Atlas": 32}
WARM_UP_JOBS = 2_000
TARGET_RATIO = 3.0


def mirror() -> Path:
    default = Path(__file__).resolve().parents[2] / "shared" / "traces"
    return Path(os.environ.get("RUSH_TRACE_MIRROR", default))


def run(workload: Workload, config: CoreConfig, on_nodes: bool, leaf: int) -> tuple[float, np.ndarray]:
    t0 = time.perf_counter()
    result = simulate(workload, config, on_nodes=on_nodes, nodes_per_leaf=leaf)
    return time.perf_counter() - t0, result.start


def bench_trace(name: str, config: CoreConfig, repeat: int) -> None:
    path = mirror() / TRACES[name]
    if not path.exists():
        print(f"{name}: {path} missing (set RUSH_TRACE_MIRROR)")
        return
    workload = workload_from_trace(read_swf(path))
    machine = workload.machine
    leaf = NODES_PER_LEAF.get(name, 0)
    shape = f"{machine.nodes} x {machine.cores_per_node}" if machine else "no machine"
    warm = workload.subset(np.arange(min(WARM_UP_JOBS, len(workload))))
    first = {mode: run(warm, config, mode, leaf)[0] for mode in (False, True)}
    times: dict[bool, list[float]] = {False: [], True: []}
    starts: dict[bool, np.ndarray] = {}
    for _ in range(repeat):
        for mode in (False, True):
            seconds, starts[mode] = run(workload, config, mode, leaf)
            times[mode].append(seconds)
    procs_s = statistics.median(times[False])
    nodes_s = statistics.median(times[True])
    ratio = nodes_s / procs_s
    verdict = "ok" if ratio <= TARGET_RATIO else "MISSED"
    same = float(np.mean(starts[False] == starts[True]))
    print(
        f"{name:11} {len(workload):>7} {shape:>10} {config.placement:10} {procs_s:8.2f} {nodes_s:8.2f} "
        f"{ratio:6.2f}x {verdict:6} {first[False]:6.2f} {first[True]:6.2f}  {same:6.1%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", default="SDSC-BLUE,LLNL-Atlas,KTH-SP2")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--policy", default="FCFS")
    parser.add_argument("--placement", default="first-fit")
    args = parser.parse_args()
    config = replace(CoreConfig.from_names(args.policy, "easy", 200_000), placement=args.placement)
    print(
        f"load average {os.getloadavg()[0]:.2f}; {args.policy} EASY, median of {args.repeat} whole-trace runs"
    )
    print(
        f"{'trace':11} {'jobs':>7} {'machine':>10} {'placement':10} {'procs s':>8} {'nodes s':>8} "
        f"{'ratio':>7} {'<=3x':6} {'1st p':>6} {'1st n':>6}  {'same start':>6}"
    )
    for name in args.traces.split(","):
        bench_trace(name.strip(), config, args.repeat)
    print(f"load average {os.getloadavg()[0]:.2f} after the run")


if __name__ == "__main__":
    main()
