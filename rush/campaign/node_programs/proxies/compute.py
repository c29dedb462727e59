#!/usr/bin/env python3
"""Compute proxy (compute): dense matrix products and a stencil sweep on each rank, no messages
inside the loop (one reduction of a checksum at the end).

Each rank multiplies ``N x N`` float64 matrices (BLAS; run with ``OMP_NUM_THREADS=1`` so one
rank uses one core) and relaxes a local grid, ``--scale`` times the default count. Prints one
``rush-proxy/1`` JSON line (see _common.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from _common import main_guard, parse_args, run

N = 384
PRODUCTS = 100
SWEEPS = 100


def body(comm: Any, args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    from mpi4py import MPI

    rng = np.random.default_rng(args.seed + comm.Get_rank())
    a = rng.random((N, N)) / N
    b = rng.random((N, N))
    grid = rng.random((512, 512))
    products = max(1, int(PRODUCTS * args.scale))
    sweeps = max(1, int(SWEEPS * args.scale))
    for _ in range(products):
        b = a @ b
    for _ in range(sweeps):
        grid[1:-1, 1:-1] = 0.25 * (grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
    check = comm.allreduce(float(b.sum() + grid.sum()), op=MPI.SUM)
    return {"products": products, "sweeps": sweeps, "n": N, "check": check}


def main(argv: list[str] | None = None) -> int:
    return run("compute", "compute", body, parse_args(__doc__.split("\n\n")[0], argv))


if __name__ == "__main__":
    main_guard(main)
