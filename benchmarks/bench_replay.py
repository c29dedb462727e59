"""Full-trace replay benchmark: wall time and peak memory, parsing included.

Each case runs in a fresh process. Printed per case:

* ``parse+sim``: reading the gzip SWF and simulating, measured inside the process after
  imports (the figure the targets refer to);
* ``first call``: the same for the first simulation in a process, which also loads the
  compiled kernels from numba's on-disk cache (paid once per process);
* ``process``: the whole command, interpreter start and imports included;
* ``peak RSS``: the process's maximum resident set size.

Run: ``RUSH_TRACE_MIRROR=../shared/traces python benchmarks/bench_replay.py``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CASES = [
    ("SDSC-SP2-1998-4.2-cln.swf.gz", "FCFS", "easy", 0.5),
    ("SDSC-SP2-1998-4.2-cln.swf.gz", "SAF", "easy", 0.5),
    ("HPC2N-2002-2.2-cln.swf.gz", "FCFS", "easy", 1.5),
    ("CEA-Curie-2011-2.1-cln.swf.gz", "FCFS", "easy", 3.0),
    ("SDSC-SP2-1998-4.2-cln.swf.gz", "FCFS", "conservative", 5.0),
]

CHILD = r"""
import json, resource, sys, time
from rush.core.config import CoreConfig
from rush.simulator.engine import simulate
from rush.workload.model import workload_from_trace
from rush.workload.swf import read_swf
path, policy, backfill = sys.argv[1:4]
config = CoreConfig.from_names(policy, backfill, 200000)
t0 = time.perf_counter()
w = workload_from_trace(read_swf(path))
t1 = time.perf_counter()
simulate(w, config)
first = time.perf_counter() - t0
t2 = time.perf_counter()
w = workload_from_trace(read_swf(path))
t3 = time.perf_counter()
r = simulate(w, config)
t4 = time.perf_counter()
print(json.dumps({"jobs": len(w), "parse": t3 - t2, "sim": t4 - t3, "first": first,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> int:
    mirror = Path(
        os.environ.get("RUSH_TRACE_MIRROR", Path(__file__).resolve().parents[2] / "shared" / "traces")
    )
    print(
        f"{'trace':32} {'policy':6} {'backfill':12} {'jobs':>7} {'parse':>7} {'sim':>7} "
        f"{'parse+sim':>9} {'target':>6} {'first call':>10} {'process':>8} {'peak RSS':>9}"
    )
    failed = 0
    for name, policy, backfill, target in CASES:
        path = mirror / name
        if not path.exists():
            print(f"{name}: missing (set RUSH_TRACE_MIRROR)")
            failed += 1
            continue
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), policy, backfill],
            capture_output=True,
            text=True,
            check=True,
        )
        process = time.perf_counter() - t0
        m = json.loads(out.stdout.strip().splitlines()[-1])
        total = m["parse"] + m["sim"]
        ok = "ok" if total <= target else "MISSED"
        failed += total > target
        print(
            f"{name:32} {policy:6} {backfill:12} {m['jobs']:7d} {m['parse']:7.3f} {m['sim']:7.3f} "
            f"{total:9.3f} {target:5.1f}s {m['first']:10.3f} {process:8.2f} {m['rss_mb']:7.0f}MB {ok}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    # No options: a flag given is refused (exit 2), not ignored.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    sys.exit(main())
