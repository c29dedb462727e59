#!/usr/bin/env python3
"""Halo exchange proxy (network): a 2-D Jacobi sweep on a 1-D domain decomposition.

Each rank owns ``rows x cols`` float64 cells and, every iteration, exchanges its first and last
rows with its neighbours (``Sendrecv``, non-periodic) and relaxes its interior. The halos are
wide (``cols`` doubles, 512 KiB) and the stencil cheap, so the run time follows the
message passing. Prints one ``rush-proxy/1`` JSON line (see _common.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from _common import main_guard, parse_args, run

COLS = 65_536  # 512 KiB halo rows
ROWS = 4
ITERATIONS = 600


def body(comm: Any, args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    iterations = max(1, int(ITERATIONS * args.scale))
    grid = np.random.default_rng(args.seed + rank).random((ROWS + 2, COLS))
    up = rank - 1 if rank > 0 else MPI.PROC_NULL
    down = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    for _ in range(iterations):
        comm.Sendrecv(grid[1], dest=up, recvbuf=grid[ROWS + 1], source=down)
        comm.Sendrecv(grid[ROWS], dest=down, recvbuf=grid[0], source=up)
        grid[1:-1, 1:-1] = 0.25 * (grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
    residual = comm.allreduce(float(np.abs(grid[1:-1]).sum()), op=MPI.SUM)
    return {"iterations": iterations, "halo_bytes": COLS * 8, "check": residual}


def main(argv: list[str] | None = None) -> int:
    return run("halo", "network", body, parse_args(__doc__.split("\n\n")[0], argv))


if __name__ == "__main__":
    main_guard(main)
