"""Slurm's backfill against rush's simulator on busy replayed windows (issue 20 §5, issue 30 §6).

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

The second cluster is a stock one (issue 30 §6): Slurm 25.11 with ``STOCK_NODES`` nodes of 10
CPUs and Slurm's default backfill parameters (a reservation for every tested job, whole nodes,
``bf_resolution=60``). There the simulator's EASY misses by several seconds per job; the
replay's Slurm mode (rush/core/slurm_backfill.py, read from this Slurm's own settings) is held
to issue 30's targets.
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


STOCK_NODES = 10
STOCK = NodeLayout(
    nodes=tuple(f"s{i}" for i in range(1, STOCK_NODES + 1)),
    cpus=10,
    memory_mb=256,
    partitions=(("replay", f"s[1-{STOCK_NODES}]", True),),
    gpu_nodes=(),
    drained=(),
    switches=(("s1", f"s[1-{STOCK_NODES}]"),),
)
# A busy KTH-SP2 window on 100 CPUs (recorded in sim/slurm_mode/results/stock-1200.json).
STOCK_WINDOW = Window(1200, 150)


class ReplayCluster(SlurmCluster):
    """The test Slurm with ``extra`` SchedulerParameters (EASY's, or none: Slurm's defaults)."""

    extra = EASY

    def _write_config(self) -> None:
        super()._write_config()
        text = self.conf.read_text()
        assert "SchedulerParameters=" in text
        if self.extra:
            self.conf.write_text(
                text.replace("SchedulerParameters=", f"SchedulerParameters={self.extra},", 1)
            )


def start_replay_cluster(workdir, layout: NodeLayout, extra: str) -> ReplayCluster:
    reason = VENDORED.available()
    if reason:
        pytest.skip(reason)
    # Two tries: each slurmd binds a port chosen free just before, which another process may
    # take in between (seen once in six starts of 64 nodes).
    for attempt in (1, 2):
        cluster = ReplayCluster(workdir / str(attempt), install=VENDORED, layout=layout)
        cluster.extra = extra
        try:
            return cluster.start()
        except Exception as exc:  # stop what did start; the message carries the daemons' logs
            cluster.stop()
            if attempt == 2:
                pytest.fail(f"could not start the replay Slurm: {exc}")
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def replay_slurm(tmp_path_factory: pytest.TempPathFactory):
    cluster = start_replay_cluster(tmp_path_factory.mktemp("slurm-replay"), LAYOUT, EASY)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def stock_slurm(tmp_path_factory: pytest.TempPathFactory):
    cluster = start_replay_cluster(tmp_path_factory.mktemp("slurm-stock"), STOCK, "")
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


def test_the_slurm_mode_predicts_a_stock_slurm(stock_slurm, tmp_path):
    backend = get_backend("slurm", **stock_slurm.options())
    warnings: list[str] = []
    report = replay(
        backend,
        real_workload("KTH-SP2"),
        STOCK_WINDOW,
        speedup=SPEEDUP,
        config=CoreConfig.from_names("FCFS", "easy"),
        options=ReplayOptions(timeout=900, say=warnings.append),
    )
    (tmp_path / "fidelity.json").write_text(json.dumps(report, indent=1))
    assert report["jobs"] == 150 and report["unfinished"] == 0
    # The replay says why EASY will differ (whole nodes, every job reserves, bf_resolution).
    assert len(report["scheduler_differences"]["settings"]) == 3, warnings
    mode = report["slurm_mode"]
    assert mode["scheduler"]["bf_job_part_count_reserve"] == 0 and mode["scheduler"]["bf_resolution"] == 60
    diff, order = mode["start_difference"], mode["start_order"]
    print(json.dumps({"easy": report["start_difference"], "slurm_mode": diff, "order": order}, indent=1))
    # Issue 30's targets; measured 0.7 s, 98 %, 0 of 11 175 (EASY: 5.5 s, 76 %, 249) in the
    # recorded run, with room for this shared host.
    assert diff["mean_abs"] <= 3.0, diff
    assert diff["within_5s"] >= 0.90, diff
    assert order["inversions"] <= 0.01 * order["pairs"], order
    assert diff["mean_abs"] < report["start_difference"]["mean_abs"]
