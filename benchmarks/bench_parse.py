"""SWF parse time and peak memory on real traces (targets: SDSC-SP2 well under 0.15 s,
CEA-Curie under ~1 s, as parse + simulate must fit 0.5 s and 3 s).

    RUSH_TRACE_MIRROR=/work/shared/traces python benchmarks/bench_parse.py [--repeat 5]

Prints, per trace: jobs, best and median wall time of ``read_swf`` over the repeats (after
one warm-up that also loads the compiled tokenizer), peak traced memory (tracemalloc, which
sees numpy buffers) and the decompressed size, then the time to write the trace back.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import bench_args

from rush.workload.swf import read_swf, write_swf

TRACES = ("SDSC-SP2-1998-4.2-cln.swf.gz", "HPC2N-2002-2.2-cln.swf.gz", "CEA-Curie-2011-2.1-cln.swf.gz")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=bench_args.positive, default=5)
    parser.add_argument("--mirror", default=os.environ.get("RUSH_TRACE_MIRROR", "/work/shared/traces"))
    args = parser.parse_args()
    mirror = Path(args.mirror)
    print(
        f"{'trace':34} {'jobs':>8} {'best s':>8} {'median s':>9} {'peak MiB':>9} {'text MiB':>9} {'write s':>8}"
    )
    for name in TRACES:
        path = mirror / name
        if not path.exists():
            print(f"{name:34} missing in {mirror}")
            continue
        trace = read_swf(path)  # warm-up: page cache and the compiled parser
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            read_swf(path)
            times.append(time.perf_counter() - start)
        tracemalloc.start()
        read_swf(path)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        text_size = len(gzip.decompress(path.read_bytes()))
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            write_swf(trace, Path(tmp) / "out.swf")
            write_time = time.perf_counter() - start
        print(
            f"{name:34} {len(trace):>8} {min(times):>8.3f} {statistics.median(times):>9.3f} "
            f"{peak / 2**20:>9.1f} {text_size / 2**20:>9.1f} {write_time:>8.3f}"
        )


if __name__ == "__main__":
    main()
