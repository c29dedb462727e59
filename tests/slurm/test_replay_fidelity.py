"""Slurm's backfill against rush's simulator on a busy replayed window (issue 20 §5).

A cluster of its own: Slurm 25.11 (several ``slurmd`` on this host) with ``REPLAY_NODES``
one-CPU nodes and Slurm's backfill set to EASY (``bf_job_part_count_reserve=1``,
``bf_resolution=1``), the replay set-up of docs/admin-slurm.md ("Replay"). On the test
cluster's usual single node and Slurm's defaults, busy KTH windows differed by a mean
|Δwait| of 18-33 s and a makespan 2x the simulator's (Slurm reserves whole nodes for its
planned job, so nothing backfilled beside it, and reserves for every job it tests); set up
for EASY it is bounded as below. The bounds are what Slurm's whole-second scheduling leaves
(each start up to about 1 s late, sub-second jobs on the same cores adding about 1 s each,
and EASY's sensitivity to that timing), measured over repeated runs; the figures are in
docs/admin-slurm.md.
"""

from __future__ import annotations

import json

import pytest

from rush.core.config import CoreConfig
from rush.rjms.base import get_backend
from rush.studies.replay import ReplayOptions, replay
from rush.studies.replay_window import Window
from tests.core.real_traces import real_workload
from tests.slurm.cluster import VENDORED, NodeLayout, SlurmCluster

pytestmark = pytest.mark.slurm

REPLAY_NODES = 32
LAYOUT = NodeLayout(
    nodes=tuple(f"r{i}" for i in range(1, REPLAY_NODES + 1)),
    cpus=1,
    memory_mb=256,
    partitions=(("replay", f"r[1-{REPLAY_NODES}]", True),),
    gpu_nodes=(),
    drained=(),
    switches=(("s1", f"r[1-{REPLAY_NODES}]"),),
)
# Slurm's backfill as EASY: one reservation (the first waiting job's), plans to the second.
EASY = "bf_job_part_count_reserve=1,bf_resolution=1"
# A busy KTH-SP2 window on 32 CPUs: 35 of its 50 jobs wait in the simulator, 22 backfill.
WINDOW, SPEEDUP = Window(2800, 50), 1000.0


class ReplayCluster(SlurmCluster):
    """The test Slurm with its backfill set to EASY (the replay's SchedulerParameters)."""

    def _write_config(self) -> None:
        super()._write_config()
        text = self.conf.read_text()
        assert "SchedulerParameters=" in text
        self.conf.write_text(text.replace("SchedulerParameters=", f"SchedulerParameters={EASY},", 1))


@pytest.fixture(scope="module")
def replay_slurm(tmp_path_factory: pytest.TempPathFactory):
    reason = VENDORED.available()
    if reason:
        pytest.skip(reason)
    # Two tries: each of the 32 slurmd binds a port chosen free just before, which another
    # process may take in between (seen once in six starts of 64 nodes).
    for attempt in (1, 2):
        cluster = ReplayCluster(tmp_path_factory.mktemp("slurm-replay"), install=VENDORED, layout=LAYOUT)
        try:
            cluster.start()
            break
        except Exception as exc:  # stop what did start; the message carries the daemons' logs
            cluster.stop()
            if attempt == 2:
                pytest.fail(f"could not start the replay Slurm: {exc}")
    yield cluster
    cluster.stop()


def test_slurm_backfill_follows_easy_on_a_busy_window(replay_slurm, tmp_path):
    backend = get_backend("slurm", **replay_slurm.options())
    warnings: list[str] = []
    report = replay(
        backend,
        real_workload("KTH-SP2"),
        WINDOW,
        speedup=SPEEDUP,
        config=CoreConfig.from_names("FCFS", "easy"),
        options=ReplayOptions(timeout=600, say=warnings.append),
    )
    (tmp_path / "fidelity.json").write_text(json.dumps(report, indent=1))
    summary = {k: report[k] for k in ("start_difference", "start_order", "metrics", "scheduler_differences")}
    print(json.dumps(summary, indent=1))
    # The cluster is set up as the replay needs: nothing to warn about, one-core nodes.
    assert warnings == [] and report["scheduler_differences"]["settings"] == []
    assert report["scheduler_differences"]["cores_per_node"] == [1]
    assert report["window"]["cpus"] == REPLAY_NODES
    assert report["jobs"] == 50 and report["unfinished"] == 0
    # The window queues: it tests backfilling, not only starts at submit.
    waits = [row["sim_wait"] for row in report["per_job"]]
    assert sum(w > 1.0 for w in waits) >= 20
    # Measured (four runs): mean |Δwait| 6.1-7.1 s, 5 inversions of 1 225 pairs, τ 0.93-0.95,
    # makespan 1.19-1.33x: what Slurm's whole-second ticks leave (64 % of these jobs run under a
    # second and each holds its cores about 1 s). The bounds leave room for this shared 2-core
    # host. The same window on one node of 32 CPUs with Slurm's defaults measured 18.2 s,
    # 232 inversions, τ 0.41, 2.11x: every bound fails.
    diff, order = report["start_difference"], report["start_order"]
    makespan = report["metrics"]["makespan"]
    assert diff["mean_abs"] <= 10.0, diff
    assert order["kendall_tau"] >= 0.85, order
    assert order["inversions"] <= 0.02 * order["pairs"], order
    assert makespan["slurm"] <= 1.5 * makespan["simulator"], makespan
    assert "whole_second_runtimes" in report
