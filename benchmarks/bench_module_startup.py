"""Start-up of rush's Flux scheduler module and of the daemon, step by step, in fresh processes.

What ``flux module load`` of rush's module runs before its queue starts, outside a broker: the
broker's ``python3`` (the one ``flux-module-python-exec`` runs) with the broker's path
(``FLUX_PYTHONPATH_PREPEND``: the checkout, then this venv's site-packages, then Flux's
bindings), importing Flux's bindings and the module, reading a configuration, making the
planner (its journal and models), the kernels' warm-up (:func:`rush.core.warm_up.warm_live_pass`)
and the heap's freeze (:func:`rush.planner.collector.settle_collector`). The daemon's start
(``rush daemon``: ``Daemon(config)``, then the same warm-up and freeze) runs with this venv's
python. Each step's CPU time (user + system) and the whole process's CPU and wall time are
printed, medians of ``--repeat`` runs, next to two references measured in the same run and
interleaved with them: ``python -c pass`` and sched-backfill's imports (flux-core's Python
scheduler module: what its load runs before its queue starts). ``--base TREE`` adds the same
steps from another checkout of rush (e.g. main's), interleaved: a paired comparison in one
sitting. Every run of a tree must find its kernels in the cache (run ``rush warmup`` from it
first); a run that compiled is reported.

Run: ``python benchmarks/bench_module_startup.py [--repeat N] [--base /work/main]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import bench_args

ROOT = Path(__file__).resolve().parent.parent
FLUX_PYTHON = "/usr/bin/python3"  # the broker's (Debian's) python3, as in tests/flux/instance.py

# sched-backfill's imports (flux-core's lib/flux/modules/sched-backfill.py).
SCHED_BACKFILL = """
import heapq, time
from _flux._core import lib
from flux.job import JobID
from flux.resource import InfeasibleRequest, InsufficientResources
from flux.scheduler import Scheduler
"""

# One start-up, step by step; prints {"steps": [[name, cpu_s], ...], "compiled": bool}.
STEPS = r"""
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
steps, last = [], cpu()
def step(name):
    global last
    now = cpu(); steps.append([name, now - last]); last = now
shell, workdir = sys.argv[1], sys.argv[2]
if shell == "module":
    import flux.job, flux.resource, flux.scheduler
    step("import flux")
    import rush.flux_module.scheduler as module
    step("import the module")
    from rush.rjms.flux import FluxBackend
else:
    import rush.daemon.service as module
    step("import the daemon")
from rush.planner.config import load_config
config = load_config(f"{workdir}/rush.toml")
step("configuration")
if shell == "module":
    class Backend(FluxBackend):  # the module's backend without a broker (reads nothing here)
        capabilities = module.replace(FluxBackend.capabilities, starts_jobs=True)
        def __init__(self):
            pass
    planner = module.Planner(config, backend=Backend(), journal_sync="NORMAL")
else:
    planner = module.Daemon(config)
step("planner")
from numba.core import compiler
compiled = []
original = compiler.compile_extra
def counting(*args, **kwargs):
    compiled.append(1)
    return original(*args, **kwargs)
compiler.compile_extra = counting
from rush.core.warm_up import warm_live_pass
warm_live_pass(planner.core_config)
step("kernels' warm-up")
from rush.planner.collector import settle_collector
settle_collector()
step("heap freeze")
learning = [m for m in ("sklearn", "scipy.stats", "joblib") if m in sys.modules]
import rush
print(json.dumps({"steps": steps, "compiled": bool(compiled), "learning": learning, "rush": rush.__file__}))
"""

CONFIG = """[daemon]
cycle_interval = 60
journal = "{journal}"

[policy]
policy = "FCFS"
backfill = "easy"
wait_quantum = 0

[rjms]
backend = "{backend}"
"""


def child_cpu(argv: list[str], env: dict, cwd: Path) -> tuple[float, float, str]:
    """(wall s, CPU s, stdout) of one fresh process, its CPU from the kernel's accounting.
    It runs in ``cwd`` (not a checkout: ``python -c`` puts the working directory first on its path)."""
    began = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - began
    out, err = proc.stdout.read(), proc.stderr.read()
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{argv[:3]} failed: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, out


def flux_site_packages() -> str | None:
    flux = shutil.which("flux") or "/opt/flux-core/bin/flux"
    lib = Path(flux).resolve().parent.parent / "lib"
    found = sorted(lib.glob("python3*/site-packages"))
    return str(found[0]) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=bench_args.positive, default=7)
    parser.add_argument("--base", type=Path, help="another checkout of rush, measured interleaved")
    args = parser.parse_args()
    venv = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    flux_path = flux_site_packages()
    trees = [("branch", ROOT)] + ([("base", args.base.resolve())] if args.base else [])
    workdir = Path(tempfile.mkdtemp(prefix="rush-startup-"))
    env0 = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    commands: list[tuple[str, list[str], dict]] = [("python -c pass", [FLUX_PYTHON, "-c", "pass"], env0)]
    if flux_path:
        commands.append(
            (
                "sched-backfill's imports",
                [FLUX_PYTHON, "-c", SCHED_BACKFILL],
                {**env0, "PYTHONPATH": flux_path},
            )
        )
    for label, tree in trees:
        for shell in ("module", "daemon") if flux_path else ("daemon",):
            d = workdir / f"{label}-{shell}"
            d.mkdir()
            backend = "flux" if shell == "module" else "slurm"
            (d / "rush.toml").write_text(CONFIG.format(journal=d / "journal.sqlite", backend=backend))
            python = FLUX_PYTHON if shell == "module" else sys.executable
            path = os.pathsep.join(
                [str(tree), *venv, *([flux_path] if shell == "module" and flux_path else [])]
            )
            env = {**env0, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
            commands.append((f"{shell} ({label})", [python, "-c", STEPS, shell, str(d)], env))
    load = os.getloadavg()
    results: dict[str, list[dict]] = {name: [] for name, _, _ in commands}
    for _ in range(args.repeat):
        for name, argv, env in commands:
            wall, cpu, out = child_cpu(argv, env, workdir)
            row = {"wall": wall, "cpu": cpu}
            if out.strip():
                row.update(json.loads(out.strip().splitlines()[-1]))
            results[name].append(row)
    load_after = os.getloadavg()
    print(
        f"load average {load[0]:.1f} before, {load_after[0]:.1f} after; {args.repeat} runs each, interleaved"
    )
    print(f"{'command':34s} {'wall s':>8s} {'CPU s':>8s}  steps (CPU ms, medians)")
    for name, rows in results.items():
        wall = statistics.median(r["wall"] for r in rows)
        cpu = statistics.median(r["cpu"] for r in rows)
        steps = ""
        if rows[0].get("steps"):
            names = [s[0] for s in rows[0]["steps"]]
            medians = [statistics.median(r["steps"][i][1] for r in rows) for i in range(len(names))]
            steps = "; ".join(f"{n} {1000 * m:.0f}" for n, m in zip(names, medians, strict=True))
            compiled = sum(r["compiled"] for r in rows)
            learning = sorted({m for r in rows for m in r["learning"]})
            steps += f"; compiled in {compiled} of {len(rows)} runs; learning modules {learning or 'none'}"
            steps += f"; rush from {Path(rows[0]['rush']).parent.parent}"
        print(f"{name:34s} {wall:8.3f} {cpu:8.3f}  {steps}", flush=True)
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
