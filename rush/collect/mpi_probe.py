#!/usr/bin/env python3
"""MPI network probe run on compute nodes (mpi4py): a token ring and an Allreduce.

    mpirun -np 4 python3 mpi_probe.py --ring-bytes 100MB --ring-iterations 10 \
        --allreduce-bytes 100MB --allreduce-iterations 5 [--output result.json]

* Ring: rank r sends a ``--ring-bytes`` token to r+1 and receives it from r-1 with blocking
  ``Send``/``Recv``; rank 0 starts each lap. Send time is the time inside ``Send`` (the transfer
  when the message is above the eager limit), Recv time the time inside ``Recv`` (it includes
  waiting for the token, i.e. the latency of the ring upstream).
* Allreduce: ``MPI.SUM`` over ``--allreduce-bytes`` of random float64, timed per call.

Each rank averages its times per iteration (seconds); rank 0 gathers them and prints one JSON
object (and writes it to ``--output`` if given) with ``send_min``/``send_max``/``send_mean``,
``recv_*`` and ``allreduce_*`` across ranks, plus metadata. The format is read by
``rush probe ingest`` (rush/collect/probe.py, next to this file); keep the two in step (``format`` field).

This file depends only on mpi4py and numpy so it can run on nodes without rush installed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
import time

FORMAT = "rush-mpi-probe/1"
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def parse_bytes(text: str) -> int:
    """'100MB' -> 100_000_000, '1MiB' -> 1_048_576, '4096' -> 4096, '1e6' -> 1_000_000."""
    match = re.fullmatch(r"\s*([0-9.eE+]+)\s*([A-Za-z]*)\s*", text)
    if not match or match.group(2).upper() not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 4096, 1MiB, 100MB)")
    value = float(match.group(1)) * _UNITS[match.group(2).upper()]
    if value < 8 or value != value:
        raise argparse.ArgumentTypeError(f"size must be at least 8 bytes: {text!r}")
    return int(value)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ring-bytes", type=parse_bytes, default=parse_bytes("100MB"))
    parser.add_argument("--ring-iterations", type=_positive, default=10)
    parser.add_argument("--allreduce-bytes", type=parse_bytes, default=parse_bytes("100MB"))
    parser.add_argument("--allreduce-iterations", type=_positive, default=5)
    parser.add_argument(
        "--output", default="", help="also write the JSON here (rank 0); '{job_id}' is replaced by the job id"
    )
    parser.add_argument("--seed", type=int, default=12345)
    return parser.parse_args(argv)


def ring(comm, nbytes: int, iterations: int) -> tuple[float, float]:  # noqa: ANN001 - mpi4py type
    """Per-iteration seconds in Send and in Recv for this rank."""
    import numpy as np

    rank, size = comm.Get_rank(), comm.Get_size()
    token = np.zeros(nbytes, dtype=np.uint8)
    right, left = (rank + 1) % size, (rank - 1) % size
    send_s = recv_s = 0.0
    comm.Barrier()
    for lap in range(iterations):
        if size == 1:  # a ring of one: nothing to measure, keep the output shape
            break
        buffer = [token, nbytes, _byte_type()]
        if rank == 0:  # starts the lap: send first, then wait for the token to come round
            token[:8] = np.frombuffer(np.int64(lap).tobytes(), dtype=np.uint8)
            t0 = time.perf_counter()
            comm.Send(buffer, dest=right, tag=lap)
            t1 = time.perf_counter()
            comm.Recv(buffer, source=left, tag=lap)
            send_s += t1 - t0
            recv_s += time.perf_counter() - t1
        else:
            t0 = time.perf_counter()
            comm.Recv(buffer, source=left, tag=lap)
            t1 = time.perf_counter()
            comm.Send(buffer, dest=right, tag=lap)
            recv_s += t1 - t0
            send_s += time.perf_counter() - t1
    return send_s / iterations, recv_s / iterations


def _byte_type():  # noqa: ANN202
    from mpi4py import MPI

    return MPI.BYTE


def allreduce(comm, nbytes: int, iterations: int, seed: int) -> float:  # noqa: ANN001
    """Per-iteration seconds in Allreduce for this rank."""
    import numpy as np
    from mpi4py import MPI

    count = max(1, nbytes // 8)
    data = np.random.default_rng(seed + comm.Get_rank()).random(count)
    result = np.empty_like(data)
    total = 0.0
    comm.Barrier()
    for _ in range(iterations):
        t0 = time.perf_counter()
        comm.Allreduce([data, MPI.DOUBLE], [result, MPI.DOUBLE], op=MPI.SUM)
        total += time.perf_counter() - t0
    return total / iterations


def _stats(values: list[float]) -> tuple[float, float, float]:
    return min(values), max(values), sum(values) / len(values)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    started = time.time()
    send_s, recv_s = ring(comm, args.ring_bytes, args.ring_iterations)
    allreduce_s = allreduce(comm, args.allreduce_bytes, args.allreduce_iterations, args.seed)
    rows = comm.gather((socket.gethostname(), send_s, recv_s, allreduce_s), root=0)
    if rank != 0:
        return 0
    hosts = [r[0] for r in rows]
    job_id = os.environ.get("SLURM_JOB_ID") or os.environ.get("FLUX_JOB_ID") or None
    result: dict[str, object] = {"format": FORMAT}
    for name, column in (("send", 1), ("recv", 2), ("allreduce", 3)):
        lo, hi, mean = _stats([r[column] for r in rows])
        result.update({f"{name}_min": lo, f"{name}_max": hi, f"{name}_mean": mean})
    result.update(
        {
            "unit": "seconds per iteration",
            "ranks": comm.Get_size(),
            "hosts": sorted(set(hosts)),
            "rank_hosts": hosts,
            "ring_bytes": args.ring_bytes,
            "ring_iterations": args.ring_iterations,
            "allreduce_bytes": args.allreduce_bytes,
            "allreduce_iterations": args.allreduce_iterations,
            "timestamp": started,
            "duration": time.time() - started,
            "job_id": job_id,
            "mpi": MPI.Get_library_version().splitlines()[0].strip("\x00 \n"),
        }
    )
    text = json.dumps(result, sort_keys=True)
    print(text, flush=True)
    if args.output:
        output = args.output.replace("{job_id}", job_id or "nojob")
        tmp = f"{output}.tmp"
        with open(tmp, "w") as handle:
            handle.write(text + "\n")
        os.replace(tmp, output)  # readers never see a half-written file
    return 0


if __name__ == "__main__":
    sys.exit(main())
