"""One live replay on a throw-away multi-node Slurm 25.11: the report the Slurm mode is held to.

    RUSH_TRACE_MIRROR=../shared/traces nice python sim/slurm_mode/run_live.py NAME START:N SPEEDUP \
        [NODES CPUS [SCHEDULER_PARAMETERS]]

Starts Slurm 25.11 (tests/slurm/cluster.py: one slurmd per node on this host, the tests'
slurm.conf: ``bf_interval=1,sched_interval=2,sched_min_interval=100000``, every priority
weight 0, the backfill parameters otherwise Slurm's defaults) with NODES nodes of CPUS CPUs
(default 10 x 10), adds SCHEDULER_PARAMETERS (e.g. ``bf_job_part_count_reserve=1,bf_resolution=1``)
if given, replays the KTH-SP2 window with ``rush replay``'s code (FCFS, no rush daemon) and
writes results/NAME.json (the fidelity report, its per-job rows and the replay's clock) and
results/NAME.slurm.conf (the cluster's slurm.conf, for ``rush simulate --slurm-conf``).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from rush.core.config import CoreConfig  # noqa: E402
from rush.rjms.base import get_backend  # noqa: E402
from rush.studies.replay import ReplayOptions, replay  # noqa: E402
from rush.studies.replay_window import Window  # noqa: E402
from rush.studies.script_args import run_main  # noqa: E402
from rush.workload.catalogue import load_trace  # noqa: E402
from rush.workload.model import workload_from_trace  # noqa: E402
from tests.slurm.cluster import VENDORED, NodeLayout, SlurmCluster  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def layout(nodes: int, cpus: int) -> NodeLayout:
    return NodeLayout(
        nodes=tuple(f"r{i}" for i in range(1, nodes + 1)),
        cpus=cpus,
        memory_mb=256,
        partitions=(("replay", f"r[1-{nodes}]", True),),
        gpu_nodes=(),
        drained=(),
        switches=(("s1", f"r[1-{nodes}]"),),
    )


class ReplayCluster(SlurmCluster):
    extra = ""

    def _write_config(self) -> None:
        super()._write_config()
        if self.extra:
            text = self.conf.read_text()
            self.conf.write_text(
                text.replace("SchedulerParameters=", f"SchedulerParameters={self.extra},", 1)
            )


def main(
    name: str, window: str, speedup: float, nodes: int = 10, cpus: int = 10, scheduler_parameters: str = ""
) -> None:
    reason = VENDORED.available()
    if reason:
        sys.exit(reason)
    RESULTS.mkdir(exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="rush-slurm-mode-"))
    cluster = ReplayCluster(workdir, install=VENDORED, layout=layout(nodes, cpus))
    cluster.extra = scheduler_parameters
    try:
        cluster.start()
        shutil.copyfile(cluster.conf, RESULTS / f"{name}.slurm.conf")
        backend = get_backend("slurm", **cluster.options())
        report = replay(
            backend,
            workload_from_trace(load_trace("KTH-SP2")),
            Window.parse(window),
            speedup,
            CoreConfig.from_names("FCFS", "easy"),
            ReplayOptions(timeout=1800, say=lambda text: print(text, file=sys.stderr)),
        )
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    report["cluster"] = {"nodes": nodes, "cpus_per_node": cpus, "scheduler_parameters": cluster.extra}
    (RESULTS / f"{name}.json").write_text(json.dumps(report, indent=1))
    diff, order = report["start_difference"], report["start_order"]
    print(
        f"{name}: EASY mean |dwait| {diff['mean_abs']:.1f} s, {diff['within_5s'] * 100:.0f}% within 5 s, "
        f"{order['inversions']} of {order['pairs']} pairs inverted"
    )


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
