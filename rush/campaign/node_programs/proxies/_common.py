"""Shared by the proxy applications: argument parsing and the one JSON line each prints.

The proxies depend only on mpi4py and numpy (like ../mpi_probe.py) so that they run on compute
nodes without rush installed. Each is started as ``mpirun -np N python3 <app>.py [--scale S]``;
rank 0 prints one JSON object (format ``rush-proxy/1``) whose ``runtime`` is the application's own
measured wall time of its main loop (after a barrier, so start-up is not counted).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

FORMAT = "rush-proxy/1"


def parse_args(
    description: str, argv: list[str] | None = None, extra: Callable | None = None
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--scale",
        type=_scale,
        default=1.0,
        help="work multiplier (1.0: a few seconds on 2 ranks of a laptop)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="", help="also write the JSON line here (rank 0)")
    parser.add_argument(
        "--workdir",
        default=os.environ.get("TMPDIR") or ".",
        help="scratch directory (the I/O proxy writes here)",
    )
    if extra is not None:
        extra(parser)
    return parser.parse_args(argv)


def _scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.001 <= value <= 1000:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"--scale must be between 0.001 and 1000, got {text}")
    return value


def run(
    app: str, wtype: str, body: Callable[[Any, argparse.Namespace], dict[str, Any]], args: argparse.Namespace
) -> int:
    """Time ``body(comm, args)`` between two barriers and print rank 0's JSON line."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    comm.Barrier()
    started = time.time()
    t0 = time.perf_counter()
    details = body(comm, args)
    comm.Barrier()
    runtime = time.perf_counter() - t0
    hosts = comm.gather(socket.gethostname(), root=0)
    if comm.Get_rank() != 0:
        return 0
    job_id = os.environ.get("SLURM_JOB_ID") or os.environ.get("FLUX_JOB_ID") or None
    result = {
        "format": FORMAT,
        "app": app,
        "wtype": wtype,
        "runtime": runtime,
        "start": started,
        "ranks": comm.Get_size(),
        "hosts": sorted(set(hosts)),
        "scale": args.scale,
        "seed": args.seed,
        "job_id": job_id,
        **details,
    }
    text = json.dumps(result, sort_keys=True)
    print(text, flush=True)
    if args.output:
        tmp = f"{args.output}.tmp"
        with open(tmp, "w") as handle:
            handle.write(text + "\n")
        os.replace(tmp, args.output)  # readers never see half a line
    return 0


def main_guard(main: Callable[[], int]) -> None:
    sys.exit(main())
