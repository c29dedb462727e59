#!/usr/bin/env python3
"""I/O proxy (io): each rank writes ``--chunks`` blocks to its own file with ``fsync`` after
each, reads the file back, and removes it.

Files go to ``--workdir`` (default: ``$TMPDIR`` or the current directory; on a cluster point it
at the parallel file system). The data are random bytes so no layer can compress them. Prints one
``rush-proxy/1`` JSON line (see _common.py).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from _common import main_guard, parse_args, run

CHUNK = 4 * 2**20  # 4 MiB
CHUNKS = 48


def body(comm: Any, args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    from mpi4py import MPI

    rank = comm.Get_rank()
    chunks = max(1, int(CHUNKS * args.scale))
    block = np.random.default_rng(args.seed + rank).integers(0, 256, CHUNK, dtype=np.uint8).tobytes()
    job = os.environ.get("SLURM_JOB_ID") or str(os.getpid())
    path = os.path.join(args.workdir, f".rush-io-proxy-{job}-{rank}")
    read = 0
    try:
        with open(path, "wb") as handle:
            for _ in range(chunks):
                handle.write(block)
                handle.flush()
                os.fsync(handle.fileno())
        with open(path, "rb") as handle:
            while data := handle.read(CHUNK):
                read += len(data)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    total = comm.allreduce(read, op=MPI.SUM)
    return {"chunks": chunks, "chunk_bytes": CHUNK, "bytes_read": total}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    if not os.path.isdir(args.workdir):
        print(f"error: --workdir {args.workdir!r} is not a directory", flush=True)
        return 2
    return run("io", "io", body, args)


if __name__ == "__main__":
    main_guard(main)
