"""The simulator on nodes (issues 20 and 31): whole traces of node-level logs (SDSC-BLUE: 144
nodes x 8 cores, LLNL-Atlas: 1 152 x 8, whole-node allocation) and processor-only traces
(KTH-SP2, CTC-SP2: one-core nodes) simulated on their nodes next to the same workload as
processor counts, in the same run. Target (issue 31): the node-level replay within 2x of the
processor-count replay on every trace.

Three modes per trace: ``procs`` (processor counts), ``nodes`` (``on_nodes=True`` as a user
runs it: where the nodes are interchangeable, :func:`rush.simulator.engine.interchangeable_nodes`,
the replay runs the count kernels, whose decisions are then the same), and ``kernels``
(``on_nodes=NODE_KERNELS``: the node kernels anyway, the figure of the node pass itself).

Protocol: each trace is read once; a warm-up simulation of its first 2 000 jobs in each mode
loads (or compiles) the kernels; then each mode runs the whole trace ``--repeat`` times,
alternating modes, and the median is printed, as wall seconds and as this process's CPU
seconds (on a shared, loaded machine the CPU figure is the steadier one; ratios use it). The
start times of the node-level and processor-count runs are compared too (they need not be
equal on whole nodes: a job can wait for whole nodes where the count would have let it start).

Recorded (``--placement topology``, CPU seconds, median of 3; nodes / node kernels as ratios to
procs from the same run). Before issue 31's reference-count change (load 0.5-11): SDSC-BLUE
3.40x / 3.38x, LLNL-Atlas 5.35x / 5.34x, KTH-SP2 3.05x / 3.14x, CTC-SP2 3.67x / 3.67x. After
(load 5.0-5.5): SDSC-BLUE 3.07x / 3.08x, LLNL-Atlas 3.65x / 3.57x, KTH-SP2 1.00x / 2.84x,
CTC-SP2 1.00x / 3.37x (one leaf: topology is first-fit there and the replay runs the counts).
Flat placement (placement reads a table of the pool built once per replay, not its named
tuple), main at load 3.2-3.4 then this at load 2.7: SDSC-BLUE 3.12x / 3.10x -> 2.38x / 2.39x,
LLNL-Atlas 3.61x / 3.57x -> 3.10x / 3.09x, KTH-SP2 1.00x / 2.89x -> 1.01x / 2.28x, CTC-SP2
1.01x / 3.48x -> 1.00x / 2.80x. Passes without node-length copies (scratch rows in that table;
the EASY pass inlined into scheduling_pass), main then this at load 4.8-5.1: SDSC-BLUE 2.44x /
2.43x -> 1.82x / 1.83x, LLNL-Atlas 3.08x / 3.12x -> 2.88x / 2.88x, KTH-SP2 0.99x / 2.20x ->
1.01x / 1.68x, CTC-SP2 1.00x / 2.77x -> 1.00x / 2.11x. The pass, the placement kernels and the
simulator's per-start helpers compiled without numba's runtime (no reference counts; the pass
allocates nothing), main then this at load 5.7-7.0: SDSC-BLUE 1.92x / 1.92x -> 1.00x / 1.01x,
LLNL-Atlas 2.93x / 2.93x -> 1.66x / 1.70x, KTH-SP2 1.00x / 1.74x -> 1.01x / 0.88x, CTC-SP2
1.00x / 2.18x -> 1.00x / 1.27x (every trace within 2x).

Run: ``RUSH_TRACE_MIRROR=../shared/traces python benchmarks/bench_sim_nodes.py
[--traces SDSC-BLUE,LLNL-Atlas,KTH-SP2,CTC-SP2] [--repeat 3] [--placement first-fit]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

import bench_args
import numpy as np

from rush.core.config import CoreConfig
from rush.simulator.engine import NODE_KERNELS, simulate
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
TARGET_RATIO = 2.0


def mirror() -> Path:
    default = Path(__file__).resolve().parents[2] / "shared" / "traces"
    return Path(os.environ.get("RUSH_TRACE_MIRROR", default))


MODES = {"procs": {}, "nodes": {"on_nodes": True}, "kernels": {"on_nodes": NODE_KERNELS}}


def run(workload: Workload, config: CoreConfig, mode: str, leaf: int) -> tuple[float, float, np.ndarray]:
    t0, c0 = time.perf_counter(), time.process_time()
    result = simulate(workload, config, nodes_per_leaf=leaf, **MODES[mode])
    return time.perf_counter() - t0, time.process_time() - c0, result.start


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
    for mode in MODES:
        run(warm, config, mode, leaf)
    wall: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    starts: dict[str, np.ndarray] = {}
    for _ in range(repeat):
        for mode in MODES:
            seconds, cpu_seconds, starts[mode] = run(workload, config, mode, leaf)
            wall[mode].append(seconds)
            cpu[mode].append(cpu_seconds)
    w = {mode: statistics.median(wall[mode]) for mode in MODES}
    c = {mode: statistics.median(cpu[mode]) for mode in MODES}
    ratio = c["nodes"] / c["procs"]
    kernels = c["kernels"] / c["procs"]
    verdict = "ok" if ratio <= TARGET_RATIO else "MISSED"
    same = float(np.mean(starts["procs"] == starts["nodes"]))
    exact = bool(np.array_equal(starts["nodes"], starts["kernels"]))
    print(
        f"{name:11} {len(workload):>7} {shape:>10} {w['procs']:7.2f} {w['nodes']:7.2f} {w['kernels']:7.2f}  "
        f"{c['procs']:6.2f} {c['nodes']:6.2f} {c['kernels']:6.2f}  {ratio:5.2f}x {verdict:6} {kernels:6.2f}x "
        f"{same:7.1%} {'yes' if exact else 'NO':>5}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=bench_args.names(), default="SDSC-BLUE,LLNL-Atlas,KTH-SP2,CTC-SP2")
    parser.add_argument("--repeat", type=bench_args.positive, default=3)
    parser.add_argument("--policy", default="FCFS")
    parser.add_argument("--placement", default="first-fit")
    args = parser.parse_args()
    config = replace(CoreConfig.from_names(args.policy, "easy", 200_000), placement=args.placement)
    print(
        f"load average {os.getloadavg()[0]:.2f}; {args.policy} EASY, median of {args.repeat} whole-trace runs; "
        "wall and CPU seconds per mode; ratios of CPU seconds to procs (the same-run reference)"
    )
    print(
        f"{'trace':11} {'jobs':>7} {'machine':>10} {'procs':>7} {'nodes':>7} {'kernels':>7}  "
        f"{'cpu p':>6} {'cpu n':>6} {'cpu k':>6}  {'nodes':>6} {'<=2x':6} {'kernels':>7} "
        f"{'same st':>7} {'=kern':>5}"
    )
    for name in args.traces:
        bench_trace(name.strip(), config, args.repeat)
    print(f"load average {os.getloadavg()[0]:.2f} after the run")


if __name__ == "__main__":
    main()
