#!/usr/bin/env python3
"""Conjugate-gradient proxy (network, Allreduce-heavy): CG on a distributed 1-D Poisson matrix.

The tridiagonal system ``A x = b`` (2 on the diagonal, -1 off it) is split by rows; every
iteration exchanges one boundary value with each neighbour and does two ``Allreduce`` dot
products, plus one ``Allreduce`` of a ``--vector-bytes`` block per iteration (a stand-in for the
global reductions of a multigrid or block solver), so collectives dominate. Prints one
``rush-proxy/1`` JSON line (see _common.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from _common import main_guard, parse_args, run

N_LOCAL = 20_000
ITERATIONS = 800
BLOCK = 131_072  # doubles in the extra block Allreduce: 1 MiB


def body(comm: Any, args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    iterations = max(1, int(ITERATIONS * args.scale))
    left = rank - 1 if rank > 0 else MPI.PROC_NULL
    right = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    ghost = np.zeros(2)

    def matvec(v: Any) -> Any:
        # Neighbours' boundary values, then the local tridiagonal product.
        comm.Sendrecv(v[:1], dest=left, recvbuf=ghost[1:], source=right)
        comm.Sendrecv(v[-1:], dest=right, recvbuf=ghost[:1], source=left)
        out = 2.0 * v
        out[1:] -= v[:-1]
        out[:-1] -= v[1:]
        out[0] -= ghost[0] if left != MPI.PROC_NULL else 0.0
        out[-1] -= ghost[1] if right != MPI.PROC_NULL else 0.0
        return out

    def dot(a: Any, b: Any) -> float:
        return comm.allreduce(float(a @ b), op=MPI.SUM)

    rng = np.random.default_rng(args.seed + rank)
    b = rng.random(N_LOCAL)
    x = np.zeros(N_LOCAL)
    r = b - matvec(x)
    p = r.copy()
    rr = dot(r, r)
    block, block_sum = rng.random(BLOCK), np.empty(BLOCK)
    for _ in range(iterations):
        ap = matvec(p)
        alpha = rr / dot(p, ap)
        x += alpha * p
        r -= alpha * ap
        rr_new = dot(r, r)
        p = r + (rr_new / rr) * p
        rr = rr_new
        comm.Allreduce(block, block_sum, op=MPI.SUM)
    return {"iterations": iterations, "residual": float(np.sqrt(rr)), "block_bytes": BLOCK * 8}


def main(argv: list[str] | None = None) -> int:
    return run("cg", "network", body, parse_args(__doc__.split("\n\n")[0], argv))


if __name__ == "__main__":
    main_guard(main)
