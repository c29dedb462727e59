"""Start-up benchmark: whole-process times of ``rush --help`` and a small replay.

Each command runs ``--repeat`` times (default 7) in fresh processes, interleaved so that a
busy machine slows every command alike; the median is printed next to two baselines measured
in the same run, ``python -c pass`` (the interpreter) and ``python -c "import numpy"``
(the least a numpy program pays). Targets (issue 8): ``rush --help`` <= 0.3 s and the
SDSC-SP2 EASY replay <= 0.6 s on a warm numba cache; on a slower or busier machine compare
the margins over the baselines instead.

The script first runs ``rush warmup`` so the numba cache is warm, then breaks the replay's
process time into imports, trace reading, simulation and metrics (one in-process run).

Run: ``RUSH_TRACE_MIRROR=../shared/traces python benchmarks/bench_startup.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIRROR = Path(os.environ.get("RUSH_TRACE_MIRROR", HERE.parent.parent / "shared" / "traces"))
SDSC = "SDSC-SP2-1998-4.2-cln.swf.gz"
TARGETS = {"rush --help": 0.3, "rush simulate SDSC-SP2 --policy FCFS": 0.6}

BREAKDOWN = r"""
import sys, time
t0 = time.perf_counter()
import rush.cli.main
t1 = time.perf_counter()
from rush.jit_cache import skip_numba_blas_probe
from rush.core.config import CoreConfig
from rush.simulator.engine import simulate
from rush.simulator.metrics import compute_metrics
from rush.workload.model import workload_from_trace
from rush.workload.swf import read_swf
skip_numba_blas_probe()
t2 = time.perf_counter()
trace = read_swf(sys.argv[1])
t3 = time.perf_counter()
workload = workload_from_trace(trace)
result = simulate(workload, CoreConfig.from_names("FCFS", "easy"))
t4 = time.perf_counter()
compute_metrics(result)
t5 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)
"""


def rush_command() -> list[str]:
    script = Path(sys.executable).with_name("rush")
    return [str(script)] if script.exists() else [sys.executable, "-m", "rush"]


def run(command: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    env = {**os.environ, "RUSH_TRACE_MIRROR": str(MIRROR)}
    rush = rush_command()
    have_trace = (MIRROR / SDSC).is_file()
    cases: dict[str, list[str]] = {
        "python -c pass": [sys.executable, "-c", "pass"],
        'python -c "import numpy"': [sys.executable, "-c", "import numpy"],
        "rush --help": [*rush, "--help"],
        "rush --version": [*rush, "--version"],
    }
    if have_trace:
        cases["rush simulate SDSC-SP2 --policy FCFS"] = [
            *rush,
            "simulate",
            "SDSC-SP2",
            "--policy",
            "FCFS",
            "--json",
        ]
    else:
        print(f"no {SDSC} in {MIRROR}: replay case skipped (set RUSH_TRACE_MIRROR)")
    cases["rush simulate lublin:2000:64 (synthetic)"] = [*rush, "simulate", "lublin:2000:64", "--json"]

    subprocess.run([*rush, "warmup"], check=True, stdout=subprocess.DEVNULL, env=env)
    for command in cases.values():  # one untimed run each: file-system caches
        run(command, env)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, command in cases.items():
            times[name].append(run(command, env))

    base = statistics.median(times["python -c pass"])
    numpy_base = statistics.median(times['python -c "import numpy"'])
    print(f"whole-process wall time, median of {args.repeat} (cores: {os.cpu_count()}, load: {_load()})")
    print(f"{'command':44s} {'median':>8s} {'min':>8s} {'- pass':>8s} {'- numpy':>8s} {'target':>7s}")
    for name, values in times.items():
        median = statistics.median(values)
        target = TARGETS.get(name)
        print(
            f"{name:44s} {median:8.3f} {min(values):8.3f} {median - base:8.3f} {median - numpy_base:8.3f} "
            f"{'' if target is None else f'{target:7.1f}'}"
        )
    if have_trace:
        out = subprocess.run(
            [sys.executable, "-c", BREAKDOWN, str(MIRROR / SDSC)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        parts = [float(x) for x in out.stdout.split()]
        names = (
            "import rush.cli.main",
            "import numba + kernels",
            "read SWF (loads cache)",
            "simulate",
            "metrics",
        )
        print(
            "in-process breakdown of the SDSC-SP2 replay [s]: "
            + ", ".join(f"{n} {v:.3f}" for n, v in zip(names, parts, strict=True))
        )
    if shutil.which("hyperfine") is None:
        print("(hyperfine not installed: repeated subprocess runs used)")


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
