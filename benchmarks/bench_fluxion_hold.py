"""RUSH on Fluxion: what a held job's invisibility to Fluxion's reservation changes, live.

Issue 30 item 1. rush holds a flagged job beside Fluxion with urgency 0 (a held job never
reaches Fluxion's queue, so it has no reservation); the paper's in-qmanager RUSH skips it
inside Fluxion, where it keeps its place. The two differ once the held job stops fitting (a
job started on its nodes while it was skipped): in qmanager it is the reserved head at the
next loop; beside Fluxion it stays held until rush's next cycle releases it (up to
``daemon.cycle_interval``), and a job that arrives in that window can be backfilled on the
nodes its reservation would have kept.

One Fluxion instance per case (``queue-policy=easy``, ``lonodex``; 8 fake nodes of 4 cores,
simulated execution: run times are exact, limits are what Fluxion plans with):

* H (8 nodes, runs 5 s, limit 30 s) is flagged and held at submission (urgency 0);
* S (4 nodes, runs 20 s, limit 40 s) starts on half the machine: H no longer fits;
* ``kept``: H is released at once (the core-level skip: it keeps its place as soon as it
  cannot start), then B (4 nodes, runs 40 s, limit 60 s) arrives;
* ``held``: B arrives while H is held; H is released one cycle (``--cycle`` seconds) later.

Printed per case: when H, S and B started (seconds after S started) and whether B overtook H.
Run: ``python benchmarks/bench_fluxion_hold.py [--cycle 5]`` (about a minute per case).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import bench_args

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.flux import fluxion  # noqa: E402
from tests.flux.instance import FluxInstance  # noqa: E402

EXEC = "--setattr=system.exec.test.run_duration={}"
FAKE_NODES = "[fake-resources]\nnnodes = 8\ncores-per-node = 4\n"


def job(flux: FluxInstance, nodes: int, run: str, limit: str, *extra: str) -> int:
    return flux.submit(f"-N{nodes}", "-t", limit, EXEC.format(run), *extra, "true")


def started(flux: FluxInstance, job_id: int, timeout: float = 120.0) -> None:
    flux.run("job", "wait-event", "-t", str(timeout), str(job_id), "start", timeout=timeout + 5)


def one_case(workdir: Path, case: str, cycle: float) -> dict[str, float]:
    with FluxInstance(workdir, size=1, config=FAKE_NODES) as flux:
        fluxion.use_fluxion(flux, "easy", "lonodex")
        h = job(flux, 8, "5s", "30s", "--urgency=0")  # flagged: held by rush
        s = job(flux, 4, "20s", "40s")
        started(flux, s)
        if case == "kept":
            flux.run("job", "urgency", str(h), "16")
            b = job(flux, 4, "40s", "60s")
        else:
            b = job(flux, 4, "40s", "60s")
            time.sleep(cycle)  # rush's next cycle: H cannot start now, so it is released
            flux.run("job", "urgency", str(h), "16")
        for j in (h, s, b):
            flux.wait_job(j, timeout=180)
        runs = {int(j["id"]): j["t_run"] for j in flux.jobs()}
        return {"H": runs[h] - runs[s], "S": 0.0, "B": runs[b] - runs[s]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cycle", type=bench_args.positive_number, default=5.0, help="rush's cycle_interval in the held case"
    )
    args = parser.parse_args()
    why = fluxion.unavailable()
    if why:
        sys.exit(f"no Fluxion here: {why}")
    print(f"{'case':6} {'H starts':>9} {'B starts':>9}  B overtook H   (seconds after S started)")
    with tempfile.TemporaryDirectory() as tmp:
        for case in ("kept", "held"):
            t = one_case(Path(tmp) / case, case, args.cycle)
            print(f"{case:6} {t['H']:9.1f} {t['B']:9.1f}  {'yes' if t['B'] < t['H'] else 'no'}", flush=True)


if __name__ == "__main__":
    main()
